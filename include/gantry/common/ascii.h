// ASCII case folding, for what is compared without regard to case: header
// names, media types, token prefixes, Kubernetes annotation keys.
//
// Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace gantry {

// s with A-Z as a-z; every other byte as it is.
std::string ToLowerAscii(std::string_view s);

}  // namespace gantry
