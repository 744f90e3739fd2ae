#include "gantry/placement/place.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>
#include <vector>

#include "filters.h"
#include "gang_demand.h"
#include "scoring.h"

namespace gantry::placement {
namespace {

// How many of the ranked feasible clusters to nominate.
size_t SelectionSize(const JobDemand& job, const PlacementOptions& options, size_t feasible) {
  int64_t wanted = static_cast<int64_t>(feasible);
  if (job.dispatch.mode == DispatchMode::kIncremental) {
    // Widen by one step per elapsed round: round 0 nominates one step.
    const int64_t step = std::max<int32_t>(1, job.dispatch.step_size);
    const int64_t rounds = std::max<int32_t>(0, job.rounds_elapsed);
    wanted = SaturatingMul(step, rounds + 1);
  }
  const int64_t cap = std::max<int32_t>(0, options.max_copies);
  return static_cast<size_t>(std::min({wanted, cap, static_cast<int64_t>(feasible)}));
}

FeasibleSetStats CollectStats(std::span<const ClusterSnapshot> clusters,
                              const std::vector<size_t>& feasible) {
  FeasibleSetStats stats;
  for (size_t i : feasible) {
    const std::optional<double> price = KnownPrice(clusters[i]);
    if (!price) continue;
    stats.min_price = std::min(stats.min_price.value_or(*price), *price);
    stats.max_price = std::max(stats.max_price.value_or(*price), *price);
  }
  return stats;
}

}  // namespace

Decision Place(const JobDemand& job, std::span<const ClusterSnapshot> clusters,
               const PlacementOptions& options) {
  const GangDemand demand = SummarizeDemand(job, options);

  // Pass 1: hard filters. Scoring needs the whole feasible set (price is
  // normalized over it), so it runs in a second pass.
  std::vector<std::optional<Exclusion>> exclusions(clusters.size());
  std::vector<size_t> feasible;
  std::vector<size_t> excluded;
  for (size_t i = 0; i < clusters.size(); ++i) {
    exclusions[i] = CheckFilters(job, demand, clusters[i], options);
    (exclusions[i] ? excluded : feasible).push_back(i);
  }

  // Pass 2: score, then rank by score (descending) with the name as the
  // tie-break, so the outcome never depends on the snapshot's order.
  const FeasibleSetStats stats = CollectStats(clusters, feasible);
  struct Ranked {
    size_t index;  // into clusters
    Score score;
  };
  const std::array<double, kTermCount> weights = WeightsByTerm(options.weights);
  std::vector<Ranked> ranked;
  ranked.reserve(feasible.size());
  for (size_t i : feasible) {
    ranked.push_back(Ranked{i, ScoreCluster(job, demand, clusters[i], stats, weights)});
  }
  std::sort(ranked.begin(), ranked.end(), [&](const Ranked& a, const Ranked& b) {
    if (a.score.total != b.score.total) return a.score.total > b.score.total;
    return clusters[a.index].name < clusters[b.index].name;
  });
  auto by_name = [&](size_t a, size_t b) { return clusters[a].name < clusters[b].name; };
  // Inventories usually hand clusters over sorted by name: skip the sort then.
  if (!std::is_sorted(excluded.begin(), excluded.end(), by_name)) {
    std::sort(excluded.begin(), excluded.end(), by_name);
  }

  Decision decision;
  decision.weights = weights;
  const size_t selected = SelectionSize(job, options, ranked.size());
  decision.candidates.reserve(selected);
  decision.feasible.reserve(ranked.size());
  for (size_t rank = 0; rank < ranked.size(); ++rank) {
    const ClusterSnapshot& cluster = clusters[ranked[rank].index];
    decision.feasible.push_back(RankedCluster{cluster.name, ranked[rank].score,
                                              static_cast<int32_t>(rank + 1), rank < selected});
    if (rank < selected) decision.candidates.push_back(cluster.name);
  }
  bool all_permanent = true;
  decision.excluded.reserve(excluded.size());
  for (size_t i : excluded) {
    all_permanent = all_permanent && exclusions[i]->permanent;
    decision.excluded.push_back(ExcludedCluster{clusters[i].name, std::move(*exclusions[i])});
  }
  // An empty snapshot is "inventory unknown", not "impossible" (see decision.h).
  decision.unschedulable = !clusters.empty() && feasible.empty() && all_permanent;
  return decision;
}

}  // namespace gantry::placement
