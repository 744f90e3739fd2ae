// The Workload CRD's rules on a pod set's template (podSets[].template in
// kueue-crds/kueue.x-k8s.io_workloads.yaml) that a client copying a job's
// pod template trips over, and that a Job itself does not have:
//   - keyed lists (x-kubernetes-list-type: map) with a key twice, such as
//     a container's env with a name twice, which a Job takes;
//   - quantities (x-kubernetes-int-or-string) that are a number with a
//     fraction (cpu: 0.5), which a Job takes.
// In the API server's words:
//   <path>.env[2]: Duplicate value: map[string]interface {}{"name":"A"}
//   <path>.cpu: Invalid value: "number": <path>.cpu in body must be of type integer,string:
//   "number"
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::sim {

// Every such problem of the pod template at path, as "field: message".
std::vector<std::string> PodTemplateProblems(const nlohmann::json& pod_template,
                                             const std::string& path);

}  // namespace gantry::sim
