// Renderings of a Decision: text for humans (CLI, events) and JSON for the API
// (GET /v1/jobs/{ns}/{name}/placement).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gantry/placement/decision.h"

namespace gantry::placement {

// Multi-line: a summary, the candidates with their score breakdown, then one
// line per excluded cluster with its filter and message.
std::string ExplainText(const Decision& decision);

// {"candidates": [...], "unschedulable": bool, "feasibleCount": n,
//  "clusters": [feasible ones by rank:
//               {"name", "feasible": true, "rank", "selected", "score",
//                "scoreTerms": {"fits_now": {"value", "weight", "points"}, ...}},
//               then excluded ones by name:
//               {"name", "feasible": false, "filter", "message", "permanent"}]}
nlohmann::json DecisionToJson(const Decision& decision);

}  // namespace gantry::placement
