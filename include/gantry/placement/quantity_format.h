// Human renderings of quantities and name lists: placement's exclusion
// messages, and the capacity the API shows of each cluster.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gantry::placement {

// Kubernetes-style quantity from milli-units: "64", "500m", "512Gi" (memory and
// storage resources are shown in binary units when they divide evenly).
std::string FormatQuantity(std::string_view resource, int64_t milli);

// "[a, b, c]", at most a few names then "... (+N more)" so that a message about
// a long allowlist stays one readable line.
std::string FormatList(const std::vector<std::string>& names);

}  // namespace gantry::placement
