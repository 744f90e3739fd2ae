// Admission-time validation of objects, the subset of the apiserver's and
// the Kueue CRD's rules a client can trip over: DNS-1123 names, and for
// Workloads (kueue-crds/kueue.x-k8s.io_workloads.yaml): 1..18 pod sets with
// unique DNS-1123 label names, count >= 0, a queueName, and
// status.clusterName immutable once set.
//
// Errors are InvalidArgument with the apiserver's message shape:
// `Workload.kueue.x-k8s.io "x" is invalid: spec.podSets: Required value`.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"
#include "resources.h"

namespace gantry::sim {

inline constexpr std::size_t kMaxPodSets = 18;

// Metadata (name, namespace) of any object.
Status ValidateMetadata(const ResourceInfo& res, const nlohmann::json& object);
// Spec rules of a Workload on create and update.
Status ValidateWorkload(const nlohmann::json& workload);
// The types of the fields the simulated Kueue reads from a Job, JobSet or
// TrainJob (res IsRunnable), as their CRD schemas would refuse them:
// spec an object (required), spec.suspend a boolean, counts integers >= 0, lists and
// templates of the right shape.
Status ValidateRunnable(const ResourceInfo& res, const nlohmann::json& object);
// Rules comparing an update with the stored object (old).
Status ValidateWorkloadUpdate(const nlohmann::json& old, const nlohmann::json& updated);

}  // namespace gantry::sim
