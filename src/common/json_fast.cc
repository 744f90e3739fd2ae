#include "gantry/common/json_fast.h"

#include <algorithm>
#include <cmath>

#include <simdjson.h>

namespace gantry {
namespace {

using nlohmann::json;

class Converter {
 public:
  explicit Converter(const FastJsonOptions& options) : options_(options) {}

  // e as nlohmann builds it. depth: the containers around e. in_object:
  // e is the root's "object" member. keep: e is a member of that whose
  // sub-members only_fields lists.
  json Convert(simdjson::dom::element e, int depth, bool in_object, const std::set<std::string>* keep) {
    using simdjson::dom::element_type;
    switch (e.type()) {
      case element_type::OBJECT: {
        if (!Enter(depth)) return json();
        json out(json::value_t::object);
        auto& members = out.get_ref<json::object_t&>();
        for (simdjson::dom::key_value_pair kv : simdjson::dom::object(e)) {
          std::string key(kv.key);
          if (keep && keep->count(key) == 0) continue;
          const std::set<std::string>* keep_below = nullptr;
          if (in_object && options_.only_fields) {
            auto it = options_.only_fields->find(key);
            if (it != options_.only_fields->end()) keep_below = &it->second;
          }
          const bool object_below = depth == 0 && key == "object";
          auto [slot, added] = members.try_emplace(std::move(key));
          if (!added && options_.refuse_duplicate_keys) refused_ = true;
          // A repeated key keeps its last value, as nlohmann's parse does.
          slot->second = Convert(kv.value, depth + 1, object_below, keep_below);
        }
        return out;
      }
      case element_type::ARRAY: {
        if (!Enter(depth)) return json();
        json out(json::value_t::array);
        auto& items = out.get_ref<json::array_t&>();
        for (simdjson::dom::element item : simdjson::dom::array(e)) items.push_back(Convert(item, depth + 1, false, nullptr));
        return out;
      }
      case element_type::STRING: return json(std::string(std::string_view(e)));
      case element_type::INT64: {
        const int64_t v = int64_t(e);
        return v >= 0 ? json(static_cast<json::number_unsigned_t>(v)) : json(v);
      }
      case element_type::UINT64: return json(uint64_t(e));
      case element_type::DOUBLE: {
        const double v = double(e);
        if (v == 0 && std::signbit(v)) refused_ = true;
        return json(v);
      }
      case element_type::BOOL: return json(bool(e));
      case element_type::NULL_VALUE: return json(nullptr);
    }
    refused_ = true;
    return json();
  }

  bool refused() const { return refused_; }

 private:
  bool Enter(int depth) {
    if (depth >= options_.max_depth) refused_ = true;
    return !refused_;
  }

  const FastJsonOptions& options_;
  bool refused_ = false;
};

}  // namespace

namespace {

// simdjson's parse of text into *root, with the thread's parser and padded
// copy (or, for a text over kKeptCapacity, ones of its own in *once_*).
// A thread keeps its parser and padded copy for the next text, up to this
// size; a larger text gets its own, freed after it (so a thread that once
// read a huge watch event does not keep that memory).
constexpr std::size_t kKeptCapacity = 1 << 20;
bool Parse(std::string_view text, std::optional<simdjson::dom::parser>& once_parser, std::string& once_copy,
           simdjson::dom::element* root) {
  thread_local simdjson::dom::parser kept_parser;
  thread_local std::string kept_copy;
  const bool large = text.size() > kKeptCapacity;
  simdjson::dom::parser& parser = large ? once_parser.emplace() : kept_parser;
  std::string& padded = large ? once_copy : kept_copy;  // simdjson reads up to SIMDJSON_PADDING bytes past the end
  if (padded.size() < text.size() + simdjson::SIMDJSON_PADDING) {
    padded.resize(text.size() + simdjson::SIMDJSON_PADDING);
  }
  std::copy(text.begin(), text.end(), padded.begin());
  return parser.parse(padded.data(), text.size(), false).get(*root) == simdjson::SUCCESS;
}

}  // namespace

std::optional<nlohmann::json> FastParseJson(std::string_view text, const FastJsonOptions& options) {
  std::optional<simdjson::dom::parser> once_parser;
  std::string once_copy;
  simdjson::dom::element root;
  if (!Parse(text, once_parser, once_copy, &root)) return std::nullopt;
  Converter converter(options);
  json out = converter.Convert(root, 0, false, nullptr);
  if (converter.refused()) return std::nullopt;
  return out;
}

std::optional<std::string> FastStringAt(std::string_view text, std::initializer_list<std::string_view> path) {
  std::optional<simdjson::dom::parser> once_parser;
  std::string once_copy;
  simdjson::dom::element e;
  if (!Parse(text, once_parser, once_copy, &e)) return std::nullopt;
  for (std::string_view key : path) {
    simdjson::dom::object object;
    // A repeated key: nlohmann keeps the last, simdjson finds the first.
    if (e.get_object().get(object) != simdjson::SUCCESS) return std::string();
    std::size_t seen = 0;
    for (simdjson::dom::key_value_pair kv : object) {
      if (kv.key == key && seen++ == 0) e = kv.value;
    }
    if (seen == 0) return std::string();
    if (seen > 1) return std::nullopt;
  }
  std::string_view value;
  if (e.get_string().get(value) != simdjson::SUCCESS) return std::string();
  return std::string(value);
}

}  // namespace gantry
