#include "kueue_controller.h"

#include <fmt/format.h>

#include "admission.h"
#include "gantry/common/clock.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

std::string KeyOf(const json& o) { return NamespaceOf(o) + "/" + NameOf(o); }

bool IsReserved(const json& wl) { return HasCondition(wl, "QuotaReserved"); }
bool IsDone(const json& wl) { return HasCondition(wl, "Finished") || HasCondition(wl, "Evicted"); }

json FlavorUsage(const std::string& flavor, const ResourceList& r, const ResourceList& names) {
  json resources = json::array();
  for (const auto& [name, quota] : names) {
    auto it = r.find(name);
    resources.push_back({{"name", name}, {"total", FormatQuantity(name, it == r.end() ? 0 : it->second)}});
  }
  return json::array({{{"name", flavor}, {"resources", resources}}});
}

}  // namespace

KueueController::KueueController(const ClusterConfig& config, ObjectStore* store, Journal* journal)
    : config_(config), store_(store), journal_(journal), quota_(config.quota) {}

void KueueController::Bootstrap(int64_t now_ms) {
  json rf = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "ResourceFlavor"},
             {"metadata", {{"name", config_.flavor}}}, {"spec", json::object()}};
  if (!config_.accelerator.model.empty()) {
    rf["spec"]["nodeLabels"] = {{"nvidia.com/gpu.product", config_.accelerator.model}};
  }
  (void)store_->Create("resourceflavors", rf, now_ms);
  json cq = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "ClusterQueue"},
             {"metadata", {{"name", config_.cluster_queue}}},
             {"spec", {{"namespaceSelector", json::object()}, {"queueingStrategy", "BestEffortFIFO"}}}};
  (void)store_->Create("clusterqueues", cq, now_ms);
  UpdateClusterQueueSpec();
  for (const auto& [ns, name] : config_.local_queues) {
    json lq = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "LocalQueue"},
               {"metadata", {{"name", name}, {"namespace", ns}}},
               {"spec", {{"clusterQueue", config_.cluster_queue}}}};
    (void)store_->Create("localqueues", lq, now_ms);
  }
  UpdateQueueStatus(now_ms);
}

void KueueController::UpdateClusterQueueSpec() {
  const json* cur = store_->Get("clusterqueues", "", config_.cluster_queue);
  if (!cur) return;
  json cq = *cur;
  json covered = json::array(), resources = json::array();
  for (const auto& [name, q] : quota_) {
    covered.push_back(name);
    resources.push_back({{"name", name}, {"nominalQuota", FormatQuantity(name, q)}});
  }
  cq["spec"]["resourceGroups"] = json::array(
      {{{"coveredResources", covered}, {"flavors", json::array({{{"name", config_.flavor}, {"resources", resources}}})}}});
  if (cq != *cur) (void)store_->Update("clusterqueues", cq);
}

void KueueController::SetQuota(const ResourceList& quota, int64_t now_ms) {
  for (const auto& [name, v] : quota) quota_[name] = v;
  UpdateClusterQueueSpec();
  dirty_ = true;
  UpdateQueueStatus(now_ms);
}

ResourceList KueueController::Reserved() const {
  ResourceList total;
  for (const auto& [key, usage] : reserved_) AddTo(&total, usage);
  return total;
}

void KueueController::OnWorkloadCreated(const json& wl, int64_t now_ms) {
  arrivals_[KeyOf(wl)] = {now_ms, next_seq_++};
  dirty_ = true;
  if (config_.admission_delay_ms > 0) next_wake_ms_ = std::min(next_wake_ms_, now_ms + config_.admission_delay_ms);
}

void KueueController::OnWorkloadDeleted(const json& wl, int64_t now_ms) {
  std::string key = KeyOf(wl);
  std::string run = RunKeyForWorkload(key);
  if (!run.empty()) StopRun(run, "WorkloadDeleted", true, now_ms);
  Release(key);
  arrivals_.erase(key);
  dirty_ = true;
}

void KueueController::Release(const std::string& wl_key) {
  if (reserved_.erase(wl_key)) dirty_ = true;
}

void KueueController::Tick(int64_t now_ms) {
  for (auto it = running_.begin(); it != running_.end();) {
    auto next = std::next(it);
    if (it->second.finish_ms <= now_ms) FinishRun(it->first, now_ms);
    it = next;
  }
  if (!dirty_ && now_ms < next_wake_ms_) return;
  dirty_ = false;
  next_wake_ms_ = INT64_MAX;
  RunAdmission(now_ms);
  AdoptWaitingJobs(now_ms);
  UpdateQueueStatus(now_ms);
}

