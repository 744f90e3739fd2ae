// ASCII case folding, for what is compared without regard to case: header
// names, media types, token prefixes, Kubernetes annotation keys; and the
// control characters that must not reach a request line or a header.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace gantry {

// s with A-Z as a-z; every other byte as it is.
std::string ToLowerAscii(std::string_view s);

// An ASCII control character: below 0x20 (line breaks, NUL), or DEL.
inline bool IsAsciiControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }
// Whether s holds a space or an ASCII control character: what a request
// target, a URL or a bearer token may not (a line break there would start
// a header, or a request, of its own).
inline bool HasSpaceOrControl(std::string_view s) {
  for (char c : s) {
    if (c == ' ' || IsAsciiControl(c)) return true;
  }
  return false;
}

}  // namespace gantry
