#include "workload_index.h"

#include "kueue_controller.h"

namespace gantry::sim {

using nlohmann::json;

void WorkloadIndex::Count(const Entry& e, int64_t delta) {
  if (e.phase == Phase::kFinished) return;
  QueueCounts& q = per_queue_[e.queue];
  for (QueueCounts* c : {&total_, &q}) {
    if (e.phase == Phase::kPending) {
      c->pending += delta;
    } else {
      c->reserving += delta;
      if (e.phase == Phase::kAdmitted) c->admitted += delta;
    }
  }
  if (q == QueueCounts{}) per_queue_.erase(e.queue);
}

void WorkloadIndex::OnEvent(const std::string& type, const json& wl) {
  std::string key = NamespaceOf(wl) + "/" + NameOf(wl);
  auto it = entries_.find(key);
  if (it != entries_.end()) Count(it->second, -1);
  if (type == "DELETED") {
    if (it != entries_.end()) entries_.erase(it);
    waiting_.erase(key);
    return;
  }
  if (it == entries_.end()) it = entries_.emplace(key, Entry{}).first;
  Entry& e = it->second;
  static const json kNoSpec = json::object();
  auto spec_it = wl.find("spec");
  const json& spec = spec_it != wl.end() && spec_it->is_object() ? *spec_it : kNoSpec;
  e.queue = NamespaceOf(wl) + "/" + spec.value("queueName", "");
  e.generation = wl["metadata"].value("generation", int64_t{1});
  // The same tests, in the same order, as the status counts and the
  // admission scan made when they walked the store.
  bool reserved = HasCondition(wl, "QuotaReserved");
  bool finished = HasCondition(wl, "Finished");
  if (finished) {
    e.phase = Phase::kFinished;
  } else if (reserved) {
    e.phase = HasCondition(wl, "Admitted") ? Phase::kAdmitted : Phase::kReserving;
  } else {
    e.phase = Phase::kPending;
  }
  Count(e, +1);
  // An evicted Workload waits again only once requeued (after an admission
  // check's Retry); one preempted by `gantry-sim ctl evict` stays out.
  bool evicted = HasCondition(wl, "Evicted") && !HasCondition(wl, "Requeued");
  bool waiting = !reserved && !finished && !evicted && spec.value("active", true);
  if (waiting) {
    waiting_.insert(key);
  } else {
    waiting_.erase(key);
  }
}

const Result<WorkloadDemand>& WorkloadIndex::Demand(const std::string& key, const json& wl) {
  Entry& e = entries_.at(key);
  if (!e.demand || e.demand_generation != e.generation) {
    e.demand = ComputeDemand(wl, shape_);
    e.demand_generation = e.generation;
  }
  return *e.demand;
}

QueueCounts WorkloadIndex::ForQueue(const std::string& ns_queue) const {
  auto it = per_queue_.find(ns_queue);
  return it == per_queue_.end() ? QueueCounts{} : it->second;
}

}  // namespace gantry::sim
