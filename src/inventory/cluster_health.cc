#include "gantry/inventory/cluster_health.h"

#include <algorithm>
#include <limits>

namespace gantry::inventory {

std::string_view HealthStateName(HealthState state) {
  switch (state) {
    case HealthState::kReady:
      return "Ready";
    case HealthState::kNotReady:
      return "NotReady";
    case HealthState::kUnknown:
      break;
  }
  return "Unknown";
}

void ClusterHealth::OnProbeOk(int64_t now_ms) {
  if (state != HealthState::kReady) {
    ready_after_failure_mono_ms = state == HealthState::kNotReady ? last_failure_mono_ms : 0;
    state = HealthState::kReady;
    since_ms = now_ms;
  }
  first_lost_ms.reset();
  consecutive_failures = 0;
  not_ready_at_failure = 0;
  credentials_refused = false;
  unreachable_ms = 0;
  last_failure_ms = 0;
  last_failure_mono_ms = 0;
}

void ClusterHealth::OnProbeFailed(int64_t now_ms, std::string error, std::optional<int64_t> mono_ms,
                                  std::optional<int64_t> silent_until_ms) {
  // After refusals, a failure of another kind starts clusterLostTimeout's
  // clock again, counting only the time the cluster did not answer at all
  // in this outage: measured from the start of the refusals, one timeout of
  // an unreachable cluster that had refused gantry for longer than
  // clusterLostTimeout would declare it lost at once (its jobs, most likely
  // still running there, re-run elsewhere); started afresh, a cluster that
  // alternates between refusals and no answer would never be lost.
  const bool after_refusal = credentials_refused;
  Fail(now_ms, std::move(error), mono_ms, silent_until_ms);
  if (after_refusal) first_lost_ms = last_failure_ms - unreachable_ms;
  credentials_refused = false;
}

void ClusterHealth::OnProbeRefused(int64_t now_ms, std::string error, std::optional<int64_t> mono_ms) {
  Fail(now_ms, std::move(error), mono_ms, /*silent_until_ms=*/std::nullopt);
  credentials_refused = true;
}

void ClusterHealth::Fail(int64_t now_ms, std::string error, std::optional<int64_t> mono_ms,
                         std::optional<int64_t> silent_until_ms) {
  const bool conclusive = silent_until_ms.has_value();
  const int64_t until = std::max(now_ms, silent_until_ms.value_or(now_ms));  // the failure shows no answer to here
  if (!first_lost_ms) first_lost_ms = now_ms;
  if (consecutive_failures < std::numeric_limits<int>::max()) ++consecutive_failures;
  const bool doubted = state == HealthState::kReady && !conclusive && consecutive_failures < failure_threshold;
  if (state != HealthState::kNotReady && !doubted) {
    // NotReady since the outage began: its first failed probe, or, restored
    // after a restart and still on, its start then, not since the daemon
    // started (gantry clusters' SINCE).
    since_ms = std::min(*first_lost_ms, now_ms);
    state = HealthState::kNotReady;
    not_ready_at_failure = consecutive_failures;
  }
  // The time since the previous failure counts as its kind's: no answer at
  // all unless that one was a refusal.
  if (last_failure_ms > 0 && !credentials_refused && now_ms > last_failure_ms) {
    unreachable_ms += now_ms - last_failure_ms;
  }
  unreachable_ms += until - now_ms;  // its own wait, when silent
  last_failure_ms = until;
  last_failure_mono_ms = mono_ms.value_or(now_ms);
  last_error = std::move(error);
}

int64_t LostTimeoutMs(bool credentials_refused, int64_t lost_timeout_ms, int64_t refused_timeout_ms) {
  if (!credentials_refused) return lost_timeout_ms;
  return refused_timeout_ms > 0 ? refused_timeout_ms : std::numeric_limits<int64_t>::max();
}

int64_t ClusterHealth::LostForMs(int64_t now_ms) const {
  if (!first_lost_ms || state != HealthState::kNotReady) return 0;
  return std::max<int64_t>(0, now_ms - *first_lost_ms);
}

int64_t ClusterHealth::ShownLostForMs() const {
  if (!first_lost_ms || state != HealthState::kNotReady || last_failure_ms <= 0) return 0;
  return std::max<int64_t>(0, last_failure_ms - *first_lost_ms);
}

int64_t ClusterHealth::NextRetryDelayMs(std::mt19937& rng, const BackoffPolicy& policy) const {
  const int since_not_ready = consecutive_failures - std::max(not_ready_at_failure, 1) + 1;
  return BackoffDelayMs(std::max(since_not_ready, 1), policy, rng);
}

}  // namespace gantry::inventory
