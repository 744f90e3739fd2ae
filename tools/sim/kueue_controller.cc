#include "kueue_controller.h"

#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "gantry/common/json_path.h"
#include "preemption_gates.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

std::string KeyOf(const json& o) { return NamespaceOf(o) + "/" + NameOf(o); }

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
    : config_(config),
      store_(store),
      journal_(journal),
      quota_(config.quota),
      index_(NodeShape{config.accelerator.model, config.accelerator.gpus_per_node, config.exclude_resource_prefixes}) {}

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
  // As the API server serves it, the CRD's defaults filled in.
  cq["spec"]["preemption"] = {{"borrowWithinCohort", {{"policy", "Never"}}},
                              {"reclaimWithinCohort", "Never"},
                              {"withinClusterQueue", PreemptionPolicyName(config_.within_cluster_queue)}};
  if (!config_.admission_checks.empty()) {
    json rules = json::array();
    for (const AdmissionCheckConfig& c : config_.admission_checks) rules.push_back({{"name", c.name}});
    cq["spec"]["admissionChecksStrategy"] = {{"admissionChecks", rules}};
  }
  (void)store_->Create("clusterqueues", cq, now_ms);
  UpdateClusterQueueSpec();
  // Its flavor and admission checks exist from the start: Active, as Kueue
  // says it of a ClusterQueue that can admit (gantry reads it).
  (void)store_->MutateIf("clusterqueues", "", config_.cluster_queue, [&](json& o) {
    return SetCondition(&o, "Active", true, "Ready", "Can admit new workloads", now_ms);
  });
  for (const auto& [ns, name] : config_.local_queues) (void)CreateLocalQueue(ns, name, now_ms);
  UpdateQueueStatus(now_ms);
}

Status KueueController::CreateLocalQueue(const std::string& ns, const std::string& name, int64_t now_ms) {
  json lq = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "LocalQueue"},
             {"metadata", {{"name", name}, {"namespace", ns}}},
             {"spec", {{"clusterQueue", config_.cluster_queue}}}};
  return store_->Create("localqueues", lq, now_ms).status();
}

