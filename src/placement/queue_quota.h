// The quota filter and the headroom of scoring, judged against the one
// ClusterQueue a job's Workload lands in (cluster_queues.h) when the
// cluster's reading says which; against the sums over all of them when it
// cannot (no LocalQueue list, or no queue description at all).
//
// The rules, each decided here once:
//   - The job's LocalQueue (namespace/LocalQueueIn) missing, its
//     ClusterQueue missing, or not Active: excluded, never permanently (an
//     operator may create or fix it; Kueue would leave a copy pending).
//   - A resource the ClusterQueue covers in no resource group: excluded,
//     permanently when the reading is fresh and the ClusterQueue Active
//     (Kueue never admits it).
//   - More than the ClusterQueue could ever hold: see QueueBound in
//     queue_quota.cc; permanent only where that bound is certain.
//   - A stale reading is never proof of "never" (a quota may have grown).
//   - A job that names a WorkloadPriorityClass: a cluster whose classes
//     gantry cannot read, or that lacks it, is excluded, never permanently
//     (its copy there could not carry the class's value).
//   - Sums over all ClusterQueues: permanent only for a reading that has no
//     queue description (then nothing better was ever known, as before);
//     a reading that describes its queues but not where the job lands
//     (the LocalQueue list failed) never excludes permanently.
#pragma once

#include <optional>
#include <string>

#include "gang_demand.h"
#include "gantry/placement/cluster_queues.h"
#include "gantry/placement/cluster_snapshot.h"
#include "gantry/placement/decision.h"
#include "gantry/placement/job_demand.h"

namespace gantry::placement {

// The job's ClusterQueue in one cluster.
struct JobQueue {
  std::string local_queue;  // "namespace/name"
  // Into the snapshot; null when `unusable` is set.
  const ClusterQueueInfo* cluster_queue = nullptr;
  std::optional<Exclusion> unusable;  // missing or not Active: never permanent
};

// nullopt when the cluster's reading cannot tell where the job lands (no
// queue description, LocalQueues not listed) or the job names no queue.
std::optional<JobQueue> FindJobQueue(const JobDemand& job, const ClusterSnapshot& cluster);

// The quota filter (filters.h): nullopt when the gang can be admitted.
std::optional<Exclusion> CheckQuota(const JobDemand& job, const GangDemand& demand,
                                    const ClusterSnapshot& cluster);

// The priority class filter (filters.h): nullopt when the job names no
// WorkloadPriorityClass, or one the cluster has.
std::optional<Exclusion> CheckPriorityClass(const JobDemand& job, const ClusterSnapshot& cluster);

// What scoring credits a cluster with (scoring.h).
struct Headroom {
  bool fits_now = false;
  double free_fraction = 0;  // after placing, tightest resource
};

// From the job's ClusterQueue when known, else from the sums. Per resource,
// free = sum over the ClusterQueue's flavors of max(0, nominal - reserved).
// Two approximations, both documented in scoring.h: a pod set takes one
// flavor, so free quota spread over flavors may not hold it; and what the
// ClusterQueue could borrow from its cohort is not counted (it may be lent
// to others first): a job that fits only by borrowing does not "fit now".
Headroom ComputeHeadroom(const JobDemand& job, const GangDemand& demand,
                         const ClusterSnapshot& cluster);

}  // namespace gantry::placement
