// Reading a value a few members deep in a parsed JSON object, where any step
// may be missing or of another type (objects from clusters and clients).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

namespace gantry {

// The value at path (member names, outermost first) under o, or nullptr when
// a step is missing or is not an object.
const nlohmann::json* JsonAt(const nlohmann::json& o, std::initializer_list<const char*> path);
// The string at path, or "" when it is missing or not a string.
std::string JsonStringAt(const nlohmann::json& o, std::initializer_list<const char*> path);
// The integer at path, or otherwise when it is missing or not an integer.
int64_t JsonIntAt(const nlohmann::json& o, std::initializer_list<const char*> path, int64_t otherwise);

}  // namespace gantry
