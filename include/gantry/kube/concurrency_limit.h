// ConcurrencyLimit: how many requests gantry keeps in flight to one cluster,
// adapted from their round trips (a gradient limit, after TCP Vegas and
// Netflix's concurrency-limits).
//
// A request to a cluster holds one of its pooled connections for a round
// trip. A distant cluster (tens of ms away) needs many in flight to carry
// many jobs a second; a nearby one answers in well under a millisecond, and
// there more requests in flight only queue in its API server, where every
// pass's next round trip waits behind them: the tail latency of a lease
// grows with the connections (on one 2-core machine, AllAtOnce p99 at 500
// jobs/s with the connections fixed: 27 ms at 8 per cluster, 50 ms at 16,
// 88 ms at 64).
//
// The limit compares the recent round trips with the least seen lately (the
// cluster's own round trip, its base). While they stay within twice the
// base, it grows (by about the square root of itself per few answers);
// beyond that, requests are queueing in the cluster and it is pulled down
// in proportion to how much, between min and max. With the square-root
// headroom it settles where the round trips are about 2.3 (at 64) to 2.7
// (at 16) times the base. A failure (no answer in time, the connection
// lost) or an answer saying the cluster is overloaded (429, 503) shrinks it
// by a tenth. The base is the least round trip of the last two windows, so
// that it follows a cluster that moved farther away.
//
// Not thread-safe: the pool calls it under its lock.
#pragma once

#include <chrono>
#include <cstdint>

namespace gantry::kube {

struct ConcurrencyLimitOptions {
  int min = 8;
  int max = 64;
  int initial = 8;
  int64_t window_ms = 10'000;  // how long a base round trip is remembered (one to two windows)
};

class ConcurrencyLimit {
 public:
  explicit ConcurrencyLimit(ConcurrencyLimitOptions options);

  int limit() const { return static_cast<int>(limit_); }

  // An answer after `round_trip`, to a request sent while `in_flight`
  // requests to the cluster (itself included) were out; now_ms: a steady
  // clock's reading, for the windows.
  void OnAnswer(std::chrono::microseconds round_trip, int in_flight, int64_t now_ms);
  // No answer in time, a lost connection, or an answer saying the cluster
  // is overloaded.
  void OnOverload();

  // The base round trip now (0 before any answer).
  std::chrono::microseconds base() const;
  // Whether an answer came within the last window before now_ms, and
  // whether the recent round trips are beyond twice the base (requests
  // queue in the cluster, or gantry reads its answers late).
  bool answered_since(int64_t now_ms) const {
    return last_answer_ms_ >= 0 && now_ms - last_answer_ms_ < options_.window_ms;
  }
  bool congested() const;

 private:
  ConcurrencyLimitOptions options_;
  double limit_;
  int64_t window_start_ms_ = -1;
  int64_t least_us_ = 0;         // this window's least round trip (0: none yet)
  int64_t previous_least_us_ = 0;  // the last window's
  double recent_us_ = 0;           // the recent round trips' moving average (0: none yet)
  int64_t last_answer_ms_ = -1;
};

}  // namespace gantry::kube
