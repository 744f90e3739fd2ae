#include "queue_quota.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "gantry/common/names.h"
#include "gantry/placement/quantity_format.h"

namespace gantry::placement {
namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

int64_t NonNegative(int64_t v) { return std::max<int64_t>(0, v); }

// Whether the cluster's Kueue leaves the resource out of its accounting
// (excludeResourcePrefixes): a request of it needs no quota there.
bool NotCounted(const ClusterSnapshot& cluster, std::string_view resource) {
  return std::any_of(cluster.exclude_resource_prefixes.begin(), cluster.exclude_resource_prefixes.end(),
                     [&](const std::string& prefix) { return resource.starts_with(prefix); });
}

// What a ClusterQueue can hold of one resource, over the flavors that cover it.
//
// The bound must never be below what Kueue could admit, or a job that fits
// is made Unschedulable (lost work); too high only lets a job wait (it has
// dispatch.timeoutSeconds). So:
//   - Without a cohort: the sum over its flavors of nominalQuota. A pod set
//     takes one flavor per resource group, so a gang may spread over the
//     flavors, never beyond their sum. Certain.
//   - In a cohort, every flavor may add what it borrows. With a
//     borrowingLimit on every flavor, the sum of nominal + borrowingLimit is
//     certain: Kueue never lends it more, whoever lends. Without one on some
//     flavor nothing gantry reads bounds it: a Cohort object (v1beta2's, or
//     v1alpha1's before it) may hold quota of its own, and parent cohorts
//     more. No certain bound then.
//   Between the two (more than its own, less than the certain bound, or no
//   bound) the cluster stays a candidate, not fitting now: what the cohort
//   may lend comes also from queues gantry does not read (a Cohort object's
//   own quota, sibling cohorts under a parent), so only Kueue can tell.
struct QueueBound {
  int64_t nominal = 0;
  int64_t certain = kUnbounded;  // kUnbounded: none
};

int64_t NominalOf(const std::vector<FlavorQuota>& flavors) {
  int64_t sum = 0;
  for (const FlavorQuota& f : flavors) sum = SaturatingAdd(sum, NonNegative(f.nominal_milli));
  return sum;
}

QueueBound BoundOf(const ClusterQueueInfo& cq, const std::vector<FlavorQuota>& flavors) {
  QueueBound b;
  b.nominal = NominalOf(flavors);
  if (cq.cohort.empty()) {
    b.certain = b.nominal;
    return b;
  }
  int64_t certain = b.nominal;
  bool limited = true;
  for (const FlavorQuota& f : flavors) {
    const int64_t limit =
        f.borrowing_limit_milli ? NonNegative(*f.borrowing_limit_milli) : kUnbounded;
    limited = limited && f.borrowing_limit_milli.has_value();
    certain = SaturatingAdd(certain, limit);
  }
  if (limited) b.certain = certain;
  return b;
}

std::string QueueName(const JobQueue& q) {
  return fmt::format("ClusterQueue {} (LocalQueue {})", q.cluster_queue->name, q.local_queue);
}

std::optional<Exclusion> CheckInQueue(const GangDemand& demand, const ClusterSnapshot& cluster,
                                      const JobQueue& q) {
  const ClusterQueueInfo& cq = *q.cluster_queue;
  // Proof of "never" needs a fresh reading of a queue Kueue admits from.
  const bool final = !cluster.capacity.stale && cq.activity == QueueActivity::kActive;
  for (const ResourceTotal& total : demand.totals) {
    if (NotCounted(cluster, total.resource)) continue;
    const std::string needs =
        fmt::format("needs {} {}", FormatQuantity(total.resource, total.milli), total.resource);
    auto it = cq.resources.find(total.resource);
    if (it == cq.resources.end()) {
      return Exclusion{
          Filter::kQuota,
          fmt::format("{}; {} has no quota for {}", needs, QueueName(q), total.resource), final};
    }
    if (total.milli <= NominalOf(it->second)) continue;
    const QueueBound b = BoundOf(cq, it->second);
    auto amount = [&](int64_t milli) { return FormatQuantity(total.resource, milli); };
    if (total.milli > b.certain) {
      std::string message =
          cq.cohort.empty()
              ? fmt::format("{}; {} holds at most {}", needs, QueueName(q), amount(b.nominal))
              : fmt::format(
                    "{}; {} holds at most {}: {} of its own and at most {} borrowed in cohort {}",
                    needs, QueueName(q), amount(b.certain), amount(b.nominal),
                    amount(b.certain - b.nominal), cq.cohort);
      return Exclusion{Filter::kQuota, std::move(message), final};
    }
  }
  return std::nullopt;
}

// The sums over all ClusterQueues, when the job's own is not known.
std::optional<Exclusion> CheckSums(const GangDemand& demand, const ClusterSnapshot& cluster) {
  const ClusterCapacity& capacity = cluster.capacity;
  // Proof of "never" only from a fresh reading that never knew better (no
  // queue description): one that describes its queues but not where the
  // job lands must not make it Unschedulable on a sum.
  const bool final = !capacity.stale && !capacity.queues;
  for (const ResourceTotal& total : demand.totals) {
    if (NotCounted(cluster, total.resource)) continue;
    auto it = capacity.quota.find(total.resource);
    const int64_t nominal = it == capacity.quota.end() ? 0 : NonNegative(it->second.nominal_milli);
    if (total.milli <= nominal) continue;
    const std::string needs =
        fmt::format("needs {} {}", FormatQuantity(total.resource, total.milli), total.resource);
    std::string message =
        it == capacity.quota.end()
            ? fmt::format("{}; no ClusterQueue has quota for {}", needs, total.resource)
            : fmt::format("{}; the cluster's ClusterQueues hold {} in all", needs,
                          FormatQuantity(total.resource, nominal));
    return Exclusion{Filter::kQuota, std::move(message), final};
  }
  return std::nullopt;
}

}  // namespace

