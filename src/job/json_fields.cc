#include "json_fields.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>

namespace gantry::job_internal {

// Paths are built on every read, so by hand: fmt::format costs more than the
// appends here.
std::string Child(std::string_view path, std::string_view name) {
  if (path.empty()) return std::string(name);
  std::string out;
  out.reserve(path.size() + 1 + name.size());
  out.append(path).append(1, '.').append(name);
  return out;
}

std::string Index(std::string_view path, std::size_t i) {
  char digits[std::numeric_limits<std::size_t>::digits10 + 1];
  auto end = std::to_chars(std::begin(digits), std::end(digits), i).ptr;
  return Key(path, std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

std::string Key(std::string_view path, std::string_view key) {
  std::string out;
  out.reserve(path.size() + 2 + key.size());
  out.append(path).append(1, '[').append(key).append(1, ']');
  return out;
}

std::string_view TypeName(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "object";
    default:
      return "binary";
  }
}

const json* Member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void CheckKnownFields(const json& obj, std::string_view path,
                      std::initializer_list<std::string_view> allowed, FieldErrors& errors) {
  if (!obj.is_object()) return;
  for (const auto& [key, value] : obj.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) errors.Add(Child(path, key), "unknown field");
  }
}

std::optional<std::string> ReadString(const json& obj, std::string_view key, std::string_view path,
                                      FieldErrors& errors) {
  const json* v = Member(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    errors.Add(Child(path, key), fmt::format("must be a string, got {}", TypeName(*v)));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<int64_t> ReadInt(const json& obj, std::string_view key, std::string_view path,
                               int64_t min, int64_t max, FieldErrors& errors) {
  const json* v = Member(obj, key);
  if (v == nullptr) return std::nullopt;
  int64_t n = 0;
  if (v->is_number_integer() && !v->is_number_unsigned()) {
    n = v->get<int64_t>();
  } else if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      errors.Add(Child(path, key), fmt::format("must be between {} and {}", min, max));
      return std::nullopt;
    }
    n = static_cast<int64_t>(u);
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
             v->get<double>() == std::floor(v->get<double>()) && std::fabs(v->get<double>()) >= 0x1p63) {
    // A whole number past 64 bits, which the parser keeps as a double:
    // out of range, not of another type.
    errors.Add(Child(path, key), fmt::format("must be between {} and {}", min, max));
    return std::nullopt;
  } else {
    errors.Add(Child(path, key), fmt::format("must be an integer, got {}", TypeName(*v)));
    return std::nullopt;
  }
  if (n < min || n > max) {
    errors.Add(Child(path, key), fmt::format("must be between {} and {}", min, max));
    return std::nullopt;
  }
  return n;
}

std::optional<double> ReadNumber(const json& obj, std::string_view key, std::string_view path,
                                 FieldErrors& errors) {
  const json* v = Member(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    errors.Add(Child(path, key), fmt::format("must be a number, got {}", TypeName(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

const json* ReadObject(const json& obj, std::string_view key, std::string_view path,
                       FieldErrors& errors) {
  const json* v = Member(obj, key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    errors.Add(Child(path, key), fmt::format("must be an object, got {}", TypeName(*v)));
    return nullptr;
  }
  return v;
}

const json* RequireObject(const json& obj, std::string_view key, std::string_view path,
                          FieldErrors& errors) {
  if (Member(obj, key) == nullptr) {
    errors.Add(Child(path, key), "Required value");
    return nullptr;
  }
  return ReadObject(obj, key, path, errors);
}

const json* ReadArray(const json& obj, std::string_view key, std::string_view path,
                      FieldErrors& errors) {
  const json* v = Member(obj, key);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    errors.Add(Child(path, key), fmt::format("must be a list, got {}", TypeName(*v)));
    return nullptr;
  }
  return v;
}

std::vector<std::string> ReadStringList(const json& obj, std::string_view key,
                                        std::string_view path, FieldErrors& errors) {
  std::vector<std::string> out;
  const json* list = ReadArray(obj, key, path, errors);
  if (list == nullptr) return out;
  std::string field = Child(path, key);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    if (!item.is_string()) {
      errors.Add(Index(field, i), fmt::format("must be a string, got {}", TypeName(item)));
    } else if (item.get_ref<const std::string&>().empty()) {
      errors.Add(Index(field, i), "must not be empty");
    } else {
      out.push_back(item.get<std::string>());
      continue;
    }
    out.emplace_back();  // keep indexes aligned for CheckDistinct
  }
  CheckDistinct(out, field, "", errors);
  std::erase(out, std::string());
  return out;
}

std::map<std::string, std::string> ReadStringMap(const json& obj, std::string_view key,
                                                 std::string_view path, FieldErrors& errors) {
  std::map<std::string, std::string> out;
  const json* map = ReadObject(obj, key, path, errors);
  if (map == nullptr) return out;
  for (const auto& [k, v] : map->get_ref<const json::object_t&>()) {
    if (!v.is_string()) {
      errors.Add(Key(Child(path, key), k), fmt::format("must be a string, got {}", TypeName(v)));
      continue;
    }
    out.emplace_hint(out.end(), k, v.get_ref<const std::string&>());  // both maps are sorted
  }
  return out;
}

void CheckDistinct(const std::vector<std::string>& values, std::string_view list_path,
                   std::string_view suffix, FieldErrors& errors) {
  std::map<std::string_view, std::size_t> first;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].empty()) continue;
    auto [it, inserted] = first.emplace(values[i], i);
    if (!inserted) {
      errors.Add(Index(list_path, i) + std::string(suffix),
                 fmt::format("Duplicate value: \"{}\" (same as index {})", values[i], it->second));
    }
  }
}

}  // namespace gantry::job_internal
