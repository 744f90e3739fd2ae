#include "filters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gantry/placement/quantity_format.h"
#include "queue_quota.h"

namespace gantry::placement {
namespace {

// Why a cluster that is not Ready takes no job, in words a tenant may read.
std::string NotReadyWhy(ClusterHealth health) {
  switch (health) {
    case ClusterHealth::kNotReady:
      return "NotReady: gantry cannot reach it, or follow what runs there, now";
    case ClusterHealth::kLost:
      return "Lost: out of gantry's reach for longer than its loss timeout allows";
    case ClusterHealth::kUnknown:
    case ClusterHealth::kReady:
      break;
  }
  return "Unknown: not probed yet (gantry just started, or the cluster was just added)";
}

constexpr int64_t kMilli = 1000;

using Check = std::optional<Exclusion>;

bool Contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

Check Exclude(Filter filter, std::string message) {
  return Exclusion{filter, std::move(message), IsPermanentFilter(filter)};
}

Check CheckAllowlist(const PlacementConstraints& c, const ClusterSnapshot& cluster) {
  if (c.clusters.empty() || Contains(c.clusters, cluster.name)) return std::nullopt;
  return Exclude(Filter::kAllowlist, fmt::format("cluster {} not in allowlist {}", cluster.name,
                                                 FormatList(c.clusters)));
}

Check CheckRegion(const PlacementConstraints& c, const ClusterSnapshot& cluster) {
  if (c.regions.empty() || Contains(c.regions, cluster.region)) return std::nullopt;
  return Exclude(Filter::kRegion,
                 fmt::format("region {} not in {}", cluster.region, FormatList(c.regions)));
}

Check CheckComplianceZone(const PlacementConstraints& c, const ClusterSnapshot& cluster) {
  if (c.compliance_zones.empty()) return std::nullopt;
  for (const std::string& zone : cluster.compliance_zones) {
    if (Contains(c.compliance_zones, zone)) return std::nullopt;
  }
  return Exclude(Filter::kComplianceZone,
                 fmt::format("compliance zones {} not in {}", FormatList(cluster.compliance_zones),
                             FormatList(c.compliance_zones)));
}

Check CheckLabels(const PlacementConstraints& c, const ClusterSnapshot& cluster) {
  for (const auto& [key, value] : c.cluster_match_labels) {
    auto it = cluster.labels.find(key);
    if (it == cluster.labels.end()) {
      return Exclude(Filter::kClusterLabels,
                     fmt::format("label {}={} required; cluster has no label {}", key, value, key));
    }
    if (it->second != value) {
      return Exclude(Filter::kClusterLabels, fmt::format("label {}={} required; cluster has {}={}",
                                                         key, value, key, it->second));
    }
  }
  return std::nullopt;
}

// "[A100 80 GiB nvlink, L4 24 GiB pcie]", written into one buffer: this runs
// for every excluded cluster, so it avoids a string per pool.
std::string DescribePools(const std::vector<Accelerator>& pools) {
  std::string out = "[";
  for (size_t i = 0; i < pools.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "{}{} {} GiB {}", i == 0 ? "" : ", ", pools[i].model,
                   pools[i].memory_gib, InterconnectName(pools[i].interconnect));
  }
  out += "]";
  return out;
}

Check CheckAccelerator(const JobDemand& job, const GangDemand& demand,
                       const ClusterSnapshot& cluster, const PlacementOptions& options) {
  const auto& req = job.constraints.accelerator;
  if (req) {
    for (const Accelerator& a : cluster.accelerators) {
      if (AcceleratorMatches(a, *req)) return std::nullopt;
    }
    return Exclude(Filter::kAccelerator,
                   fmt::format("no accelerator matches {}; cluster has {}", demand.accelerator_text,
                               DescribePools(cluster.accelerators)));
  }
  if (demand.needs_gpu() && cluster.accelerators.empty()) {
    return Exclude(Filter::kAccelerator,
                   fmt::format("needs {} {}; cluster has no accelerators",
                               FormatQuantity(options.gpu_resource, demand.gpu_total_milli),
                               options.gpu_resource));
  }
  return std::nullopt;
}

Check CheckDatasets(const PlacementConstraints& c, const ClusterSnapshot& cluster) {
  std::vector<std::string> missing;
  for (const std::string& dataset : c.datasets) {
    if (!Contains(cluster.datasets, dataset)) missing.push_back(dataset);
  }
  if (missing.empty()) return std::nullopt;
  return Exclude(Filter::kDatasets, fmt::format("missing datasets {}", FormatList(missing)));
}

Check CheckPrice(const PlacementConstraints& c, const GangDemand& demand,
                 const ClusterSnapshot& cluster) {
  if (!c.max_price_per_gpu_hour || !demand.needs_gpu()) return std::nullopt;
  const double ceiling = *c.max_price_per_gpu_hour;
  const std::optional<double> price = KnownPrice(cluster);
  if (!price) {
    return Exclude(Filter::kPrice,
                   fmt::format("price per GPU hour unknown; ceiling {:.2f}", ceiling));
  }
  if (*price <= ceiling) return std::nullopt;
  return Exclude(Filter::kPrice,
                 fmt::format("price {:.2f} per GPU hour above ceiling {:.2f}", *price, ceiling));
}

Check NodeFitFailure(const PodMax& pod, std::string_view resource, int64_t node_milli) {
  if (node_milli <= 0 || pod.milli <= node_milli) return std::nullopt;
  return Exclude(Filter::kNodeFit, fmt::format("pod set '{}' needs {} {} per pod; nodes have {}",
                                               pod.pod_set, FormatQuantity(resource, pod.milli),
                                               resource, FormatQuantity(resource, node_milli)));
}

Check CheckNodeFit(const JobDemand& job, const GangDemand& demand, const ClusterSnapshot& cluster,
                   const PlacementOptions& options) {
  if (demand.max_gpu.milli > 0) {
    const int64_t gpus = GpusPerNodeFor(job, cluster);
    if (auto fail = NodeFitFailure(demand.max_gpu, options.gpu_resource, gpus * kMilli))
      return fail;
  }
  if (auto fail = NodeFitFailure(demand.max_cpu, "cpu", cluster.node.cpu_milli)) return fail;
  return NodeFitFailure(demand.max_memory, "memory", cluster.node.memory_milli);
}

}  // namespace

