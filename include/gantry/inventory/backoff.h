// Capped exponential backoff with jitter for reconnecting to a cluster.
//
// The canonical explanation: after the n-th consecutive failure (n >= 1) the
// ceiling is min(initial * 2^(n-1), max): 5 s, 10 s, 20 s, 30 s. The
// delay is then drawn from that ceiling:
//   - kEqual (default): uniform in [ceiling/2, ceiling]. Half the delay is
//     guaranteed, so a fleet-wide outage never hammers a recovering
//     apiserver with near-zero retries, and half is random, which spreads
//     thousands of clusters' reconnects apart.
//   - kFull: uniform in [0, ceiling] (AWS "full jitter"): the least
//     synchronised, at the cost of occasional immediate retries.
//   - kNone: exactly the ceiling (tests, diagnostics).
// n = 0 (no failure yet) is treated as n = 1.
//
// Thread-safety: pure; the caller owns the random engine.
#pragma once

#include <cstdint>
#include <random>

namespace gantry::inventory {

enum class Jitter { kEqual, kFull, kNone };

struct BackoffPolicy {
  int64_t initial_ms = 5'000;  // first retry after a failure: ~5 s
  // The ceiling: the longest a recovered cluster waits to be seen again
  // (its jobs waiting on it meanwhile: a minute read as "still down" to
  // operators). A loss is judged on a probe due at clusterLostTimeout
  // whatever this is (Fleet); one GET every 30 s per cluster out of reach
  // costs its API server nothing.
  int64_t max_ms = 30'000;
  Jitter jitter = Jitter::kEqual;
};

// The ceiling for n consecutive failures (no jitter). REQUIRES: 0 < initial_ms <= max_ms.
int64_t BackoffCeilingMs(int consecutive_failures, const BackoffPolicy& policy);

// A jittered delay as described above.
int64_t BackoffDelayMs(int consecutive_failures, const BackoffPolicy& policy, std::mt19937& rng);

}  // namespace gantry::inventory
