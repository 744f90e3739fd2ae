// Soft scoring of a feasible cluster. Every term is a value in [0, 1]; the
// score is the weighted sum in Term order. How each term is computed:
//   fits_now       1 if, on a fresh capacity reading, free >= demand for every
//                  requested resource; else 0 (stale = unknown = 0). free is
//                  that of the job's own ClusterQueue when the reading says
//                  which: per resource, the sum over its flavors of
//                  max(0, nominal - reserved), without what it could borrow
//                  from its cohort (lent to others first, maybe), and as if a
//                  pod set could spread over flavors (it takes one): a hint.
//                  Otherwise nominal - reserved summed over all ClusterQueues
//                  (queue_quota.h).
//   free_quota     on a fresh reading, min over requested resources of
//                  (free - demand) / nominal, floored at 0; a job
//                  requesting nothing scores 1; stale scores 0, so a cluster
//                  we know has room outranks one we cannot see.
//   price          GPU jobs: (max - price) / (max - min) over the feasible set
//                  (1 when all equal; 0 when unknown). CPU-only jobs: 0 for all,
//                  since price is per GPU hour.
//   queue_depth    1 / (1 + pending / kPendingAtHalfScore).
//   admission_*    latency: 1 / (1 + p50 / kLatencyAtHalfScoreMs); failures:
//                  1 - failure rate; no data yet: kUnknownAdmissionScore.
//   data_locality  fraction of the job's preferred datasets in the cluster;
//                  0 for all when the job prefers none.
#pragma once

#include <array>
#include <optional>

#include "gang_demand.h"
#include "gantry/placement/cluster_snapshot.h"
#include "gantry/placement/decision.h"
#include "gantry/placement/job_demand.h"
#include "gantry/placement/placement_options.h"

namespace gantry::placement {

// Pending workloads at which the queue term is worth half: ten jobs ahead is
// where a cluster's queue starts to mean tens of minutes of waiting.
inline constexpr double kPendingAtHalfScore = 10;
// Admission latency at which the latency term is worth half: a healthy Kueue
// admits in seconds; half a minute signals contention or a slow apiserver.
inline constexpr double kLatencyAtHalfScoreMs = 30'000;
// A cluster without statistics is neither rewarded nor punished: the midpoint.
inline constexpr double kUnknownAdmissionScore = 0.5;

// Facts about the whole feasible set that some terms normalize against.
struct FeasibleSetStats {
  std::optional<double> min_price;  // over feasible clusters with a known price
  std::optional<double> max_price;
};

// The weights in Term order.
std::array<double, kTermCount> WeightsByTerm(const ScoreWeights& weights);

Score ScoreCluster(const JobDemand& job, const GangDemand& demand, const ClusterSnapshot& cluster,
                   const FeasibleSetStats& stats, const std::array<double, kTermCount>& weights);

}  // namespace gantry::placement
