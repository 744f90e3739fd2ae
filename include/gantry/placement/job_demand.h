// JobDemand: what placement needs to know about one job, and nothing more.
//
// Placement defines its own input types (rather than reading the job document)
// so that it stays a pure leaf component: the dispatcher converts a JobSpec into
// a JobDemand. Quantities are milli-units as everywhere in gantry: 1 GPU = 1000,
// 1 CPU = 1000, 1 byte of memory = 1000.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gantry::placement {

// One group of identical pods (Kueue's Workload podSet).
struct PodSetDemand {
  std::string name;
  int32_t count = 1;  // pods in the set; <= 0 counts as 0
  // Per-pod requests in milli-units, keyed by resource name ("cpu", "memory",
  // "nvidia.com/gpu", ...). Non-positive values count as 0.
  std::map<std::string, int64_t> requests_milli;
};

enum class Interconnect { kAny, kNvlink, kPcie };

struct AcceleratorRequirement {
  std::string model;                      // "" = any model
  std::optional<int64_t> min_memory_gib;  // per accelerator; unset = any
  Interconnect interconnect = Interconnect::kAny;
};

// Hard constraints. Every empty list / unset field means "no constraint".
struct PlacementConstraints {
  std::vector<std::string> clusters;  // allowlist of cluster names
  std::vector<std::string> regions;   // cluster.region must be one of them
  // Zones the job's data may be processed in: the cluster must belong to at
  // least one of them (a cluster can be certified for several zones).
  std::vector<std::string> compliance_zones;
  std::map<std::string, std::string> cluster_match_labels;  // all must match
  std::optional<AcceleratorRequirement> accelerator;
  std::vector<std::string> datasets;  // the cluster must hold all of them
  // Applies only to jobs that request GPUs: a CPU-only job pays no GPU hours.
  std::optional<double> max_price_per_gpu_hour;
};

enum class DispatchMode { kAllAtOnce, kIncremental };

struct DispatchSpec {
  DispatchMode mode = DispatchMode::kAllAtOnce;
  int32_t step_size = 3;       // Incremental: clusters added per round; < 1 counts as 1
  int32_t round_seconds = 60;  // Incremental: informational here (the caller counts rounds)
};

struct JobDemand {
  // Where the job's Workload goes: its namespace and its queue, the
  // LocalQueue its spec.queueName names (LocalQueueIn maps it per cluster).
  // An empty queue: its ClusterQueue is not looked up (the summed quota applies).
  std::string ns;
  std::string queue;
  // The WorkloadPriorityClass its Workload names ("" = none): a cluster
  // where gantry cannot read its value takes no copy (queue_quota.h).
  std::string priority_class;
  std::vector<PodSetDemand> pod_sets;
  PlacementConstraints constraints;
  // Soft: datasets the job would like close by (e.g. a cache or an eval set it
  // can also stream). Scored by the data-locality term; never filters.
  std::vector<std::string> preferred_datasets;
  DispatchSpec dispatch;
  // Incremental: rounds already completed, computed by the caller from its
  // clock and round_seconds (placement never reads a clock). < 0 counts as 0.
  int32_t rounds_elapsed = 0;
};

std::string_view InterconnectName(Interconnect interconnect);  // "any" | "nvlink" | "pcie"
std::string_view DispatchModeName(DispatchMode mode);          // "AllAtOnce" | "Incremental"

}  // namespace gantry::placement
