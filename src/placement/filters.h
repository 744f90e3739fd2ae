// The hard filters of placement, evaluated in Filter order (decision.h).
//
// Each filter is a predicate on (job, cluster); the first one that fails names
// the exclusion. The per-cluster rules, each decided once here:
//   - allowlist / region: exact name match; an empty job list allows all.
//   - compliance zones: the cluster must belong to at least one of the job's
//     zones (the job lists where its data may go; a cluster may hold several
//     certifications).
//   - labels: every matchLabels entry must be present with the same value.
//   - accelerator: with a requirement, some accelerator pool must match model,
//     minimum memory and interconnect; without one, a job that requests GPUs
//     still needs at least one accelerator pool. CPU-only jobs need none.
//   - datasets: the cluster must hold every required dataset.
//   - price: GPU jobs only; an unknown price fails a set ceiling.
//   - node fit: every pod fits the largest node (GPUs against the matching
//     accelerator pools' GPUs per node, cpu and memory against NodeShape); an
//     unknown (0) node dimension is not checked.
//   - quota: the whole gang's sum per resource fits what the job's own
//     ClusterQueue can hold (reserved usage only affects the score), and
//     its LocalQueue and ClusterQueue exist and are Active; where the
//     reading cannot tell which ClusterQueue, the sums over all of them
//     (queue_quota.h, which also says when such an exclusion is permanent).
//   - cordoned, health != Ready: transient.
//   - priority class: a job that names a WorkloadPriorityClass goes only
//     where gantry has read that class (its value is the copy's priority);
//     transient, and told last.
#pragma once

#include <optional>

#include "gang_demand.h"
#include "gantry/placement/cluster_snapshot.h"
#include "gantry/placement/decision.h"
#include "gantry/placement/job_demand.h"
#include "gantry/placement/placement_options.h"

namespace gantry::placement {

// The cluster's price per GPU hour if known and sane (finite, >= 0).
std::optional<double> KnownPrice(const ClusterSnapshot& cluster);

// nullopt when the cluster passes every filter.
std::optional<Exclusion> CheckFilters(const JobDemand& job, const GangDemand& demand,
                                      const ClusterSnapshot& cluster,
                                      const PlacementOptions& options);

// Whether the accelerator pool satisfies the requirement (all fields).
bool AcceleratorMatches(const Accelerator& accelerator, const AcceleratorRequirement& req);

// The GPUs one pod can get on one node of this cluster for this job: the most
// over the accelerator pools the job may use; 0 when unknown.
int64_t GpusPerNodeFor(const JobDemand& job, const ClusterSnapshot& cluster);

}  // namespace gantry::placement
