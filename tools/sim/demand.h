// What a Workload asks of a cluster: per pod set, count x per-pod requests,
// and whether it can never fit the cluster's nodes (a pod needing more GPUs
// than one node has, or a GPU model the cluster lacks).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"
#include "quota.h"

namespace gantry::sim {

// The node shape a cluster offers, for the never-fits test.
struct NodeShape {
  std::string gpu_model;     // "" = no accelerators
  int64_t gpus_per_node = 0;
  // Not a node's, but what the cluster's Kueue counts of a pod: requests of
  // a resource with one of these prefixes are left out of the demand
  // (Kueue's Configuration resources.excludeResourcePrefixes).
  std::vector<std::string> exclude_resource_prefixes;
};

struct PodSetDemand {
  std::string name;
  int64_t count = 0;
  ResourceList per_pod;
  ResourceList total;  // count x per_pod
};

struct WorkloadDemand {
  std::vector<PodSetDemand> pod_sets;
  ResourceList total;
  std::string never_fits;  // non-empty: why it can never be admitted here
};

// Node selector keys that name a GPU model.
inline constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
inline constexpr const char* kGantryModelLabel = "gantry.dev/accelerator-model";

// Per-pod requests of a pod spec: containers' requests (limits stand in for
// missing requests, as the apiserver defaults them), max'ed with each init
// container's.
Result<ResourceList> PodRequests(const nlohmann::json& pod_spec);

// Demand of a Workload object ({"spec":{"podSets":[...]}}).
Result<WorkloadDemand> ComputeDemand(const nlohmann::json& workload, const NodeShape& shape);

}  // namespace gantry::sim