void KueueController::RunAdmission(int64_t now_ms) {
  std::vector<AdmissionCandidate> candidates;
  std::map<std::string, WorkloadDemand> demands;
  NodeShape shape{config_.accelerator.model, config_.accelerator.gpus_per_node};
  for (const json* wl_ptr : store_->All("workloads")) {
    const json& wl = *wl_ptr;
    std::string key = KeyOf(wl);
    if (IsReserved(wl) || IsDone(wl) || !wl["spec"].value("active", true)) continue;
    Arrival arrival = arrivals_.count(key) ? arrivals_[key] : Arrival{0, 0};
    if (now_ms < arrival.created_ms + config_.admission_delay_ms) {
      next_wake_ms_ = std::min(next_wake_ms_, arrival.created_ms + config_.admission_delay_ms);
      continue;
    }
    std::string queue = wl["spec"].value("queueName", "");
    std::string why;
    auto demand = ComputeDemand(wl, shape);
    if (!store_->Get("localqueues", NamespaceOf(wl), queue)) {
      why = fmt::format("LocalQueue {} doesn't exist", queue);
    } else if (!demand.ok()) {
      why = demand.status().message();
    } else if (!demand->never_fits.empty()) {
      why = demand->never_fits;
    }
    if (!why.empty()) {
      json updated = wl;
      if (SetCondition(&updated, "QuotaReserved", false, "Inadmissible", why, now_ms)) {
        (void)store_->Update("workloads", updated);
      }
      continue;
    }
    int32_t priority = wl["spec"].value("priority", 0);
    candidates.push_back({key, priority, arrival.created_ms, arrival.seq, demand->total});
    demands.emplace(key, std::move(*demand));
  }
  auto verdicts = DecideAdmissions(quota_, Reserved(), std::move(candidates), config_.flavor);
  for (const AdmissionVerdict& v : verdicts) {
    auto slash = v.key.find('/');
    const json* wl = store_->Get("workloads", v.key.substr(0, slash), v.key.substr(slash + 1));
    if (!wl) continue;
    if (v.admitted) {
      Admit(*wl, demands.at(v.key), now_ms);
    } else {
      json updated = *wl;
      if (SetCondition(&updated, "QuotaReserved", false, "Pending", v.message, now_ms)) {
        (void)store_->Update("workloads", updated);
      }
    }
  }
}

void KueueController::Admit(const json& wl, const WorkloadDemand& demand, int64_t now_ms) {
  json updated = wl;
  json assignments = json::array();
  for (const PodSetDemand& ps : demand.pod_sets) {
    json flavors = json::object();
    for (const auto& [name, v] : ps.per_pod) flavors[name] = config_.flavor;
    assignments.push_back({{"name", ps.name}, {"flavors", flavors}, {"resourceUsage", ToJson(ps.total)},
                           {"count", ps.count}});
  }
  updated["status"]["admission"] = {{"clusterQueue", config_.cluster_queue}, {"podSetAssignments", assignments}};
  SetCondition(&updated, "QuotaReserved", true, "QuotaReserved",
               fmt::format("Quota reserved in ClusterQueue {}", config_.cluster_queue), now_ms);
  auto first = store_->Update("workloads", updated);
  if (!first.ok()) return;
  reserved_[KeyOf(wl)] = demand.total;
  updated = *first;
  SetCondition(&updated, "Admitted", true, "Admitted", "The workload is admitted", now_ms);
  (void)store_->Update("workloads", updated);
}

Status KueueController::Evict(const std::string& ns, const std::string& name, int64_t now_ms) {
  const json* wl = store_->Get("workloads", ns, name);
  if (!wl) return Status::NotFound(fmt::format("workloads \"{}\" not found", name));
  if (!IsReserved(*wl) || IsDone(*wl)) return Status::Invalid(fmt::format("workload {}/{} is not admitted", ns, name));
  std::string key = ns + "/" + name;
  std::string run = RunKeyForWorkload(key);
  if (!run.empty()) StopRun(run, "Evicted", true, now_ms);
  json updated = *wl;
  SetCondition(&updated, "Evicted", true, "Preempted", "Preempted to accommodate a workload (simulated)", now_ms);
  SetCondition(&updated, "QuotaReserved", false, "Preempted", "Preempted to accommodate a workload (simulated)", now_ms);
  SetCondition(&updated, "Admitted", false, "Preempted", "Preempted to accommodate a workload (simulated)", now_ms);
  updated["status"].erase("admission");
  (void)store_->Update("workloads", updated);
  Release(key);
  UpdateQueueStatus(now_ms);
  return Status::Ok();
}

void KueueController::UpdateQueueStatus(int64_t now_ms) {
  (void)now_ms;
  int64_t pending = 0, reserving = 0, admitted = 0;
  std::map<std::string, std::array<int64_t, 3>> per_lq;  // ns/queue -> pending, reserving, admitted
  for (const json* wl : store_->All("workloads")) {
    if (HasCondition(*wl, "Finished")) continue;
    auto& lq = per_lq[NamespaceOf(*wl) + "/" + (*wl)["spec"].value("queueName", "")];
    if (IsReserved(*wl)) {
      ++reserving, ++lq[1];
      if (HasCondition(*wl, "Admitted")) ++admitted, ++lq[2];
    } else {
      ++pending, ++lq[0];
    }
  }
  ResourceList used = Reserved();
  if (const json* cur = store_->Get("clusterqueues", "", config_.cluster_queue)) {
    json cq = *cur;
    cq["status"]["flavorsReservation"] = FlavorUsage(config_.flavor, used, quota_);
    cq["status"]["flavorsUsage"] = FlavorUsage(config_.flavor, used, quota_);
    cq["status"]["pendingWorkloads"] = pending;
    cq["status"]["reservingWorkloads"] = reserving;
    cq["status"]["admittedWorkloads"] = admitted;
    if (cq != *cur) (void)store_->Update("clusterqueues", cq);
  }
  for (const auto& [ns, name] : config_.local_queues) {
    const json* cur = store_->Get("localqueues", ns, name);
    if (!cur) continue;
    auto counts = per_lq[ns + "/" + name];
    json lq = *cur;
    lq["status"]["pendingWorkloads"] = counts[0];
    lq["status"]["reservingWorkloads"] = counts[1];
    lq["status"]["admittedWorkloads"] = counts[2];
    if (lq != *cur) (void)store_->Update("localqueues", lq);
  }
}

}  // namespace gantry::sim
