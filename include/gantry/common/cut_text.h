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
// to `limit`, not cut inside a UTF-8 character, then "...". Cleaned, as
// CleanText cleans it.
std::string CutText(std::string_view text, std::size_t limit);

// `text` (valid UTF-8: parsed JSON's) with no control character: a line
// break or tab becomes a space, any other C0 or C1 control character and DEL
// a '?'. A cluster's words go into log lines, events and terminals: an
// escape sequence or a line break there could forge a log line or drive
// the operator's terminal.
std::string CleanText(std::string_view text);

}  // namespace gantry
