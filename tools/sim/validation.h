// Admission-time validation of objects, the subset of the apiserver's and
// the Kueue CRD's rules a client can trip over: DNS-1123 names, and for
// Workloads (kueue-crds/kueue.x-k8s.io_workloads.yaml): 1..18 pod sets with
// unique DNS-1123 label names, count >= 0, pod templates whose keyed lists
// and quantities meet the CRD (pod_template_checks.h), a queueName,
// status.clusterName immutable once set, and in v1beta2 the preemption
// gates: spec.preemptionGates and status.preemptionGates lists of at most 8
// with unique names of 1..63 characters, each state with a position (Open,
// Closed) and a lastTransitionTime.
//
// Versions: the simulator stores what a client writes in either served
// version as given, and neither prunes nor refuses fields the version's
// schema does not know. So in v1beta1, where the preemption gates do not
// exist, they are not checked (and are kept, as any unknown field is).
//
// Errors are InvalidArgument with the apiserver's message shape:
// `Workload.kueue.x-k8s.io "x" is invalid: spec.podSets: Required value`.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"
#include "resources.h"

namespace gantry::sim {

inline constexpr std::size_t kMaxPodSets = 18;
inline constexpr std::size_t kMaxPreemptionGates = 8;
inline constexpr std::size_t kMaxPreemptionGateName = 63;

// Metadata (name, namespace) of any object.
Status ValidateMetadata(const ResourceInfo& res, const nlohmann::json& object);
// Spec rules of a Workload on create and update, written through API
// version `version` ("v1beta1", "v1beta2").
Status ValidateWorkload(const nlohmann::json& workload, std::string_view version = "v1beta2");
// The types of the fields the simulated Kueue reads from a Job, JobSet or
// TrainJob (res IsRunnable), as their CRD schemas would refuse them:
// spec an object (required), spec.suspend a boolean, counts integers >= 0, lists and
// templates of the right shape.
Status ValidateRunnable(const ResourceInfo& res, const nlohmann::json& object);

// The JobSet webhook's create check (vjobset.kb.io) of the names the JobSet
// controller will derive: <jobset>-<replicatedJob>-<last index> for Jobs
// and, for an Indexed Job with completions, that plus -<last pod index>-
// and a 5-character suffix for pods, each a DNS-1035 label. Refused as the
// API server passes a webhook's denial on: 403, kPermissionDenied.
Status JobSetWebhook(const nlohmann::json& object);
// Rules of an update, comparing it with the stored object (old), and of
// the status it writes.
Status ValidateWorkloadUpdate(const nlohmann::json& old, const nlohmann::json& updated,
                              std::string_view version = "v1beta2");

}  // namespace gantry::sim
