// One line of a Kubernetes watch stream, {"type": ..., "object": {...}},
// parsed into a tree, with the parts a watcher does not read left unbuilt.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gantry::kube {

// For each top-level member of the event's object named here (e.g. "spec"),
// only the listed sub-members are kept; the others (pod templates, admission
// details: most of a Workload's bytes) are skipped while parsing, their keys
// and values never built. Members not named here are kept whole.
using OnlyFields = std::map<std::string, std::set<std::string>>;

// The line as a tree, pruned by only_fields; a discarded value when the line
// is not one JSON value.
nlohmann::json ParseWatchLine(std::string_view line, const OnlyFields& only_fields);

// Erases from an object (a watch event's, a list's item) the sub-members
// only_fields leaves out: a list's items are kept as its watch's events are.
void PruneObject(nlohmann::json& object, const OnlyFields& only_fields);

}  // namespace gantry::kube
