// WorkloadIndex: what the simulated Kueue needs to know about every Workload
// of one cluster, kept current from the store's change events so that a tick
// never rescans the store:
// - which Workloads wait for admission (neither reserved, finished, evicted
//   without being requeued, nor inactive), in key order, the order a scan
//   of the store visits them;
// - each waiting Workload's demand, computed once per spec generation;
// - the pending / reserving / admitted counts, in total and per LocalQueue,
//   that ClusterQueue and LocalQueue status report (Finished ones excluded).
//
// Fed with every Workload event, whoever caused it (the controller's own
// writes, API patches, deletes), it cannot drift from the store.
//
// Thread-safety: none; the owning ClusterState serializes all calls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "demand.h"
#include "object_store.h"

namespace gantry::sim {

struct QueueCounts {
  int64_t pending = 0;
  int64_t reserving = 0;
  int64_t admitted = 0;

  bool operator==(const QueueCounts&) const = default;
};

class WorkloadIndex {
 public:
  explicit WorkloadIndex(NodeShape shape) : shape_(std::move(shape)) {}

  // One Workload event (ADDED, MODIFIED, DELETED) in store order, with the
  // Workload as it is now (as deleted).
  void OnEvent(const std::string& type, const nlohmann::json& wl);

  // Keys ("namespace/name") of the Workloads waiting for admission, sorted.
  const std::set<std::string>& waiting() const { return waiting_; }
  // The demand of a Workload the index holds (computed on first use and
  // again after its spec changed). REQUIRES: key is indexed and wl is its
  // stored object.
  const Result<WorkloadDemand>& Demand(const std::string& key, const nlohmann::json& wl);

  const QueueCounts& total() const { return total_; }
  // Counts of LocalQueue "namespace/queue"; zeros when it has no Workloads.
  QueueCounts ForQueue(const std::string& ns_queue) const;

 private:
  enum class Phase { kFinished, kPending, kReserving, kAdmitted };
  struct Entry {
    std::string queue;  // "namespace/queueName"
    Phase phase = Phase::kPending;
    int64_t generation = 0;
    int64_t demand_generation = -1;  // generation the cached demand is of
    std::optional<Result<WorkloadDemand>> demand;
  };

  void Count(const Entry& e, int64_t delta);

  NodeShape shape_;
  std::map<std::string, Entry> entries_;  // workload key -> facts
  std::set<std::string> waiting_;
  QueueCounts total_;
  std::map<std::string, QueueCounts> per_queue_;
};

}  // namespace gantry::sim
