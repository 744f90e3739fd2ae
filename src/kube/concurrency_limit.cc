#include "gantry/kube/concurrency_limit.h"

#include <algorithm>
#include <cmath>

namespace gantry::kube {
namespace {

int64_t Least(int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

// Round trips up to this many times the base count as no queueing: a
// distant cluster's vary by some ms from one to the next.
constexpr double kTolerance = 2.0;
// The weight of each answer in the recent round trip (a moving average
// over about the last 10), and how far each answer moves the limit toward
// its target: many answers a second, so small steps.
constexpr double kRecentWeight = 0.1;
constexpr double kStep = 0.2;

}  // namespace

ConcurrencyLimit::ConcurrencyLimit(ConcurrencyLimitOptions options) : options_(options) {
  options_.min = std::max(1, options_.min);
  options_.max = std::max(options_.min, options_.max);
  limit_ = std::clamp(options_.initial, options_.min, options_.max);
}

std::chrono::microseconds ConcurrencyLimit::base() const {
  return std::chrono::microseconds(Least(least_us_, previous_least_us_));
}

bool ConcurrencyLimit::congested() const {
  const int64_t base_us = Least(least_us_, previous_least_us_);
  return base_us > 0 && recent_us_ > kTolerance * static_cast<double>(base_us);
}

void ConcurrencyLimit::OnAnswer(std::chrono::microseconds round_trip, int in_flight, int64_t now_ms) {
  const int64_t rtt_us = std::max<int64_t>(1, round_trip.count());
  last_answer_ms_ = now_ms;
  if (window_start_ms_ >= 0 && now_ms - window_start_ms_ >= 2 * options_.window_ms) {
    // Quiet for a window or more: what came before is too old to be the
    // base, or the recent round trip.
    least_us_ = 0;
    recent_us_ = 0;
  }
  if (window_start_ms_ < 0 || now_ms - window_start_ms_ >= options_.window_ms) {
    previous_least_us_ = least_us_;
    least_us_ = 0;
    window_start_ms_ = now_ms;
  }
  least_us_ = Least(least_us_, rtt_us);
  recent_us_ = recent_us_ == 0 ? static_cast<double>(rtt_us) : recent_us_ + kRecentWeight * (rtt_us - recent_us_);
  const double base_us = static_cast<double>(Least(least_us_, previous_least_us_));
  // 1 while the recent round trips stay within twice the base, down to
  // 1/2 as queueing in the cluster lengthens them.
  const double gradient = std::clamp(kTolerance * base_us / recent_us_, 0.5, 1.0);
  // Sent while far fewer than the limit were out: that round trip says
  // nothing about a larger number in flight, so it grows nothing.
  if (gradient >= 1.0 && in_flight * 2 < limit_) return;
  // Moved a step toward limit * gradient plus a headroom of sqrt(limit):
  // it grows by that headroom while the round trips stay near the base, and
  // shrinks to where the headroom makes up for the gradient.
  const double target = limit_ * gradient + std::sqrt(limit_);
  limit_ += kStep * (target - limit_);
  limit_ = std::clamp(limit_, static_cast<double>(options_.min), static_cast<double>(options_.max));
}

void ConcurrencyLimit::OnOverload() {
  limit_ = std::max(static_cast<double>(options_.min), limit_ * 0.9);
}

}  // namespace gantry::kube
