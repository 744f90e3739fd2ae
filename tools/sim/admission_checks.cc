// The admission-check side of KueueController: a ClusterQueue with checks
// (ClusterConfig::admission_checks) reserves quota first, with every check
// Pending, and admits only when all are Ready; a Retry evicts the Workload
// and puts it back in the queue, a Rejected deactivates it. As in Kueue
// (workload_controller's reconcileCheckBasedEviction), with each transition
// one write here where Kueue makes a few.
#include <algorithm>

#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "kueue_controller.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

std::string StateOf(const json& check) { return check.value("state", ""); }

// `"a", "b"` for the checks in `state`, in the words of Kueue's eviction messages.
std::string ChecksIn(const json& checks, const char* state) {
  std::string out;
  for (const json& c : checks) {
    if (StateOf(c) == state) out += fmt::format("{}\"{}\"", out.empty() ? "" : "; ", c.value("name", ""));
  }
  return out;
}

// What Kueue does about a reserved Workload's checks.
enum class Verdict { kWait, kAdmit, kRetry, kReject };

Verdict VerdictOf(const json& checks) {
  bool all_ready = true, retry = false;
  for (const json& c : checks) {
    const std::string state = StateOf(c);
    if (state == "Rejected") return Verdict::kReject;
    retry = retry || state == "Retry";
    all_ready = all_ready && state == "Ready";
  }
  return retry ? Verdict::kRetry : all_ready ? Verdict::kAdmit : Verdict::kWait;
}

// Sets one check's state (lastTransitionTime moves only when it changes).
void SetState(json& check, CheckState state, int64_t now_ms) {
  const char* name = CheckStateName(state);
  if (StateOf(check) == name) return;
  check["state"] = name;
  check["lastTransitionTime"] = FormatRfc3339(now_ms);
}

// Evicted, quota released and every check back to Pending (Kueue's
// ResetChecksOnEviction), with the eviction's reason and message.
void EvictForChecks(json& wl, const std::string& reason, const std::string& message, int64_t now_ms) {
  SetCondition(&wl, "Evicted", true, reason, message, now_ms);
  SetCondition(&wl, "QuotaReserved", false, "Pending", message, now_ms);
  SetCondition(&wl, "Admitted", false, "NoReservationUnsatisfiedChecks",
               "The workload has no reservation and not all checks ready", now_ms);
  wl["status"].erase("admission");
  for (json& c : wl["status"]["admissionChecks"]) {
    const std::string was = StateOf(c);
    if (was == "Pending") continue;
    if (was == "Retry") c["retryCount"] = c.value("retryCount", 0) + 1;
    c["message"] = "Reset to Pending after eviction. Previously: " + was;
    SetState(c, CheckState::kPending, now_ms);
  }
}

}  // namespace

json KueueController::PendingChecks(const json& wl, int64_t now_ms) const {
  // Checks kept from an earlier reservation (reset to Pending when it was
  // evicted) keep their message and retry count.
  const json& status = MemberOr(wl, "status", EmptyObject());
  const json& before = MemberOr(status, "admissionChecks", EmptyArray());
  json checks = json::array();
  for (const AdmissionCheckConfig& config : config_.admission_checks) {
    auto kept = std::find_if(before.begin(), before.end(), [&](const json& c) { return c.value("name", "") == config.name; });
    json c = kept != before.end() ? *kept : json{{"name", config.name}, {"message", ""}};
    SetState(c, CheckState::kPending, now_ms);
    checks.push_back(std::move(c));
  }
  return checks;
}

void KueueController::StartCheckClock(const std::string& wl_key, int64_t now_ms) {
  check_clocks_[wl_key] = CheckClock{now_ms, {}};
  for (const AdmissionCheckConfig& c : config_.admission_checks) {
    if (c.outcome != CheckState::kPending) next_wake_ms_ = std::min(next_wake_ms_, now_ms + c.delay_ms);
  }
}

