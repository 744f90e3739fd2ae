// Place(): filter, score and pick the clusters to nominate for one job.
//
// Pure: no clock, no I/O, no global state. Time enters only as
// JobDemand::rounds_elapsed and ClusterCapacity::stale. Cost is linear in the
// number of clusters plus sorting the feasible ones.
//
// A gang goes to one cluster whole (DESIGN.md, principle 2): the job's demand
// is summed over its pod sets and compared with each cluster's quota on its
// own, never with a sum across clusters.
#pragma once

#include <span>

#include "gantry/placement/cluster_snapshot.h"
#include "gantry/placement/decision.h"
#include "gantry/placement/job_demand.h"
#include "gantry/placement/placement_options.h"

namespace gantry::placement {

// REQUIRES: cluster names are unique.
Decision Place(const JobDemand& job, std::span<const ClusterSnapshot> clusters,
               const PlacementOptions& options = {});

}  // namespace gantry::placement
