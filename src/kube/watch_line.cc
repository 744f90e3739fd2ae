// ParseWatchLine: FastParseJson (simdjson) reads the line and builds only
// the kept parts; nlohmann's lexer, one byte at a time, was most of a watch
// thread's work. A line it leaves to nlohmann (not JSON, or a number the two
// parsers could read differently: rare) is parsed whole by nlohmann and
// pruned after, so what is refused, and the tree of anything odd, is
// nlohmann's, as before.
#include "gantry/kube/watch_line.h"

#include <iterator>
#include <optional>

#include "gantry/common/json_fast.h"

namespace gantry::kube {
namespace {

using nlohmann::json;

// Erases from the line's object the sub-members only_fields leaves out.
void Prune(json& line, const OnlyFields& only_fields) {
  if (!line.is_object()) return;
  auto object = line.find("object");
  if (object != line.end()) PruneObject(*object, only_fields);
}

}  // namespace

void PruneObject(json& object, const OnlyFields& only_fields) {
  if (!object.is_object()) return;
  for (const auto& [member, keep] : only_fields) {
    auto m = object.find(member);
    if (m == object.end() || !m->is_object()) continue;
    for (auto it = m->begin(); it != m->end();) it = keep.count(it.key()) ? std::next(it) : m->erase(it);
  }
}

json ParseWatchLine(std::string_view line, const OnlyFields& only_fields) {
  FastJsonOptions fast;
  if (!only_fields.empty()) fast.only_fields = &only_fields;
  if (std::optional<json> tree = FastParseJson(line, fast)) return std::move(*tree);
  json whole = json::parse(line, nullptr, false);
  Prune(whole, only_fields);
  return whole;
}

}  // namespace gantry::kube
