// ClusterQueues: a worker cluster's Kueue queues as one probe read them,
// for placement to judge a job against the quota that applies to it.
//
// Kueue's rule: a Workload's spec.queueName names a LocalQueue in the
// Workload's namespace; the LocalQueue's spec.clusterQueue names the
// ClusterQueue whose quota admits it. A ClusterQueue covers resources in
// resource groups, each with flavors that carry a nominal quota per
// resource; in a cohort it may borrow the unused quota of the cohort's
// other ClusterQueues (up to its borrowingLimit, if set). Summing every
// ClusterQueue of a cluster into one figure (ClusterCapacity::quota) says
// nothing about the one a job is submitted to (queue_quota.h).
//
// A probe builds one value and shares it (std::shared_ptr<const>): every
// placement copies the snapshot, and the copy must stay cheap.
//
// Thread-safety: plain values, immutable once shared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gantry::placement {

// One resource in one flavor of a ClusterQueue. Quantities are milli-units.
struct FlavorQuota {
  std::string flavor;
  int64_t nominal_milli = 0;
  // Unset: no limit on what it may borrow from its cohort (Kueue's default).
  std::optional<int64_t> borrowing_limit_milli;
  int64_t reserved_milli = 0;  // status.flavorsReservation: what admitted Workloads hold
};

// The ClusterQueue's Active condition: Kueue sets it False while e.g. a
// flavor or an admission check it names is missing, and admits nothing
// then. kUnknown: no such condition (not reconciled yet).
enum class QueueActivity { kUnknown, kActive, kInactive };

struct ClusterQueueInfo {
  std::string name;
  std::string cohort;  // "" = none (v1beta2 spec.cohortName, v1beta1 spec.cohort)
  QueueActivity activity = QueueActivity::kUnknown;
  std::string inactive_message;  // the Active condition's reason and message when not Active
  // Covered resource -> its flavors, in the resource group's order. A
  // resource not in this map is covered by no resource group: Kueue never
  // admits a Workload that asks for it.
  std::map<std::string, std::vector<FlavorQuota>> resources;
};

struct ClusterQueues {
  std::map<std::string, ClusterQueueInfo> by_name;
  // Whether the LocalQueues could be listed. False (a 403, a failed list):
  // which ClusterQueue a job lands in is unknown, `local_queues` is empty.
  bool local_queues_known = false;
  // "namespace/name" of every LocalQueue -> its spec.clusterQueue.
  std::map<std::string, std::string> local_queues;
  std::string local_queues_error;  // why they are unknown, for the operator
  // Kueue's WorkloadPriorityClasses (cluster-scoped): name -> value, the
  // priority a Workload that names the class must carry. Known false when
  // they could not be listed (RBAC, a 404): then a job that names one
  // cannot be given its value there.
  bool priority_classes_known = false;
  std::map<std::string, int32_t> priority_classes;
  std::string priority_classes_error;
  // Changes when where a LocalQueue may be used changes (a LocalQueue or
  // ClusterQueue appears or goes, a ClusterQueue turns Active or not, its
  // nominal quota, borrowing limit or cohort changes): the engine then
  // looks again at the jobs that wait for one, Unschedulable ones too
  // (QueuesStamp).
  uint64_t stamp = 0;
};

// The stamp of `queues`: a hash of each LocalQueue with its ClusterQueue and
// that one's activity, of each ClusterQueue's cohort and nominal quota and
// borrowing limit per flavor (not what it has reserved), and of each
// WorkloadPriorityClass's name (0 when neither list is known).
uint64_t QueuesStamp(const ClusterQueues& queues);

// The LocalQueue a Workload for a gantry queue `queue` in namespace `ns`
// names in a cluster: the cluster's mapping for `ns` if it has one (a
// clusters.d file's localQueues), else `queue` itself. The one rule for the
// Workload's spec.queueName and for placement alike.
const std::string& LocalQueueIn(const std::map<std::string, std::string>& mapping,
                                const std::string& ns, const std::string& queue);

}  // namespace gantry::placement