void KueueController::DecideDueChecks(int64_t now_ms) {
  // Keys first: deciding a Workload ends its clock.
  std::vector<std::string> keys;
  for (const auto& [key, clock] : check_clocks_) keys.push_back(key);
  for (const std::string& key : keys) {
    const CheckClock clock = check_clocks_.at(key);
    std::map<std::string, CheckState> due;
    for (const AdmissionCheckConfig& c : config_.admission_checks) {
      if (c.outcome == CheckState::kPending || clock.by_hand.count(c.name)) continue;
      if (now_ms < clock.reserved_ms + c.delay_ms) {
        next_wake_ms_ = std::min(next_wake_ms_, clock.reserved_ms + c.delay_ms);
      } else {
        due[c.name] = c.outcome;
      }
    }
    if (!due.empty()) ApplyCheckStates(key, due, now_ms);
  }
}

Status KueueController::SetCheckState(const std::string& ns, const std::string& name, const std::string& check,
                                      CheckState state, int64_t now_ms) {
  const json* wl = store_->Get("workloads", ns, name);
  if (!wl) return Status::NotFound(fmt::format("workloads \"{}\" not found", name));
  if (!IsReserved(*wl) || IsDone(*wl)) {
    return Status::Invalid(fmt::format("workload {}/{} holds no quota: its checks are not running", ns, name));
  }
  std::map<std::string, CheckState> states;
  for (const AdmissionCheckConfig& c : config_.admission_checks) {
    if (check.empty() || c.name == check) states[c.name] = state;
  }
  if (states.empty()) {
    return Status::NotFound(check.empty() ? fmt::format("ClusterQueue {} has no admission checks", config_.cluster_queue)
                                          : fmt::format("ClusterQueue {} has no admission check {}",
                                                        config_.cluster_queue, check));
  }
  const std::string key = ns + "/" + name;
  // Decided by hand from now on, until the Workload gets quota again.
  if (auto clock = check_clocks_.find(key); clock != check_clocks_.end()) {
    for (const auto& [check_name, s] : states) clock->second.by_hand.insert(check_name);
  }
  ApplyCheckStates(key, states, now_ms);
  dirty_ = true;  // a waiting job may be adoptable, the queue status changed
  return Status::Ok();
}

void KueueController::ApplyCheckStates(const std::string& key, const std::map<std::string, CheckState>& states,
                                       int64_t now_ms) {
  auto slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  const json* stored = store_->Get("workloads", ns, name);
  if (!stored) return;
  json wl = *stored;
  json& checks = wl["status"]["admissionChecks"];
  bool changed = false;
  for (json& c : checks) {
    auto s = states.find(c.value("name", ""));
    if (s == states.end() || StateOf(c) == CheckStateName(s->second)) continue;
    SetState(c, s->second, now_ms);
    changed = true;
  }
  if (!changed) return;
  const Verdict verdict = VerdictOf(checks);
  if (verdict == Verdict::kWait) {
    (void)store_->Update("workloads", std::move(wl));
    return;
  }
  check_clocks_.erase(key);
  if (verdict == Verdict::kAdmit) {
    SetCondition(&wl, "Admitted", true, "Admitted", "The workload is admitted", now_ms);
    (void)store_->Update("workloads", std::move(wl));
    return;
  }
  // Retry or Rejected: the job stops (if it ran: a check may turn after
  // admission, e.g. a ProvisioningRequest's capacity revoked) and the quota goes.
  const bool reject = verdict == Verdict::kReject;
  if (std::string run = RunKeyForWorkload(key); !run.empty()) {
    StopRun(run, reject ? "Deactivated" : "Evicted", true, now_ms);
  }
  if (reject) {
    const std::string message = "The workload is deactivated due to AdmissionCheck in Rejected state: " +
                                ChecksIn(checks, "Rejected");
    wl["spec"]["active"] = false;
    EvictForChecks(wl, "DeactivatedDueToAdmissionCheck", message, now_ms);
  } else {
    const std::string message = "AdmissionCheck in Retry state: " + ChecksIn(checks, "Retry");
    EvictForChecks(wl, "AdmissionCheck", message, now_ms);
    // Back in the queue at once: the simulated Kueue has no requeue backoff.
    SetCondition(&wl, "Requeued", true, "BackoffFinished", "The workload backoff was finished", now_ms);
  }
  (void)store_->Update("workloads", std::move(wl));
  Release(key);
}

}  // namespace gantry::sim