std::optional<JobQueue> FindJobQueue(const JobDemand& job, const ClusterSnapshot& cluster) {
  const ClusterQueues* all = cluster.capacity.queues.get();
  if (!all || !all->local_queues_known || job.queue.empty()) return std::nullopt;
  JobQueue q;
  q.local_queue = job.ns + "/" + LocalQueueIn(cluster.local_queues, job.ns, job.queue);
  // Never permanent: an operator may create or fix the queue, and nothing
  // terminal may follow from its absence.
  auto unusable = [&](std::string message) {
    q.unusable = Exclusion{Filter::kQuota, std::move(message), false};
    return q;
  };
  auto lq = all->local_queues.find(q.local_queue);
  if (lq == all->local_queues.end()) {
    return unusable(
        fmt::format("LocalQueue {} does not exist here (Kueue would leave a Workload copy pending)",
                    q.local_queue));
  }
  auto cq = all->by_name.find(lq->second);
  if (cq == all->by_name.end()) {
    return unusable(fmt::format("LocalQueue {} names ClusterQueue {}, which does not exist here",
                                q.local_queue, lq->second));
  }
  if (cq->second.activity == QueueActivity::kInactive) {
    const std::string& why = cq->second.inactive_message;
    return unusable(fmt::format("ClusterQueue {} (LocalQueue {}) is not Active{}{}", lq->second,
                                q.local_queue, why.empty() ? "" : ": ", why));
  }
  q.cluster_queue = &cq->second;
  return q;
}

std::optional<Exclusion> CheckQuota(const JobDemand& job, const GangDemand& demand,
                                    const ClusterSnapshot& cluster) {
  if (!job.queue.empty()) {
    const std::string& mapped = LocalQueueIn(cluster.local_queues, job.ns, job.queue);
    if (&mapped != &job.queue) {
      if (std::string e = CheckQueueName(mapped); !e.empty()) {
        return Exclusion{Filter::kQuota,
                         fmt::format("the cluster's localQueues maps namespace {} to LocalQueue {}, which {}; fix "
                                     "its clusters.d file",
                                     job.ns, mapped, e),
                         false};
      }
    }
  }
  if (std::optional<JobQueue> q = FindJobQueue(job, cluster)) {
    if (q->unusable) return std::move(q->unusable);
    return CheckInQueue(demand, cluster, *q);
  }
  return CheckSums(demand, cluster);
}

std::optional<Exclusion> CheckPriorityClass(const JobDemand& job, const ClusterSnapshot& cluster) {
  if (job.priority_class.empty()) return std::nullopt;
  // Never permanent: an operator may create the class, or grant the list.
  const ClusterQueues* all = cluster.capacity.queues.get();
  if (!all || !all->priority_classes_known) {
    return Exclusion{Filter::kPriorityClass,
                     fmt::format("the job names WorkloadPriorityClass {}, and gantry cannot read this cluster's "
                                 "classes for its value{}{}",
                                 job.priority_class, all ? ": " : "", all ? all->priority_classes_error : ""),
                     false};
  }
  if (!all->priority_classes.count(job.priority_class)) {
    return Exclusion{Filter::kPriorityClass,
                     fmt::format("WorkloadPriorityClass {} does not exist here", job.priority_class), false};
  }
  return std::nullopt;
}

Headroom ComputeHeadroom(const JobDemand& job, const GangDemand& demand,
                         const ClusterSnapshot& cluster) {
  if (cluster.capacity.stale) return {};  // reserved usage unknown: no credit either way
  const std::optional<JobQueue> q = FindJobQueue(job, cluster);
  const ClusterQueueInfo* cq = q ? q->cluster_queue : nullptr;
  Headroom out{true, 1.0};
  for (const ResourceTotal& total : demand.totals) {
    if (NotCounted(cluster, total.resource)) continue;
    int64_t nominal = 0;
    int64_t free = 0;
    if (cq) {
      auto it = cq->resources.find(total.resource);
      if (it == cq->resources.end()) return {};  // unreachable after the quota filter
      for (const FlavorQuota& f : it->second) {
        const int64_t n = NonNegative(f.nominal_milli);
        const int64_t r = NonNegative(f.reserved_milli);
        nominal = SaturatingAdd(nominal, n);
        free = SaturatingAdd(free, n > r ? n - r : 0);  // a borrowing flavor has none free
      }
    } else {
      auto it = cluster.capacity.quota.find(total.resource);
      if (it == cluster.capacity.quota.end()) return {};  // unreachable after the quota filter
      nominal = NonNegative(it->second.nominal_milli);
      // Both operands are non-negative, so the subtraction cannot overflow.
      free = nominal - NonNegative(it->second.reserved_milli);
    }
    if (free < total.milli) return {};
    const double after = static_cast<double>(free - total.milli);
    out.free_fraction =
        std::min(out.free_fraction, nominal > 0 ? after / static_cast<double>(nominal) : 0.0);
  }
  return out;
}

}  // namespace gantry::placement
