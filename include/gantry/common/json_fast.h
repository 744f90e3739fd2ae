// FastParseJson: JSON text read by simdjson, then copied into an nlohmann
// tree, the form the rest of gantry reads. simdjson finds every token at
// several GB/s; nlohmann's own lexer reads a byte at a time and was most of
// the cost of a watch event, a request body or a job document (a 1.4 KB
// Workload: 3.8 µs against 14 µs; bench/watch_line_bench.cc).
//
// The tree is the one nlohmann::json::parse builds from the same text (a
// non-negative integer is unsigned, a repeated key keeps its last value).
// Where the two parsers could differ, or an option refuses the text, the
// result is nullopt and the caller parses with nlohmann, whose verdict and
// error messages stand: so invalid text is always judged by nlohmann.
//
// Memory: each thread keeps a parser and a padded copy sized for the
// largest text up to 1 MiB it has read; a larger text gets its own, freed
// after it.
#pragma once

#include <climits>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gantry {

struct FastJsonOptions {
  // Refuse text with a key repeated in one object.
  bool refuse_duplicate_keys = false;
  // Refuse text with a container inside this many containers.
  int max_depth = INT_MAX;
  // For watch lines ({"type": ..., "object": {...}}): under each member of
  // the root's "object" named here, only the listed sub-members are built
  // (kube/watch_line.h). Null: everything is built.
  const std::map<std::string, std::set<std::string>>* only_fields = nullptr;
};

// The tree, or nullopt: simdjson refused the text, an option did, or it
// holds a negative zero double (nlohmann reads "-0.0" as a double but "-0"
// as an integer; a double alone does not tell which was written).
std::optional<nlohmann::json> FastParseJson(std::string_view text, const FastJsonOptions& options = {});

// The string at path (member names, outermost first) of the object in
// text, read from simdjson's parse without building an nlohmann tree: for
// one field of a large document (a stored job spec on the API's loop). ""
// when a member on the way is missing or not an object, or the value is not
// a string, as json.value(pointer, "") gives; nullopt when simdjson refuses
// the text or a key on the way is repeated (the caller parses with
// nlohmann, whose verdict stands).
std::optional<std::string> FastStringAt(std::string_view text, std::initializer_list<std::string_view> path);

}  // namespace gantry
