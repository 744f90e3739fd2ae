// ParseWatchLine: FastParseJson (simdjson) reads the line and builds the
// kept parts; nlohmann's lexer, one byte at a time, was most of a watch
// thread's work. A line it leaves to nlohmann goes through PrunedTree below,
// so what is refused, and the tree of anything the two parsers could read
// differently, is nlohmann's, as before.
//
// PrunedTree: a SAX handler that builds the tree as nlohmann's own DOM
// parser does, except inside the sub-members only_fields leaves out. Those
// are counted through (containers opened and closed) and nothing of them is
// built: no key strings, no values.
#include "gantry/kube/watch_line.h"

#include <optional>
#include <vector>

#include "gantry/common/json_fast.h"

namespace gantry::kube {
namespace {

using nlohmann::json;

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
  FastJsonOptions fast;
  if (!only_fields.empty()) fast.only_fields = &only_fields;
  if (std::optional<json> tree = FastParseJson(line, fast)) return std::move(*tree);
  if (only_fields.empty()) return json::parse(line, nullptr, false);
  json root;
  PrunedTree tree(root, only_fields);
  if (!json::sax_parse(line.begin(), line.end(), &tree)) return json(json::value_t::discarded);
  return root;
}

}  // namespace gantry::kube
