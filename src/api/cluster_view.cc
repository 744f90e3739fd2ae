#include "gantry/api/cluster_view.h"

#include <cstdlib>

#include "gantry/common/clock.h"
#include "gantry/job/quantity.h"
#include "gantry/placement/quantity_format.h"

namespace gantry::api {

nlohmann::json ClusterToJson(const inventory::ClusterView& view, int64_t now_ms, int64_t stale_after_ms) {
  const inventory::ClusterConfig& c = view.config;
  nlohmann::json accelerators = nlohmann::json::array();
  for (const auto& a : c.accelerators) {
    accelerators.push_back({{"model", a.model},
                            {"memoryGiB", a.memory_gib},
                            {"gpusPerNode", a.gpus_per_node},
                            {"interconnect", a.interconnect == inventory::AcceleratorInterconnect::kNvlink ? "nvlink" : "pcie"},
                            {"rdma", a.rdma}});
  }
  nlohmann::json spec = {{"region", c.region},
                         {"zone", c.zone},
                         {"provider", c.provider},
                         {"complianceZones", c.compliance_zones},
                         {"labels", c.labels},
                         {"accelerators", accelerators},
                         {"datasets", c.datasets},
                         {"cordoned", c.cordoned},
                         {"declaredLost", c.declared_lost},
                         {"kueueAPIVersion", inventory::KueueApiVersionName(c.kueue_api_version)}};
  if (c.price_per_gpu_hour.on_demand) spec["pricePerGPUHour"] = *c.price_per_gpu_hour.on_demand;
  const inventory::ClusterHealth& h = view.health;
  // One gantry cannot reach (its file or its kubeconfig refused) is not
  // probed: whatever it last showed, nothing is known of it now, as
  // placement takes it, and no outage of it runs.
  const bool reached = view.Usable();
  nlohmann::json status = {{"health", inventory::HealthStateName(reached ? h.state : inventory::HealthState::kUnknown)}};
  if (h.since_ms && reached) status["since"] = FormatRfc3339(h.since_ms);
  if (h.first_lost_ms && reached) status["firstLostAt"] = FormatRfc3339(*h.first_lost_ms);
  // The last probe that failed, and how many in a row: its probes back off
  // with them (5 s, doubling, at most 30 s apart).
  // Ready, with a failed probe short of probeFailureThreshold: the same.
  const bool failing = h.state == inventory::HealthState::kNotReady || h.Doubted();
  if (failing && h.last_failure_ms > 0 && reached) {
    status["lastProbeFailedAt"] = FormatRfc3339(h.last_failure_ms);
    status["failedProbes"] = h.consecutive_failures;
  }
  // Up, refusing gantry's credentials: NotReady, lost only after the longer
  // credentialsRefusedTimeoutSeconds (cluster_health.h).
  if (h.Refusing() && reached) status["credentialsRefused"] = true;
  // Ready again, its last failure is history: shown under another name, so
  // that a script or an operator reading lastError sees only a live one.
  if (!h.last_error.empty() && reached) {
    status[h.state == inventory::HealthState::kReady && !failing ? "recoveredFrom" : "lastError"] = h.last_error;
  }  // else: configError, credentialsError
  if (!view.capacity_error.empty()) status["capacityError"] = view.capacity_error;
  if (!view.credentials_error.empty()) status["credentialsError"] = view.credentials_error;
  if (!view.config_error.empty()) status["configError"] = view.config_error;
  if (!view.cluster_id.empty() && reached) status["clusterID"] = view.cluster_id;  // its kube-system Namespace's uid
  // Its clock's offset from gantry's, once it is past what a Date header
  // can tell (about a second).
  if (view.clock_offset_ms && std::abs(*view.clock_offset_ms) >= 2'000 && reached) {
    status["clockOffsetSeconds"] = *view.clock_offset_ms / 1000;
  }
  if (!view.credentials_warning.empty()) status["credentialsWarning"] = view.credentials_warning;
  if (!view.config_warning.empty()) status["configWarning"] = view.config_warning;
  if (view.capacity) {
    nlohmann::json resources = nlohmann::json::object();
    for (const auto& [name, q] : view.capacity->quota) {
      // As Kubernetes writes them: memory and storage in binary units.
      resources[name] = {{"nominal", placement::FormatQuantity(name, q.nominal_milli)},
                         {"reserved", placement::FormatQuantity(name, q.reserved_milli)}};
    }
    int64_t age = now_ms - view.capacity_at_ms;
    status["capacity"] = {{"resources", resources},
                          {"pendingWorkloads", view.capacity->pending_workloads},
                          {"clusterQueues", view.capacity->cluster_queues},
                          {"observedAt", FormatRfc3339(view.capacity_at_ms)},
                          {"age", FormatAge(age)},
                          {"stale", age > stale_after_ms}};
    // Placement then judges jobs by the sums, never for good (queue_quota.h).
    const auto& queues = view.capacity->queues;
    if (queues && !queues->local_queues_known) status["capacity"]["localQueuesError"] = queues->local_queues_error;
    // Jobs that name a class get no copy there (queue_quota.h).
    if (queues && !queues->priority_classes_known) {
      status["capacity"]["priorityClassesError"] = queues->priority_classes_error;
    }
  }
  return {{"apiVersion", "gantry.dev/v1"},
          {"kind", "Cluster"},
          {"metadata", {{"name", c.name}}},
          {"spec", std::move(spec)},
          {"status", std::move(status)}};
}

}  // namespace gantry::api
