#include "yaml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

namespace gantry::inventory::internal {
namespace {

// yaml-cpp tags a plain (unquoted) scalar "?" and a quoted or block one "!".
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

std::string_view KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return IsPlainScalar(node) ? "a scalar" : "a quoted string";
    default:
      return "undefined";
  }
}

// Letters, digits, '_', '-' and '.', 1 to 63 of them: what a field's name
// in a cluster file or a kubeconfig is made of, with room for a misspelling.
bool LooksLikeFieldName(std::string_view key) {
  if (key.empty() || key.size() > 63) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  });
}

Status WrongType(const YAML::Node& node, const Field& field, std::string_view want) {
  return FieldError(field, fmt::format("must be {}, not {}", want, KindName(node)));
}

}  // namespace

Field Field::Child(std::string_view key, int child_line) const {
  return {path.empty() ? std::string(key) : fmt::format("{}.{}", path, key), child_line};
}

Field Field::Item(size_t index, int item_line) const {
  return {fmt::format("{}[{}]", path, index), item_line};
}

int LineOf(const YAML::Node& node) {
  if (!node.IsDefined()) return 1;  // a missing key: Mark() would throw
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 1 : mark.line + 1;
}

Status FieldError(const Field& field, std::string_view what) {
  if (field.path.empty()) return Status::Invalid(fmt::format("line {}: {}", field.line, what));
  return Status::Invalid(fmt::format("line {}: {}: {}", field.line, field.path, what));
}

Result<std::string> ReadString(const YAML::Node& node, const Field& field) {
  if (!node.IsScalar()) return WrongType(node, field, "a string");
  std::string value = node.Scalar();
  if (value.empty()) return FieldError(field, "must not be empty");
  return value;
}

Result<std::string> ReadOptionalString(const YAML::Node& map, const Field& parent,
                                       std::string_view key) {
  const YAML::Node n = map[std::string(key)];
  if (!n || n.IsNull() || (n.IsScalar() && n.Scalar().empty())) return std::string();
  return ReadString(n, parent.Child(key, LineOf(n)));
}

Result<bool> ReadBool(const YAML::Node& node, const Field& field) {
  if (IsPlainScalar(node)) {
    const std::string& s = node.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  if (IsPlainScalar(node)) return FieldError(field, "must be true or false");
  return WrongType(node, field, "true or false");
}

Result<int64_t> ReadInt(const YAML::Node& node, const Field& field, int64_t min, int64_t max) {
  if (!IsPlainScalar(node)) return WrongType(node, field, "an integer");
  const std::string& s = node.Scalar();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return FieldError(field, fmt::format("must be an integer, not '{}'", s));
  }
  if (value < min || value > max) {
    return FieldError(field, fmt::format("must be from {} to {}", min, max));
  }
  return value;
}

Result<double> ReadNumber(const YAML::Node& node, const Field& field, double min) {
  if (!IsPlainScalar(node)) return WrongType(node, field, "a number");
  const std::string& s = node.Scalar();
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) {
    return FieldError(field, fmt::format("must be a number, not '{}'", s));
  }
  if (value < min) return FieldError(field, fmt::format("must be at least {}", min));
  return value;
}

Result<std::vector<std::string>> ReadStringList(const YAML::Node& node, const Field& field) {
  std::vector<std::string> out;
  if (node.IsNull()) return out;
  if (!node.IsSequence()) return WrongType(node, field, "a list of strings");
  std::set<std::string> seen;
  size_t index = 0;
  for (const YAML::Node& item : node) {
    const Field item_field = field.Item(index++, LineOf(item));
    Result<std::string> value = ReadString(item, item_field);
    if (!value.ok()) return value.status();
    if (!seen.insert(*value).second) {
      return FieldError(item_field, fmt::format("duplicate entry '{}'", *value));
    }
    out.push_back(std::move(value).value());
  }
  return out;
}

Result<std::map<std::string, std::string>> ReadStringMap(const YAML::Node& node, const Field& field,
                                                         const EntryCheck& check, bool empty_values) {
  std::map<std::string, std::string> out;
  if (node.IsNull()) return out;
  if (!node.IsMap()) return WrongType(node, field, "a mapping of strings");
  for (const auto& kv : node) {
    const Field key_field{field.path, LineOf(kv.first)};
    Result<std::string> key = ReadString(kv.first, key_field);
    if (!key.ok()) return key.status();
    const Field value_field = field.Child(*key, LineOf(kv.first));
    // (A null value, `key:`, is the empty string, as Kubernetes reads it.)
    const bool empty = kv.second.IsNull() || (kv.second.IsScalar() && kv.second.Scalar().empty());
    Result<std::string> value =
        empty_values && empty ? Result<std::string>(std::string()) : ReadString(kv.second, value_field);
    if (!value.ok()) return value.status();
    if (check) {
      if (std::string what = check(*key, *value); !what.empty()) {
        return FieldError(value_field, what);
      }
    }
    if (!out.emplace(*key, *value).second) return FieldError(value_field, "duplicate key");
  }
  return out;
}

Status ReadFields(const YAML::Node& node, const Field& field, const FieldHandlers& handlers,
                  const std::vector<std::string_view>& required) {
  if (!node.IsMap()) return WrongType(node, field, "a mapping");
  std::set<std::string, std::less<>> seen;
  for (const auto& kv : node) {
    const int line = LineOf(kv.first);
    if (!kv.first.IsScalar()) return FieldError({field.path, line}, "keys must be strings");
    const std::string& key = kv.first.Scalar();
    auto it = handlers.find(key);
    if (it == handlers.end()) {
      // A key that could not be a field's name is not repeated: a file
      // that is not gantry's at all (a link to a secret's file, say) would
      // have its first line quoted in the log and the reload's answer.
      if (!LooksLikeFieldName(key)) {
        return FieldError({field.path, line}, fmt::format("unknown field (a key of {} characters that is not a "
                                                          "field's name, not repeated here)",
                                                          key.size()));
      }
      return FieldError(field.Child(key, line), "unknown field");
    }
    const Field child = field.Child(key, line);
    if (!seen.insert(key).second) return FieldError(child, "duplicate field");
    GANTRY_RETURN_IF_ERROR(it->second(kv.second, child));
  }
  for (std::string_view name : required) {
    if (!seen.contains(name)) {
      return FieldError(field.Child(name, field.line), "required field is missing");
    }
  }
  return Status::Ok();
}

}  // namespace gantry::inventory::internal
