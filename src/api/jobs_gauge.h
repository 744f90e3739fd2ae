// JobsGauge: gantry_jobs{phase} on /metrics without a count of the jobs at
// every scrape. The count is a SQL COUNT over the whole jobs table, whose
// time grows with the jobs stored: on the server's loop it held every
// other request at each scrape.
//
// The count runs on the API's admin lane (slow_lane.h: shared with
// inventory reloads, never with job documents), at most once every
// refresh_ms. A scrape within refresh_ms of the last count's start shows its
// figures at once; a later one starts a count and waits for it, off the
// loop, as does every scrape that comes while a count is at work. So a
// scrape never shows figures counted more than refresh_ms before it (0: a
// count at each scrape), and never a full store as empty.
//
// A count that fails (the store's error is logged) leaves the last figures
// as they were.
//
// Thread-safety: Scrape from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "gantry/api/api_metrics.h"
#include "gantry/common/clock.h"
#include "gantry/store/job_store.h"
#include "slow_lane.h"

namespace gantry::api {

class JobsGauge {
 public:
  // store, metrics, clock and lane must outlive the gauge, and the lane's
  // work must not: the lane is stopped or destroyed first.
  JobsGauge(JobStore& store, ApiMetrics& metrics, const Clock& clock, SlowLane& lane, int64_t refresh_ms);
  JobsGauge(const JobsGauge&) = delete;
  JobsGauge& operator=(const JobsGauge&) = delete;

  // For a scrape: calls ready once the metrics hold figures to show, at
  // once or from the lane when the count it started or found at work is in.
  // ready(false): no count has ever ended (the lane stopped first: the
  // daemon is stopping); a stopped lane otherwise leaves the last figures.
  void Scrape(std::function<void(bool)> ready);

 private:
  // The count, on the lane (run false: the lane stopped first).
  void Count(bool run);

  JobStore& store_;
  ApiMetrics& metrics_;
  const Clock& clock_;
  SlowLane& lane_;
  const int64_t refresh_ms_;
  mutable std::mutex mu_;
  bool counting_ = false;     // GUARDED_BY(mu_): a count is posted or runs
  bool have_figures_ = false;  // GUARDED_BY(mu_): a count has ended
  bool started_ = false;       // GUARDED_BY(mu_): a count was posted once
  int64_t last_start_ms_ = 0;  // GUARDED_BY(mu_): monotonic
  // Scrapes waiting for the first figures. GUARDED_BY(mu_)
  std::vector<std::function<void(bool)>> waiting_;
};

}  // namespace gantry::api
