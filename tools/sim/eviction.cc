// The eviction side of KueueController: taking a Workload's quota back, by
// hand (gantry-sim ctl evict) or to make room for a Workload of higher
// priority (withinClusterQueue: LowerPriority; admission.h chooses the
// victims). Both write what Kueue writes when it evicts for preemption.
// A preemption's victim keeps its quota for the cluster's victimStopDelay
// (its pods terminating, as Kueue counts them); Tick releases it then.
#include <fmt/format.h>

#include "gantry/common/json_path.h"
#include "kueue_controller.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

// Kueue's words for a preemption within the ClusterQueue (its
// preemption.GetWorkloadPreemptionMessage with the InClusterQueue reason):
// the job uid is its own job-uid label, which a Workload gantry writes does
// not carry (UNKNOWN then).
std::string PreemptedMessage(const json& preemptor) {
  const json& md = MemberOr(preemptor, "metadata", EmptyObject());
  const std::string uid = md.is_object() ? md.value("uid", "") : "";
  const std::string job_uid = Label(preemptor, "kueue.x-k8s.io/job-uid");
  return fmt::format(
      "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to prioritization in the ClusterQueue", uid,
      job_uid.empty() ? "UNKNOWN" : job_uid);
}

}  // namespace

Status KueueController::Evict(const std::string& ns, const std::string& name, int64_t now_ms) {
  const json* wl = store_->Get("workloads", ns, name);
  if (!wl) return Status::NotFound(fmt::format("workloads \"{}\" not found", name));
  if (!IsReserved(*wl) || IsDone(*wl)) return Status::Invalid(fmt::format("workload {}/{} is not admitted", ns, name));
  EvictHolder(ns + "/" + name, {"Preempted to accommodate a workload (simulated)"}, now_ms);
  UpdateQueueStatus(now_ms);
  return Status::Ok();
}

void KueueController::Preempt(const std::vector<std::string>& victims, const json& preemptor, int64_t now_ms) {
  const EvictionCause cause{PreemptedMessage(preemptor), NamespaceOf(preemptor) + "/" + NameOf(preemptor)};
  for (const std::string& key : victims) EvictHolder(key, cause, now_ms);
}

void KueueController::EvictHolder(const std::string& key, const EvictionCause& cause, int64_t now_ms) {
  if (std::string run = RunKeyForWorkload(key); !run.empty()) StopRun(run, "Evicted", true, now_ms);
  auto slash = key.find('/');
  (void)store_->Mutate("workloads", key.substr(0, slash), key.substr(slash + 1), [&](json& o) {
    const std::string& why = cause.message;
    SetCondition(&o, "Evicted", true, cause.reason, why, now_ms);
    SetCondition(&o, "QuotaReserved", false, cause.reason, why, now_ms);
    SetCondition(&o, "Admitted", false, cause.reason, why, now_ms);
    if (!cause.preemptor.empty()) SetCondition(&o, "Preempted", true, "InClusterQueue", why, now_ms);
    // One requeued after a check's Retry would go back in the queue (see
    // WorkloadIndex): a preemption here is for good, as it always was.
    if (HasCondition(o, "Requeued")) SetCondition(&o, "Requeued", false, cause.reason, why, now_ms);
    if (cause.deactivate) o["spec"]["active"] = false;
    o["status"].erase("admission");
  });
  auto held = reserved_.find(key);
  if (cause.preemptor.empty() || config_.victim_stop_delay_ms <= 0 || held == reserved_.end()) {
    Release(key);
    return;
  }
  // Stopping: its quota counts as used, it is a victim for no one else
  // (admission.h), and its checks run no more.
  held->second.preempted_for = cause.preemptor;
  held->second.release_ms = now_ms + config_.victim_stop_delay_ms;
  victim_releases_.emplace(held->second.release_ms, key);
  check_clocks_.erase(key);
}

void KueueController::KeepStoppingVictim(const std::string& key, int64_t now_ms) {
  auto held = reserved_.find(key);
  if (held == reserved_.end() || held->second.release_ms <= now_ms) return;
  // Deleted while its pods stop: Kueue's finalizer keeps the Workload, and
  // its quota in use, until they are gone. The quota stays held until then
  // under a key of its own (a new Workload of the name is another holder),
  // still counted for its preemptor only. Moved, not copied: the caller's
  // Release(key) finds nothing left to free.
  Reservation kept = std::move(held->second);
  reserved_.erase(held);
  victim_releases_.erase({kept.release_ms, key});
  const std::string gone = fmt::format("{}#{}", key, kept.seq);
  victim_releases_.emplace(kept.release_ms, gone);
  reserved_.emplace(gone, std::move(kept));
}

void KueueController::DeactivateOverdue(int64_t now_ms) {
  while (!exec_deadlines_.empty() && exec_deadlines_.begin()->first <= now_ms) {
    const std::string key = exec_deadlines_.begin()->second;
    exec_deadlines_.erase(exec_deadlines_.begin());
    auto held = reserved_.find(key);
    if (held == reserved_.end() || !held->second.preempted_for.empty()) continue;  // stopping already
    EvictionCause cause{"The workload is deactivated due to exceeding the maximum execution time"};
    cause.reason = "DeactivatedDueToMaximumExecutionTimeExceeded";
    cause.deactivate = true;
    EvictHolder(key, cause, now_ms);
  }
}

void KueueController::ReleaseStoppedVictims(int64_t now_ms) {
  while (!victim_releases_.empty() && victim_releases_.begin()->first <= now_ms) {
    const std::string key = victim_releases_.begin()->second;
    victim_releases_.erase(victim_releases_.begin());
    Release(key);
  }
}

std::vector<QuotaHolder> KueueController::QuotaHolders() const {
  std::vector<QuotaHolder> out;
  out.reserve(reserved_.size());
  for (const auto& [key, reservation] : reserved_) {
    auto slash = key.find('/');
    const json* wl = store_->Get("workloads", key.substr(0, slash), key.substr(slash + 1));
    if (!wl) {
      // A victim deleted while it stops (KeepStoppingVictim): its priority
      // no longer matters, it is its preemptor's alone.
      if (!reservation.preempted_for.empty()) {
        out.push_back({key, 0, reservation.seq, reservation.usage, reservation.preempted_for});
      }
      continue;
    }
    // Read now, not at admission: spec.priority may have been patched since.
    const auto priority = static_cast<int32_t>(JsonIntAt(*wl, {"spec", "priority"}, 0));
    out.push_back({key, priority, reservation.seq, reservation.usage, reservation.preempted_for});
  }
  return out;
}

}  // namespace gantry::sim
