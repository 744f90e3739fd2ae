#include "gantry/placement/cluster_queues.h"

#include <functional>

namespace gantry::placement {

const std::string& LocalQueueIn(const std::map<std::string, std::string>& mapping,
                                const std::string& ns, const std::string& queue) {
  auto it = mapping.find(ns);
  return it == mapping.end() ? queue : it->second;
}

uint64_t QueuesStamp(const ClusterQueues& queues) {
  if (!queues.local_queues_known && !queues.priority_classes_known) return 0;
  uint64_t stamp = queues.local_queues.size() + 1;
  auto mix = [&stamp](uint64_t h) { stamp ^= h + 0x9e3779b97f4a7c15ULL + (stamp << 6) + (stamp >> 2); };
  std::hash<std::string> hash;
  // A job waiting for its class is looked at again when one appears.
  mix(queues.priority_classes_known ? queues.priority_classes.size() + 1 : 0);
  for (const auto& [name, value] : queues.priority_classes) mix(hash(name));
  for (const auto& [local_queue, cluster_queue] : queues.local_queues) {  // in key order
    mix(hash(local_queue));
    mix(hash(cluster_queue));
    auto cq = queues.by_name.find(cluster_queue);
    mix(cq == queues.by_name.end() ? 0 : 1 + static_cast<uint64_t>(cq->second.activity));
  }
  // What each ClusterQueue may hold at most (not what it holds now): a
  // quota raised may let a job go there that no cluster could ever run
  // before (Unschedulable), and nothing else wakes it.
  for (const auto& [name, cq] : queues.by_name) {
    mix(hash(name));
    mix(hash(cq.cohort));
    for (const auto& [resource, flavors] : cq.resources) {
      mix(hash(resource));
      for (const FlavorQuota& f : flavors) {
        mix(hash(f.flavor));
        mix(static_cast<uint64_t>(f.nominal_milli));
        mix(f.borrowing_limit_milli ? static_cast<uint64_t>(*f.borrowing_limit_milli) + 1 : 0);
      }
    }
  }
  return stamp;
}

}  // namespace gantry::placement
