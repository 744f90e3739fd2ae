// FastParseJson (simdjson) for a well-formed body; otherwise nlohmann's
// parser with a SAX handler that builds the DOM as its json_sax_dom_parser
// does and checks each key against the object being filled (a std::map: one
// lookup, which also gives the insertion hint), and words the error.
#include "json_body.h"

#include <fmt/format.h>

#include "gantry/common/json_fast.h"

#include <string>
#include <utility>
#include <vector>


namespace gantry::job_internal {
namespace {

using nlohmann::json;

class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(json& root) : root_(root) {}

  bool null() { return Value(nullptr); }
  bool boolean(bool v) { return Value(v); }
  bool number_integer(json::number_integer_t v) { return Value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return Value(v); }
  bool string(json::string_t& v) { return Value(v); }
  bool binary(json::binary_t& v) { return Value(std::move(v)); }  // not produced by JSON text
  bool start_object(std::size_t /*unknown in JSON*/) { return Open(json::value_t::object); }
  bool start_array(std::size_t /*unknown in JSON*/) { return Open(json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(json::string_t& k) {
    if (!building()) return true;
    json::object_t& object = *open_.back()->get_ptr<json::object_t*>();
    auto it = object.lower_bound(k);
    if (it != object.end() && it->first == k) {
      duplicate_ = k;
      return true;
    }
    member_ = &object.emplace_hint(it, k, nullptr)->second;
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const json::exception& e) {
    syntax_error_ = e.what();
    return false;
  }

  // After the parse: the first problem by the priority json_body.h states.
  std::optional<DocumentError> Problem() const {
    if (syntax_error_) return SyntaxError(*syntax_error_);
    if (too_deep_) return DocumentError{400, "invalid JSON: document is nested too deeply", {}};
    if (duplicate_) {
      return DocumentError{400, fmt::format("invalid JSON: duplicate key \"{}\"", *duplicate_), {}};
    }
    return std::nullopt;
  }

  // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
  static DocumentError SyntaxError(std::string_view what) {
    if (auto pos = what.find("] "); pos != std::string_view::npos) what.remove_prefix(pos + 2);
    return DocumentError{400, fmt::format("invalid JSON: {}", what), {}};
  }

 private:
  // Once the body is refused (too deep, or a duplicate key) nothing more is
  // built; the rest is still scanned, since a syntax error is reported first.
  bool building() const { return !too_deep_ && !duplicate_; }

  // Adds a value where the parse is (root, array element or the member of
  // the last key) and returns it.
  template <typename V>
  json* Put(V&& v) {
    if (open_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    if (json::array_t* array = open_.back()->get_ptr<json::array_t*>()) {
      return &array->emplace_back(std::forward<V>(v));
    }
    *member_ = json(std::forward<V>(v));
    return member_;
  }

  template <typename V>
  bool Value(V&& v) {
    if (building()) Put(std::forward<V>(v));
    return true;
  }

  bool Open(json::value_t type) {
    if (too_deep_) return true;
    if (depth_ >= kMaxJsonDepth) {
      too_deep_ = true;
      return true;
    }
    ++depth_;
    if (building()) open_.push_back(Put(type));
    return true;
  }

  bool Close() {
    if (too_deep_) return true;
    --depth_;
    if (building()) open_.pop_back();
    return true;
  }

  json& root_;
  std::vector<json*> open_;  // containers being filled, innermost last
  json* member_ = nullptr;   // where the value after the last key goes
  int depth_ = 0;            // containers open around the parse position
  bool too_deep_ = false;
  std::optional<std::string> duplicate_;  // the first repeated key
  std::optional<std::string> syntax_error_;
};

}  // namespace

std::variant<json, DocumentError> ParseJsonBody(std::string_view body) {
  // Fast when the body is well formed; anything else is judged, and its
  // error worded, by the strict builder below.
  FastJsonOptions strict;
  strict.refuse_duplicate_keys = true;
  strict.max_depth = kMaxJsonDepth;
  if (std::optional<json> doc = FastParseJson(body, strict)) return std::move(*doc);
  json doc;
  StrictDomBuilder builder(doc);
  try {
    json::sax_parse(body.begin(), body.end(), &builder);
  } catch (const json::exception& e) {  // not expected: errors reach parse_error
    return StrictDomBuilder::SyntaxError(e.what());
  }
  if (std::optional<DocumentError> problem = builder.Problem()) return *std::move(problem);
  return doc;
}

}  // namespace gantry::job_internal
