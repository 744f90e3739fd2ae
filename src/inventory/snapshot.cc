#include "gantry/inventory/snapshot.h"

#include <algorithm>

namespace gantry::inventory {

placement::ClusterSnapshot ToClusterSnapshot(const ClusterConfig& config) {
  placement::ClusterSnapshot s;
  s.name = config.name;
  s.region = config.region;
  s.zone = config.zone;
  s.provider = config.provider;
  s.compliance_zones = config.compliance_zones;
  s.labels = config.labels;
  s.datasets = config.datasets;
  s.exclude_resource_prefixes = config.exclude_resource_prefixes;
  s.local_queues = config.local_queues;
  s.cordoned = config.cordoned;
  s.declared_lost = config.declared_lost;
  s.price_per_gpu_hour = config.price_per_gpu_hour.on_demand;
  for (const AcceleratorConfig& a : config.accelerators) {
    placement::Accelerator out;
    out.model = a.model;
    out.memory_gib = a.memory_gib;
    out.gpus_per_node = a.gpus_per_node;
    out.interconnect = a.interconnect == AcceleratorInterconnect::kNvlink
                           ? placement::Interconnect::kNvlink
                           : placement::Interconnect::kPcie;
    out.rdma = a.rdma;
    s.accelerators.push_back(std::move(out));
    // The node shape describes the largest node; its GPU count is that of
    // the richest pool.
    s.node.gpus_per_node = std::max(s.node.gpus_per_node, a.gpus_per_node);
  }
  if (config.nodes) {
    s.node.cpu_milli = config.nodes->cpu_milli;
    s.node.memory_milli = config.nodes->memory_milli;
    s.node.node_count = config.nodes->count;
  }
  return s;
}

placement::ClusterHealth ToPlacementHealth(const ClusterHealth& health, int64_t now_ms,
                                           int64_t lost_timeout_ms) {
  switch (health.state) {
    case HealthState::kReady:
      return placement::ClusterHealth::kReady;
    case HealthState::kUnknown:
      return placement::ClusterHealth::kUnknown;
    case HealthState::kNotReady:
      break;
  }
  return health.first_lost_ms && health.LostForMs(now_ms) >= lost_timeout_ms
             ? placement::ClusterHealth::kLost
             : placement::ClusterHealth::kNotReady;
}

}  // namespace gantry::inventory
