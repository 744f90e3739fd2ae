// Strict, typed readers over yaml-cpp nodes for configuration files.
//
// Every error is a kInvalidArgument Status "line N: <field path>: <what>"; the
// caller prefixes the file name. Scalars are typed by their YAML form: a quoted
// "80" is a string, not a number, so `memoryGiB: "80"` is a wrong type.
// None of these throw; a yaml-cpp exception inside is turned into a Status.
//
// Thread-safety: stateless functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gantry/common/status.h"

namespace gantry::inventory::internal {

// Where a value sits: its dotted path ("accelerators[0].interconnect") and
// 1-based line (of the key for mapping entries, of the item for list items).
struct Field {
  std::string path;
  int line = 1;

  Field Child(std::string_view key, int child_line) const;  // "a.b"
  Field Item(size_t index, int item_line) const;            // "a[3]"
};

int LineOf(const YAML::Node& node);  // 1-based; 1 when yaml-cpp has no mark

Status FieldError(const Field& field, std::string_view what);

Result<std::string> ReadString(const YAML::Node& node, const Field& field);  // non-empty
// The string under `key` in the mapping `map` (at `parent`); "" when the key
// is absent, null or an empty string.
Result<std::string> ReadOptionalString(const YAML::Node& map, const Field& parent,
                                       std::string_view key);
Result<bool> ReadBool(const YAML::Node& node, const Field& field);           // true | false
Result<int64_t> ReadInt(const YAML::Node& node, const Field& field, int64_t min, int64_t max);
// A finite plain number (integer or decimal) >= min.
Result<double> ReadNumber(const YAML::Node& node, const Field& field, double min);
// A sequence of non-empty, distinct strings (a null value is an empty list).
Result<std::vector<std::string>> ReadStringList(const YAML::Node& node, const Field& field);
// A mapping of string to non-empty string (a null value is an empty map;
// with empty_values, a value may be the empty string "").
// `check`, when given, returns "" for a good entry or a sentence saying what is
// wrong, reported at "<field>.<key>".
using EntryCheck = std::function<std::string(const std::string& key, const std::string& value)>;
Result<std::map<std::string, std::string>> ReadStringMap(const YAML::Node& node, const Field& field,
                                                         const EntryCheck& check = nullptr,
                                                         bool empty_values = false);

// Calls handlers[key] for each entry of the mapping `node`. An unknown key, a
// duplicate key or a non-mapping `node` is an error; so is a key in
// `required` that is absent (reported at `field`'s line).
using FieldHandler = std::function<Status(const YAML::Node& value, const Field& field)>;
using FieldHandlers = std::map<std::string, FieldHandler, std::less<>>;
Status ReadFields(const YAML::Node& node, const Field& field, const FieldHandlers& handlers,
                  const std::vector<std::string_view>& required = {});

}  // namespace gantry::inventory::internal
