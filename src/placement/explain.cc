#include "gantry/placement/explain.h"

#include <fmt/format.h>

namespace gantry::placement {
namespace {

// One line per feasible cluster: rank, name, total, then each term's points.
void AppendFeasible(std::string& out, const Decision& d, const RankedCluster& v) {
  fmt::format_to(std::back_inserter(out), "  {}{:>3}. {}  score {:.2f} (", v.selected ? "*" : " ",
                 v.rank, v.cluster, v.score.total);
  for (int t = 0; t < kTermCount; ++t) {
    const Term term = static_cast<Term>(t);
    fmt::format_to(std::back_inserter(out), "{}{} {:.2f}", t == 0 ? "" : ", ", TermName(term),
                   d.Points(v.score, term));
  }
  out += ")\n";
}

}  // namespace

std::string ExplainText(const Decision& decision) {
  std::string out;
  const size_t excluded = decision.excluded.size();
  if (decision.unschedulable) {
    fmt::format_to(std::back_inserter(out),
                   "unschedulable: none of {} clusters can ever run this job\n", excluded);
  } else if (decision.candidates.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "no candidate now: {} clusters excluded, none permanently for all\n", excluded);
  } else {
    fmt::format_to(std::back_inserter(out),
                   "{} candidates of {} feasible clusters ({} excluded): {}\n",
                   decision.candidates.size(), decision.feasible.size(), excluded,
                   fmt::join(decision.candidates, ", "));
  }
  if (!decision.feasible.empty()) out += "feasible (* = nominated):\n";
  for (const RankedCluster& v : decision.feasible) AppendFeasible(out, decision, v);
  if (excluded > 0) out += "excluded:\n";
  for (const ExcludedCluster& v : decision.excluded) {
    fmt::format_to(std::back_inserter(out), "  {}: {}: {}{}\n", v.cluster,
                   FilterName(v.exclusion.filter), v.exclusion.message,
                   v.exclusion.permanent ? "" : " (transient)");
  }
  return out;
}

}  // namespace gantry::placement