bool AcceleratorMatches(const Accelerator& a, const AcceleratorRequirement& req) {
  if (!req.model.empty() && a.model != req.model) return false;
  if (req.min_memory_gib && a.memory_gib < *req.min_memory_gib) return false;
  return req.interconnect == Interconnect::kAny || a.interconnect == req.interconnect;
}

std::optional<double> KnownPrice(const ClusterSnapshot& cluster) {
  const auto& price = cluster.price_per_gpu_hour;
  if (!price || !std::isfinite(*price) || *price < 0) return std::nullopt;
  return price;
}

int64_t GpusPerNodeFor(const JobDemand& job, const ClusterSnapshot& cluster) {
  int64_t best = 0;
  for (const Accelerator& a : cluster.accelerators) {
    if (job.constraints.accelerator && !AcceleratorMatches(a, *job.constraints.accelerator)) {
      continue;
    }
    best =
        std::max<int64_t>(best, a.gpus_per_node > 0 ? a.gpus_per_node : cluster.node.gpus_per_node);
  }
  return best;
}

std::optional<Exclusion> CheckFilters(const JobDemand& job, const GangDemand& demand,
                                      const ClusterSnapshot& cluster,
                                      const PlacementOptions& options) {
  const PlacementConstraints& c = job.constraints;
  if (auto x = CheckAllowlist(c, cluster)) return x;
  if (cluster.config_refused) {
    return Exclude(Filter::kHealth,
                   "its cluster file is refused, or held (gantry clusters says why); nothing is known of it until a "
                   "reload loads it");
  }
  if (auto x = CheckRegion(c, cluster)) return x;
  if (auto x = CheckComplianceZone(c, cluster)) return x;
  if (auto x = CheckLabels(c, cluster)) return x;
  if (auto x = CheckAccelerator(job, demand, cluster, options)) return x;
  if (auto x = CheckDatasets(c, cluster)) return x;
  if (auto x = CheckPrice(c, demand, cluster)) return x;
  if (auto x = CheckNodeFit(job, demand, cluster, options)) return x;
  // A shortfall the cluster can never pass is told first; one that may pass
  // last: an operator's cordon, an outage or stalled requests say more (the
  // quota of a cluster out of reach is what was last read, or, after a start
  // during the outage, nothing at all: "no ClusterQueue has quota").
  std::optional<Exclusion> quota = CheckQuota(job, demand, cluster);
  if (quota && quota->permanent) return quota;
  if (cluster.declared_lost) return Exclude(Filter::kCordoned, "declared lost by an operator");
  if (cluster.cordoned) return Exclude(Filter::kCordoned, "cordoned by an operator");
  // (Its error, a path or a plugin's words, is the operator's: not told on a tenant's job.)
  if (cluster.credentials_unloadable && cluster.health != ClusterHealth::kReady) {
    return Exclude(Filter::kHealth, "its kubeconfig does not load (gantry clusters says why), not Ready");
  }
  if (cluster.health != ClusterHealth::kReady) return Exclude(Filter::kHealth, NotReadyWhy(cluster.health));
  if (!cluster.stalled.empty()) return Exclude(Filter::kHealth, "its requests stall: " + cluster.stalled);
  // Ready, but nothing of its quota read yet (the first reading is on its
  // way, or ClusterQueues do not list: the operator's to see).
  if (quota && cluster.capacity_unread) {
    return Exclusion{Filter::kQuota, "its quota has not been read yet (gantry clusters says why if it cannot be)",
                     false};
  }
  if (quota) return quota;
  return CheckPriorityClass(job, cluster);
}

}  // namespace gantry::placement
