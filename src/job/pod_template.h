// Validation of one PodTemplateSpec and its per-pod resource requests.
// Internal to gantry_job.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "json_fields.h"

namespace gantry::job_internal {

// Checks the pod template at path and returns the per-pod requests in
// milli-units, as the kubelet and Kueue compute them:
//   max(sum over containers, max over init containers) + spec.overhead
// for every resource named anywhere.
//
// Rules (errors at the exact path):
// - spec.containers is a non-empty list; each container has a name, names
//   are unique across containers and initContainers.
// - every regular container requests cpu and memory; a resource set only in
//   resources.limits defaults its request to the limit (Kubernetes
//   defaulting), so "nvidia.com/gpu" given only as a limit counts.
//   Missing ones: "<container>.resources.requests: cpu and memory requests
//   are required (missing: ...)". Init containers may omit requests.
// - every quantity parses; a bad one is reported at
//   "...resources.requests.<resource>" (resource names are appended with a
//   dot, "requests.nvidia.com/gpu", not Kubernetes' "requests[nvidia.com/gpu]").
// - extended resources (a name with a '/' outside kubernetes.io) are whole
//   numbers, and their request equals the limit when both are set; other
//   requests are at most their limit.
// - pods_of_job: the template is a Job's or a JobSet's, which the worker's
//   API server validates as pods (explicit spec.podSets only describe a
//   job's pods to Kueue). Then, as Kubernetes would refuse the job after
//   gantry dispatched it: a container names only cpu, memory,
//   ephemeral-storage, hugepages-<size> or a resource with a domain, and a
//   request of an extended resource or of hugepages-* needs a limit equal
//   to it (reported at "...resources.limits.<resource>" when missing, at
//   the request when it differs); and what gantry writes once per key
//   (gantry/job/pod_lists.h) means the same written so.
std::map<std::string, int64_t> CheckPodTemplate(const json& pod_template, std::string_view path,
                                                bool pods_of_job, FieldErrors& errors);

}  // namespace gantry::job_internal
