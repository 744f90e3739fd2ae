// ClusterSnapshot: one worker cluster as the inventory sees it at one instant.
//
// Static capability (region, accelerators, node shape, price, datasets, zones)
// comes from configuration; health and capacity come from the inventory's
// connection and ClusterQueue caches. Capacity is a hint, never a promise: the
// worker's Kueue admission is the final word (DESIGN.md, principle 1).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gantry/placement/cluster_queues.h"
#include "gantry/placement/job_demand.h"

namespace gantry::placement {

// One accelerator pool in the cluster.
struct Accelerator {
  std::string model;  // e.g. "H100"
  int64_t memory_gib = 0;
  // GPUs on one node of this pool; 0 = unknown (NodeShape.gpus_per_node is used).
  int32_t gpus_per_node = 0;
  Interconnect interconnect = Interconnect::kPcie;  // kAny is not meaningful here
  bool rdma = false;
};

// The largest node a pod can land on. 0 in a field means "unknown": that
// dimension of the per-pod fit is not checked rather than failing every job.
struct NodeShape {
  int64_t cpu_milli = 0;
  int64_t memory_milli = 0;  // bytes x 1000
  int32_t gpus_per_node = 0;
  int32_t node_count = 0;
};

enum class ClusterHealth { kReady, kNotReady, kLost, kUnknown };

// One resource summed over every ClusterQueue and flavor of the cluster.
struct ResourceQuota {
  int64_t nominal_milli = 0;   // configured nominal quota
  int64_t reserved_milli = 0;  // currently reserved by admitted workloads
};

struct ClusterCapacity {
  // Summed over all ClusterQueues: what `gantry clusters` and the metrics
  // show, and what placement falls back to when it cannot tell which
  // ClusterQueue a job lands in (queue_quota.h). Resources absent from this
  // map have no quota in any ClusterQueue.
  std::map<std::string, ResourceQuota> quota;
  // Each ClusterQueue and where each LocalQueue leads, from the same
  // reading; null when the reading has none (only the sums are known).
  std::shared_ptr<const ClusterQueues> queues;
  int32_t pending_workloads = 0;
  int64_t age_ms = 0;  // how old the cached reading is (informational)
  // The reading is too old to trust: reserved usage counts as unknown, and a
  // quota shortfall is not taken as proof that the job can never run here.
  bool stale = false;
};

// Recent admission statistics measured by gantry; unset = no data yet.
struct AdmissionStats {
  int64_t latency_p50_ms = 0;
  double failure_rate = 0;  // 0..1
};

struct ClusterSnapshot {
  std::string name;  // REQUIRES: unique within one Place() call
  std::string region;
  std::string zone;
  std::string provider;
  std::vector<std::string> compliance_zones;
  std::map<std::string, std::string> labels;
  std::vector<Accelerator> accelerators;
  NodeShape node;
  std::optional<double> price_per_gpu_hour;  // on-demand; unset = unknown
  std::vector<std::string> datasets;
  // namespace -> LocalQueue name where it is not the job's queue name
  // (LocalQueueIn; a clusters.d file's localQueues).
  std::map<std::string, std::string> local_queues;
  bool cordoned = false;
  bool declared_lost = false;  // an operator says it is gone: excluded, as cordoned
  // Resources the cluster's Kueue does not count (its excludeResourcePrefixes):
  // a request of one needs no quota there.
  std::vector<std::string> exclude_resource_prefixes;
  // Its file is refused, so nothing but its name is known (the inventory
  // holds it): excluded first and never permanently, since its region,
  // accelerators and queues are not what the empty fields say.
  bool config_refused = false;
  // Its kubeconfig does not load (the inventory's credentials_error): not
  // probed, health Unknown; told as such rather than as an unknown health.
  bool credentials_unloadable = false;
  // Its quota has not been read since the daemon started or it joined the
  // inventory (capacity is then empty and stale): a shortfall is told as
  // that, not as "no ClusterQueue has quota".
  bool capacity_unread = false;
  ClusterHealth health = ClusterHealth::kUnknown;
  // Why it answers its probes but not gantry's requests ("" when it does):
  // excluded, as not Ready.
  std::string stalled;
  ClusterCapacity capacity;
  std::optional<AdmissionStats> admission;
};

std::string_view ClusterHealthName(ClusterHealth health);  // "Ready", "NotReady", ...

}  // namespace gantry::placement