Status KueueController::AddLocalQueue(const std::string& ns, const std::string& name, int64_t now_ms) {
  if (Status s = CreateLocalQueue(ns, name, now_ms); !s.ok()) return s;
  dirty_ = true;  // a Workload held as Inadmissible for want of it may be admitted now
  return Status::Ok();
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

void KueueController::OnWorkloadEvent(const std::string& type, const json& wl) {
  index_.OnEvent(type, wl);
  std::string key = KeyOf(wl);
  if (jobs_waiting_on_.count(key)) touched_.insert(key);
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
  KeepStoppingVictim(key, now_ms);
  Release(key);
  arrivals_.erase(key);
  dirty_ = true;
}

void KueueController::Release(const std::string& wl_key) {
  auto it = reserved_.find(wl_key);
  if (it == reserved_.end()) return;
  SubtractFrom(&reserved_total_, it->second.usage);
  victim_releases_.erase({it->second.release_ms, wl_key});
  exec_deadlines_.erase({it->second.exec_deadline_ms, wl_key});
  reserved_.erase(it);
  check_clocks_.erase(wl_key);  // no quota, no checks running
  dirty_ = true;
}

void KueueController::Tick(int64_t now_ms) {
  FinishDueRuns(now_ms);
  EndTerminatingRuns(now_ms);
  ReleaseStoppedVictims(now_ms);  // quota freed: dirty_, the pass runs now
  DeactivateOverdue(now_ms);      // the same
  if (!dirty_ && now_ms < next_wake_ms_) return;
  dirty_ = false;
  next_wake_ms_ = INT64_MAX;
  RunAdmission(now_ms);
  // After admission: a Workload a check's Retry puts back in the queue here
  // gets quota again in a later pass (each its own write and watch event).
  DecideDueChecks(now_ms);
  AdoptWaitingJobs(now_ms);
  UpdateQueueStatus(now_ms);
}

void KueueController::RunAdmission(int64_t now_ms) {
  const bool preempting = config_.within_cluster_queue != PreemptionPolicy::kNever;
  std::vector<AdmissionCandidate> candidates;
  // A copy: the condition writes below change the index as they go.
  const std::vector<std::string> waiting(index_.waiting().begin(), index_.waiting().end());
  for (const std::string& key : waiting) {
    auto slash = key.find('/');
    const json* wl = store_->Get("workloads", key.substr(0, slash), key.substr(slash + 1));
    if (!wl) continue;
    auto a = arrivals_.find(key);
    Arrival arrival = a != arrivals_.end() ? a->second : Arrival{0, 0};
    if (now_ms < arrival.created_ms + config_.admission_delay_ms) {
      next_wake_ms_ = std::min(next_wake_ms_, arrival.created_ms + config_.admission_delay_ms);
      continue;
    }
    std::string queue = (*wl)["spec"].value("queueName", "");
    std::string why;
    const Result<WorkloadDemand>& demand = index_.Demand(key, *wl);
    if (!store_->Get("localqueues", NamespaceOf(*wl), queue)) {
      why = fmt::format("LocalQueue {} doesn't exist", queue);
    } else if (!demand.ok()) {
      why = demand.status().message();
    } else if (!demand->never_fits.empty()) {
      why = demand->never_fits;
    }
    if (!why.empty()) {
      SetWorkloadCondition(*wl, "QuotaReserved", false, "Inadmissible", why, now_ms);
      continue;
    }
    int32_t priority = (*wl)["spec"].value("priority", 0);
    AdmissionCandidate candidate{key, priority, arrival.created_ms, arrival.seq, demand->total};
    if (preempting) candidate.closed_gates = ClosedPreemptionGates(*wl);
    candidates.push_back(std::move(candidate));
  }
  ClusterQueueSnapshot cq{quota_, reserved_total_, {}, config_.within_cluster_queue, config_.flavor,
                          config_.victim_stop_delay_ms <= 0};
  if (preempting && !candidates.empty()) cq.holders = QuotaHolders();
  auto verdicts = DecideAdmissions(cq, std::move(candidates));
  for (const AdmissionVerdict& v : verdicts) {
    auto slash = v.key.find('/');
    const std::string ns = v.key.substr(0, slash), name = v.key.substr(slash + 1);
    const json* wl = store_->Get("workloads", ns, name);
    if (!wl) continue;
    if (!v.victims.empty()) {
      // Victims first. Without a victimStopDelay their eviction releases
      // their quota at once and the preemptor is admitted in this same
      // pass; with one it waits for them (admission.h).
      Preempt(v.victims, *wl, now_ms);
      wl = store_->Get("workloads", ns, name);
      if (!wl) continue;
    }
    if (v.admitted) {
      // A copy: Admit's writes re-index the Workload.
      WorkloadDemand demand = *index_.Demand(v.key, *wl);
      Admit(*wl, demand, now_ms);
    } else {
      SetWorkloadCondition(*wl, "QuotaReserved", false, PendingReasonName(v.reason), v.message, now_ms);
    }
  }
}

void KueueController::SetWorkloadCondition(const json& wl, const std::string& type, bool status,
                                           const std::string& reason, const std::string& message, int64_t now_ms) {
  // A Workload that stays pending costs no write.
  (void)store_->MutateIf("workloads", NamespaceOf(wl), NameOf(wl),
                         [&](json& o) { return SetCondition(&o, type, status, reason, message, now_ms); });
}

void KueueController::Admit(const json& wl, const WorkloadDemand& demand, int64_t now_ms) {
  const std::string ns = NamespaceOf(wl), name = NameOf(wl), key = ns + "/" + name;
  json assignments = json::array();
  for (const PodSetDemand& ps : demand.pod_sets) {
    json flavors = json::object();
    for (const auto& [name, v] : ps.per_pod) flavors[name] = config_.flavor;
    assignments.push_back({{"name", ps.name}, {"flavors", flavors}, {"resourceUsage", ToJson(ps.total)},
                           {"count", ps.count}});
  }
  // One status write, as Kueue's scheduler makes it: when the ClusterQueue
  // has no admission checks, the quota reservation and Admitted together,
  // one watch event; else the reservation with every check Pending, and
  // Admitted only once they are all Ready (admission_checks.cc).
  const bool checks = !config_.admission_checks.empty();
  auto written = store_->Mutate("workloads", ns, name, [&](json& o) {
    o["status"]["admission"] = {{"clusterQueue", config_.cluster_queue}, {"podSetAssignments", std::move(assignments)}};
    SetCondition(&o, "QuotaReserved", true, "QuotaReserved",
                 fmt::format("Quota reserved in ClusterQueue {}", config_.cluster_queue), now_ms);
    if (checks) {
      o["status"]["admissionChecks"] = PendingChecks(o, now_ms);
      SetCondition(&o, "Admitted", false, "UnsatisfiedChecks", "The workload has not all checks ready", now_ms);
    } else {
      SetCondition(&o, "Admitted", true, "Admitted", "The workload is admitted", now_ms);
    }
    // Requeued after an eviction: no longer evicted (Kueue's SetQuotaReservation).
    if (HasCondition(o, "Evicted")) {
      SetCondition(&o, "Evicted", false, "QuotaReserved", "Previously: " + ConditionMessage(o, "Evicted"), now_ms);
    }
  });
  if (!written.ok()) return;
  if (checks) StartCheckClock(key, now_ms);
  Reservation& reserved = reserved_[key];
  // Re-admitted after a status patch: counted once (and, were it a victim
  // still stopping, its release is off).
  SubtractFrom(&reserved_total_, reserved.usage);
  victim_releases_.erase({reserved.release_ms, key});
  exec_deadlines_.erase({reserved.exec_deadline_ms, key});
  reserved = {demand.total, next_reservation_seq_++};
  AddTo(&reserved_total_, reserved.usage);
  const json* limit = JsonAt(wl, {"spec", "maximumExecutionTimeSeconds"});
  if (limit && limit->is_number_integer() && limit->get<int64_t>() > 0) {
    reserved.exec_deadline_ms = now_ms + limit->get<int64_t>() * 1000;
    exec_deadlines_.emplace(reserved.exec_deadline_ms, key);
  }
}

// Sets each of fields' members in obj's status, in place, unless all are
// already so (then nothing is written).
void KueueController::WriteStatus(const std::string& resource, const std::string& ns, const std::string& name,
                                  const json& fields) {
  (void)store_->MutateIf(resource, ns, name, [&](json& o) {
    bool changed = false;
    for (auto f = fields.begin(); f != fields.end(); ++f) {
      json& st = o["status"];  // created only on the way to a field it lacks: a change
      auto have = st.find(f.key());
      if (have != st.end() && *have == f.value()) continue;
      st[f.key()] = f.value();
      changed = true;
    }
    return changed;
  });
}

void KueueController::UpdateQueueStatus(int64_t now_ms) {
  (void)now_ms;
  QueueStatusInputs in{reserved_total_, quota_, index_.total(), {}};
  for (const auto& [ns, name] : config_.local_queues) in.local_queues.push_back(index_.ForQueue(ns + "/" + name));
  // The queues' status is a function of these inputs alone (neither queue
  // is writable through the API), so equal inputs mean nothing to write.
  if (last_queue_status_ == in) return;
  json usage = FlavorUsage(config_.flavor, in.used, quota_);
  WriteStatus("clusterqueues", "", config_.cluster_queue,
              {{"flavorsReservation", usage},
               {"flavorsUsage", usage},
               {"pendingWorkloads", in.total.pending},
               {"reservingWorkloads", in.total.reserving},
               {"admittedWorkloads", in.total.admitted}});
  for (std::size_t i = 0; i < config_.local_queues.size(); ++i) {
    const auto& [ns, name] = config_.local_queues[i];
    const QueueCounts& counts = in.local_queues[i];
    if (last_queue_status_ && last_queue_status_->local_queues[i] == counts) continue;
    WriteStatus("localqueues", ns, name,
                {{"pendingWorkloads", counts.pending},
                 {"reservingWorkloads", counts.reserving},
                 {"admittedWorkloads", counts.admitted}});
  }
  last_queue_status_ = std::move(in);
}

}  // namespace gantry::sim
