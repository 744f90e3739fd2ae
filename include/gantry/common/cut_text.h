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
// break or tab (and U+2028, U+2029) becomes a space, any other C0 or C1
// control character, DEL and the bidirectional controls (U+061C, U+200E,
// U+200F, U+202A..U+202E, U+2066..U+2069) a '?'. A cluster's words go
// into log lines, events and terminals: an escape sequence or a line break
// there could forge a log line or drive the operator's terminal, and a
// right-to-left override could show a line's words in another order.
std::string CleanText(std::string_view text);

// Whether `text` holds what CleanText would change: input that gantry
// refuses where it names things (a region, a dataset) rather than clean.
bool HasControlText(std::string_view text);

// False when `text` certainly holds nothing CleanText changes (no byte that
// can begin a control character): a scan without a copy. True: maybe.
bool MayHoldControlText(std::string_view text);

}  // namespace gantry
