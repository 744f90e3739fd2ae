// ClusterHealth: the connection state of one worker cluster as a pure state
// machine. The caller probes (watches open, /readyz answers) and reports the
// outcome with the time; this type does no I/O and reads no clock.
//
// States and transitions:
//   Unknown  --ok-->   Ready      (since = now)
//   Unknown  --fail--> NotReady   (since = now)
//   Ready    --fail--> NotReady   (since = the outage's first failure) once
//                                 failure_threshold probes in a row failed;
//                                 before that it stays Ready, its outage begun
//   NotReady --ok-->   Ready      (since = now)
//   any      --refused--> as a failure
//   same state again: `since` is unchanged.
// "refused" is a failure of its own kind: the cluster answers, over TLS
// verified against its CA, with the API server's own 401 or 403, or its
// token cannot be had (a failing exec plugin) while its /readyz answers.
// It is an outage like any other (first_lost_ms set; the clock runs on from
// other failures into refusals), flagged credentials_refused while the
// latest failure is one, so that the caller can give it a timeout of its
// own: the cluster is known to be up and its jobs most likely run on, so an
// expired cloud login must not re-run them elsewhere after the usual
// clusterLostTimeout. A failure of another kind after refusals restarts the
// clock with the time the cluster did not answer at all in this outage
// (first_lost_ms = now - unreachable_ms): the usual timeout counts the time
// without an answer, not the refusals, and a cluster that alternates
// between the two is still lost once its silences add up to the timeout.
// first_lost_ms is the start of the current outage: set by the first failure
// when unset, cleared by a success. It is what `clusterLostTimeout` is measured
// from, so it is persisted by the caller (with credentials_refused) and
// handed back via RestoreFirstLost()
// after a daemon restart (the health then starts Unknown with the old
// outage start; a failing probe keeps it, a succeeding one clears it).
// A cluster that fails from its very first probe gets first_lost_ms at that
// probe: there is no earlier time at which it was known to be lost.
// last_error is the most recent failure, kept after recovery for display.
//
// Thread-safety: a plain value; the owner serialises access.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "gantry/inventory/backoff.h"

namespace gantry::inventory {

enum class HealthState { kUnknown, kReady, kNotReady };
std::string_view HealthStateName(HealthState state);  // "Unknown" | "Ready" | "NotReady"

// The outage length past which a cluster is lost: lost_timeout_ms, or
// refused_timeout_ms while it refuses the credentials (0 = never: the
// largest int64_t).
int64_t LostTimeoutMs(bool credentials_refused, int64_t lost_timeout_ms, int64_t refused_timeout_ms);

struct ClusterHealth {
  HealthState state = HealthState::kUnknown;
  int64_t since_ms = 0;  // when `state` was entered; 0 while Unknown and never probed
  std::optional<int64_t> first_lost_ms;
  std::string last_error;  // REQUIRES: free of secrets (callers pass Status messages)
  int consecutive_failures = 0;
  // Failed probes in a row that turn a Ready cluster NotReady (Kubernetes'
  // probes' failureThreshold): one /readyz error in five must not take a
  // cluster out of placement and rescan its jobs each time. The outage, and
  // clusterLostTimeout's clock, still begin at the first failure. A cluster
  // never seen Ready (Unknown) is NotReady at its first failure.
  int failure_threshold = 1;
  // consecutive_failures when it turned NotReady in this outage (0: not
  // yet): the backoff counts the failures from there.
  int not_ready_at_failure = 0;
  bool credentials_refused = false;  // the latest failure was a refusal (above)
  // In the current outage: the time the cluster did not answer at all, up
  // to its latest failure (each gap between two failures counts as the
  // earlier one's kind), and when that latest failure was (a silent one's:
  // the end of its wait; 0: none yet, or restored after a restart, which
  // knows only first_lost_ms).
  int64_t unreachable_ms = 0;
  int64_t last_failure_ms = 0;
  // The latest failure's time on the monotonic clock (Clock::MonotonicMillis;
  // 0: none in this outage), and, Ready after an outage, that outage's latest
  // failed probe's (0: Ready since the first probe, or Unknown before). A
  // watch that listed after it began after the outage, so nothing in it went
  // silent there. Monotonic: compared with the watches' list times, which a
  // step of the wall clock (NTP) must not put on the wrong side of it.
  int64_t last_failure_mono_ms = 0;
  int64_t ready_after_failure_mono_ms = 0;

  // now_ms: the wall clock (a failure's: when its probe went out); mono_ms:
  // the monotonic clock at the same moment (unset: now_ms, as a fake clock's
  // are one). silent_until_ms: set when the probe waited out its deadline
  // with no answer, which it then was on the wall clock. Such a failure is
  // no flake: it makes a Ready cluster NotReady at once, whatever
  // failure_threshold, and the outage it shows reaches its end (the cluster
  // said nothing meanwhile), so that a silent cluster's verdict does not
  // wait a deadline past clusterLostTimeout.
  void OnProbeOk(int64_t now_ms);
  void OnProbeFailed(int64_t now_ms, std::string error, std::optional<int64_t> mono_ms = std::nullopt,
                     std::optional<int64_t> silent_until_ms = std::nullopt);
  // (A bool, as this parameter once was, would convert to a time of 0.)
  template <typename B>
    requires std::same_as<B, bool>
  void OnProbeFailed(int64_t, std::string, std::optional<int64_t>, B) = delete;
  void OnProbeRefused(int64_t now_ms, std::string error, std::optional<int64_t> mono_ms = std::nullopt);

  // After a restart: the outage start the store kept (unset = none), and
  // whether its latest failure was a refusal (so that a failure of another
  // kind restarts the clock, as it would have without the restart).
  void RestoreFirstLost(std::optional<int64_t> persisted_ms, bool refused = false) {
    first_lost_ms = persisted_ms;
    credentials_refused = persisted_ms && refused;
  }

  // How long the current outage has lasted at now_ms; 0 when not in one,
  // and 0 unless NotReady: an outage restored after a restart counts (from
  // its restored start) once a probe says the cluster is still out, and a
  // doubted one once a second failure confirms it.
  int64_t LostForMs(int64_t now_ms) const;
  // The outage as a failed probe has shown it: from its start to the latest
  // failure (0 when not in one, and until a probe since a restart failed).
  // What a cluster's loss is judged on: between probes (5 s to 30 s
  // apart while it does not answer) a cluster may be back, and an outage
  // counted to now would have it lost while it answers again.
  int64_t ShownLostForMs() const;
  // The outage length past which the cluster is lost (LostTimeoutMs below).
  int64_t LostTimeoutMs(int64_t lost_timeout_ms, int64_t refused_timeout_ms) const {
    return inventory::LostTimeoutMs(credentials_refused, lost_timeout_ms, refused_timeout_ms);
  }

  // Ready, with failed probes in a row short of failure_threshold.
  bool Doubted() const { return state == HealthState::kReady && consecutive_failures > 0; }
  // NotReady for refusing gantry's credentials (a refusal that only made it
  // Doubted is not told as one).
  bool Refusing() const { return state == HealthState::kNotReady && credentials_refused; }

  // Delay before the next reconnect attempt: BackoffDelayMs over the
  // failures since it went NotReady (see backoff.h for the formula and the
  // jitter). While Doubted(), the caller probes again sooner.
  int64_t NextRetryDelayMs(std::mt19937& rng, const BackoffPolicy& policy = {}) const;

 private:
  // What every failed probe, refused or not, does.
  void Fail(int64_t now_ms, std::string error, std::optional<int64_t> mono_ms, std::optional<int64_t> silent_until_ms);
};

}  // namespace gantry::inventory
