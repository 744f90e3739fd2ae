#include "jobs_gauge.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace gantry::api {

JobsGauge::JobsGauge(JobStore& store, ApiMetrics& metrics, const Clock& clock, SlowLane& lane, int64_t refresh_ms)
    : store_(store), metrics_(metrics), clock_(clock), lane_(lane), refresh_ms_(refresh_ms) {}

void JobsGauge::Scrape(std::function<void(bool)> ready) {
  bool start = false;
  bool answer_now = false;
  bool have = false;
  {
    std::lock_guard lock(mu_);
    const int64_t now = clock_.MonotonicMillis();
    if (counting_) {
      waiting_.push_back(std::move(ready));  // the count at work has the freshest figures
    } else if (started_ && now - last_start_ms_ < refresh_ms_) {
      answer_now = true;  // counted recently enough
      have = have_figures_;
    } else {
      start = counting_ = started_ = true;
      last_start_ms_ = now;
      waiting_.push_back(std::move(ready));
    }
  }
  // The lane refuses only once stopped (it holds at most a count and a
  // reload): the waiting scrapes are answered with the last figures, if any.
  if (start && !lane_.Post([this](bool run) { Count(run); })) Count(false);
  if (answer_now) ready(have);
}

void JobsGauge::Count(bool run) {
  if (run) {
    auto counts = store_.CountByPhase();
    if (counts.ok()) {
      metrics_.SetJobsByPhase(*counts);
    } else {
      spdlog::warn("metrics: could not count the jobs by phase: {}", counts.status().ToString());
    }
  }
  std::vector<std::function<void(bool)>> waiting;
  bool have = false;
  {
    std::lock_guard lock(mu_);
    counting_ = false;
    if (run) have_figures_ = true;
    have = have_figures_;
    waiting.swap(waiting_);
  }
  for (auto& ready : waiting) ready(have);
}

}  // namespace gantry::api
