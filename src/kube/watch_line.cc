// ParseWatchLine: simdjson reads the line (its stage 1 finds every token at
// several GB/s; nlohmann's lexer, one byte at a time, was most of a watch
// thread's work), then the kept parts are copied into an nlohmann tree, the
// form the observer reads. A line simdjson refuses goes through nlohmann's
// own parser instead (PrunedTree below), so what is refused, and the tree of
// anything odd simdjson would read differently (a number beyond 64 bits),
// is nlohmann's, as before.
//
// PrunedTree: a SAX handler that builds the tree as nlohmann's own DOM
// parser does, except inside the sub-members only_fields leaves out. Those
// are counted through (containers opened and closed) and nothing of them is
// built: no key strings, no values.
#include "gantry/kube/watch_line.h"

#include <cmath>
#include <optional>
#include <vector>

#include <simdjson.h>

namespace gantry::kube {
namespace {

using nlohmann::json;

// The element as nlohmann's parser builds it: a non-negative integer is
// unsigned, as nlohmann reads it. Members of a member of the line's
// "object" named in only_fields are left out unless listed. depth: 0 for
// the line, 1 for its members, 2 for the members of those.
// *odd is set for a -0: a double to simdjson, but "-0" is an integer to
// nlohmann (and "-0.0" a double): the text decides, and only nlohmann has it.
json FromElement(simdjson::dom::element e, const OnlyFields& only, int depth, bool in_object,
                 const std::set<std::string>* keep, bool* odd) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::OBJECT: {
      json out(json::value_t::object);
      auto& members = out.get_ref<json::object_t&>();
      for (simdjson::dom::key_value_pair kv : simdjson::dom::object(e)) {
        if (keep && keep->count(std::string(kv.key)) == 0) continue;
        const std::set<std::string>* keep_below = nullptr;
        if (depth == 1 && in_object) {
          auto it = only.find(std::string(kv.key));
          if (it != only.end()) keep_below = &it->second;
        }
        const bool object_below = depth == 0 && kv.key == "object";
        // Assigned, not emplaced: a repeated key keeps its last value, as nlohmann's does.
        members[std::string(kv.key)] = FromElement(kv.value, only, depth + 1, object_below, keep_below, odd);
      }
      return out;
    }
    case element_type::ARRAY: {
      json out(json::value_t::array);
      auto& items = out.get_ref<json::array_t&>();
      for (simdjson::dom::element item : simdjson::dom::array(e)) {
        items.push_back(FromElement(item, only, depth + 1, false, nullptr, odd));
      }
      return out;
    }
    case element_type::STRING: return json(std::string(std::string_view(e)));
    case element_type::INT64: {
      int64_t v = int64_t(e);
      return v >= 0 ? json(static_cast<json::number_unsigned_t>(v)) : json(v);
    }
    case element_type::UINT64: return json(uint64_t(e));
    case element_type::DOUBLE: {
      double v = double(e);
      if (v == 0 && std::signbit(v)) *odd = true;
      return json(v);
    }
    case element_type::BOOL: return json(bool(e));
    case element_type::NULL_VALUE: return json(nullptr);
  }
  return json(json::value_t::discarded);
}

// simdjson's reading of line, pruned; nullopt when simdjson refuses it or
// it holds a -0.
std::optional<json> FastParse(std::string_view line, const OnlyFields& only) {
  thread_local simdjson::dom::parser parser;
  thread_local std::string padded;  // simdjson reads up to SIMDJSON_PADDING bytes past the end
  if (padded.size() < line.size() + simdjson::SIMDJSON_PADDING) padded.resize(line.size() + simdjson::SIMDJSON_PADDING);
  std::copy(line.begin(), line.end(), padded.begin());
  simdjson::dom::element root;
  if (parser.parse(padded.data(), line.size(), false).get(root) != simdjson::SUCCESS) return std::nullopt;
  bool odd = false;
  json out = FromElement(root, only, 0, false, nullptr, &odd);
  if (odd) return std::nullopt;
  return out;
}

class PrunedTree {
 public:
  PrunedTree(json& root, const OnlyFields& only) : root_(root), only_(only) {}

  bool null() { return Value(json(nullptr)); }
  bool boolean(bool v) { return Value(json(v)); }
  bool number_integer(json::number_integer_t v) { return Value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return Value(json(v)); }
  bool string(std::string& v) { return Value(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Value(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return Open(json::value_t::object); }
  bool start_array(std::size_t) { return Open(json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(std::string& k) {
    if (skipping_ > 0) return true;
    // Open containers: 1 inside the line, 2 inside one of its members (the
    // event's object), 3 inside a member of that object.
    const std::size_t depth = open_.size();
    if (depth == 1 || depth == 2) names_[depth] = k;
    skip_next_ = false;
    if (depth == 3 && names_[1] == "object") {
      auto only = only_.find(names_[2]);
      skip_next_ = only != only_.end() && only->second.count(k) == 0;
    }
    if (!skip_next_) key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }

 private:
  // Places v where the parse is: the root, the next element of an array, or
  // the member named by the last key. Returns where it went.
  json* Place(json&& v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }
  bool Value(json&& v) {
    if (skipping_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    Place(std::move(v));
    return true;
  }
  bool Open(json::value_t type) {
    if (skipping_ > 0) {
      ++skipping_;
      return true;
    }
    if (skip_next_) {
      skip_next_ = false;
      skipping_ = 1;
      return true;
    }
    open_.push_back(Place(json(type)));
    return true;
  }
  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    open_.pop_back();
    return true;
  }

  json& root_;
  const OnlyFields& only_;
  std::vector<json*> open_;   // the containers being filled, innermost last
  std::string names_[3];      // the key at depth 1 and 2 on the way down
  std::string key_;           // the member the next value fills
  bool skip_next_ = false;    // the next value is a left-out sub-member
  int skipping_ = 0;          // depth inside a left-out container
};

}  // namespace

json ParseWatchLine(std::string_view line, const OnlyFields& only_fields) {
  if (std::optional<json> fast = FastParse(line, only_fields)) return std::move(*fast);
  if (only_fields.empty()) return json::parse(line, nullptr, false);
  json root;
  PrunedTree tree(root, only_fields);
  if (!json::sax_parse(line.begin(), line.end(), &tree)) return json(json::value_t::discarded);
  return root;
}

}  // namespace gantry::kube
