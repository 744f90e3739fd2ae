// The eviction side of KueueController: taking a Workload's quota back, by
// hand (gantry-sim ctl evict) or to make room for a Workload of higher
// priority (withinClusterQueue: LowerPriority; admission.h chooses the
// victims). Both write what Kueue writes when it evicts for preemption.
#include <fmt/format.h>

#include "gantry/common/json_path.h"
#include "kueue_controller.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

// Kueue's words for a preemption within the ClusterQueue (its
// preemption.GetWorkloadPreemptionMessage with the InClusterQueue reason);
// the job uid is gantry's label, as the Workloads gantry writes carry it.
std::string PreemptedMessage(const json& preemptor) {
  const json& md = MemberOr(preemptor, "metadata", EmptyObject());
  const std::string uid = md.is_object() ? md.value("uid", "") : "";
  const std::string job_uid = Label(preemptor, kJobUidLabel);
  return fmt::format(
      "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to prioritization in the ClusterQueue", uid,
      job_uid.empty() ? "UNKNOWN" : job_uid);
}

}  // namespace

Status KueueController::Evict(const std::string& ns, const std::string& name, int64_t now_ms) {
  const json* wl = store_->Get("workloads", ns, name);
  if (!wl) return Status::NotFound(fmt::format("workloads \"{}\" not found", name));
  if (!IsReserved(*wl) || IsDone(*wl)) return Status::Invalid(fmt::format("workload {}/{} is not admitted", ns, name));
  EvictHolder(ns + "/" + name, {"Preempted to accommodate a workload (simulated)", false}, now_ms);
  UpdateQueueStatus(now_ms);
  return Status::Ok();
}

void KueueController::Preempt(const std::vector<std::string>& victims, const json& preemptor, int64_t now_ms) {
  const EvictionCause cause{PreemptedMessage(preemptor), true};
  for (const std::string& key : victims) EvictHolder(key, cause, now_ms);
}

void KueueController::EvictHolder(const std::string& key, const EvictionCause& cause, int64_t now_ms) {
  if (std::string run = RunKeyForWorkload(key); !run.empty()) StopRun(run, "Evicted", true, now_ms);
  auto slash = key.find('/');
  (void)store_->Mutate("workloads", key.substr(0, slash), key.substr(slash + 1), [&](json& o) {
    const std::string& why = cause.message;
    SetCondition(&o, "Evicted", true, "Preempted", why, now_ms);
    SetCondition(&o, "QuotaReserved", false, "Preempted", why, now_ms);
    SetCondition(&o, "Admitted", false, "Preempted", why, now_ms);
    if (cause.in_cluster_queue) SetCondition(&o, "Preempted", true, "InClusterQueue", why, now_ms);
    // One requeued after a check's Retry would go back in the queue (see
    // WorkloadIndex): a preemption here is for good, as it always was.
    if (HasCondition(o, "Requeued")) SetCondition(&o, "Requeued", false, "Preempted", why, now_ms);
    o["status"].erase("admission");
  });
  Release(key);
}

std::vector<QuotaHolder> KueueController::QuotaHolders() const {
  std::vector<QuotaHolder> out;
  out.reserve(reserved_.size());
  for (const auto& [key, reservation] : reserved_) {
    auto slash = key.find('/');
    const json* wl = store_->Get("workloads", key.substr(0, slash), key.substr(slash + 1));
    if (!wl) continue;
    // Read now, not at admission: spec.priority may have been patched since.
    const auto priority = static_cast<int32_t>(JsonIntAt(*wl, {"spec", "priority"}, 0));
    out.push_back({key, priority, reservation.seq, reservation.usage});
  }
  return out;
}

}  // namespace gantry::sim
