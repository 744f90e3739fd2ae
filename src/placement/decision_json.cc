#include <string>

#include "gantry/placement/explain.h"

namespace gantry::placement {
namespace {

nlohmann::json FeasibleToJson(const Decision& d, const RankedCluster& v) {
  nlohmann::json terms = nlohmann::json::object();
  for (int t = 0; t < kTermCount; ++t) {
    const Term term = static_cast<Term>(t);
    terms[std::string(TermName(term))] = {{"value", v.score.value(term)},
                                          {"weight", d.weights[static_cast<size_t>(t)]},
                                          {"points", d.Points(v.score, term)}};
  }
  return {{"name", v.cluster},      {"feasible", true},       {"rank", v.rank},
          {"selected", v.selected}, {"score", v.score.total}, {"scoreTerms", std::move(terms)}};
}

nlohmann::json ExcludedToJson(const ExcludedCluster& v) {
  return {{"name", v.cluster},
          {"feasible", false},
          {"filter", std::string(FilterName(v.exclusion.filter))},
          {"message", v.exclusion.message},
          {"permanent", v.exclusion.permanent}};
}

}  // namespace

nlohmann::json DecisionToJson(const Decision& decision) {
  nlohmann::json clusters = nlohmann::json::array();
  for (const RankedCluster& v : decision.feasible) clusters.push_back(FeasibleToJson(decision, v));
  for (const ExcludedCluster& v : decision.excluded) clusters.push_back(ExcludedToJson(v));
  return {{"candidates", decision.candidates},
          {"unschedulable", decision.unschedulable},
          {"feasibleCount", decision.feasible.size()},
          {"clusters", std::move(clusters)}};
}

}  // namespace gantry::placement
