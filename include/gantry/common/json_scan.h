// ScanJsonString: one string a few members deep in JSON text, found by
// walking the text's structure without building a tree. For the API's
// reads of one field of a stored job spec, which can be a megabyte: parsing
// it whole on the server's loop took milliseconds, while the field wanted
// (the template's kind) sits a few hundred bytes past the pod sets.
//
// The text must be as gantry stores it (nlohmann's dump() or json_text.h):
// no member repeated in an object. The walk reads only as far as the
// member it looks for, so it does not check the rest of the text.
//
// Pure function; thread-safe.
#pragma once

#include <initializer_list>
#include <string_view>

namespace gantry {

struct ScannedString {
  enum class Outcome {
    kFound,   // value holds the string
    // Not a string there: a member on the way is missing, or a value on the
    // way is not an object, or the last one is not a string (what
    // json.value(pointer, "") gives "" for).
    kAbsent,
    // The walk cannot tell without parsing: the text is not JSON as gantry
    // writes it, or a key or the string on the way has an escape in it.
    // Parse it then.
    kUnsure,
  };
  Outcome outcome = Outcome::kUnsure;
  std::string_view value;  // into the text; set when kFound
};

// The string at path (member names, outermost first; each without '"',
// '\\' or control characters) of the object in text.
ScannedString ScanJsonString(std::string_view text, std::initializer_list<std::string_view> path);

}  // namespace gantry
