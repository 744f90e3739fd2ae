// Text kept in a message or an event, cut to a bound: a cluster's own words
// (a webhook's answer, a ClusterQueue's condition message) may be long.
//
// Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gantry {

// `text` whole when it has at most `limit` bytes; else its first bytes up
// to `limit`, not cut inside a UTF-8 character, then "...".
std::string CutText(std::string_view text, std::size_t limit);

}  // namespace gantry
