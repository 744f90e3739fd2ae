// JSON text written straight from values: byte for byte what nlohmann's
// dump() writes (compact, UTF-8 passed through unescaped), without building
// or walking a second tree. Stored job specs are compared as text (an
// identical re-submission is recognised by its bytes), so the two must never
// differ: json_text_test checks them against each other.
//
// Strings must be valid UTF-8 (they come from a parsed document or from
// gantry itself); dump() would throw on invalid UTF-8, this passes it through.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gantry {

void AppendJsonString(std::string& out, std::string_view s);
// == out += value.dump()
void AppendJson(std::string& out, const nlohmann::json& value);
// == out += nlohmann::json(map).dump()
void AppendJsonObject(std::string& out, const std::map<std::string, std::string>& map);

}  // namespace gantry
