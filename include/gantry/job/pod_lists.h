// Lists of a pod template that the Workload CRD keys (x-kubernetes-list-type:
// map, so the worker's API server refuses a repeated key) while a Job or
// JobSet takes them with a key repeated:
//   containers[].env and initContainers[].env    by name
//   containers[].ports and initContainers[].ports by containerPort and
//                                                 protocol (default TCP)
//   spec.hostAliases                              by ip
//   spec.imagePullSecrets                         by name
// The other keyed lists there (containers, volumes, volumeMounts,
// volumeDevices, resourceClaims, schedulingGates, topologySpreadConstraints)
// are refused with a repeated key by the API server for a Job as well.
//
// gantry writes each such list with every key once, into its Workload copies
// and into the real job alike, so the worker's Kueue finds the two equal:
// env keeps the last entry of a name, where it stands (the value the kubelet
// gives the container, and the one Kueue keeps in the Workloads it makes),
// and the other lists keep the first entry of a key: submission has made
// sure the others repeat it exactly. Submission refuses what that
// would change (pod_list_checks.h): an env value that refers to a repeated
// name, and a repeated key whose entries differ.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

namespace gantry {

// Drops the repeated keys of every list above in a PodTemplateSpec
// ({metadata, spec}); anything not shaped like one is left as it is.
void DropRepeatedListKeys(nlohmann::json& pod_template);

}  // namespace gantry
