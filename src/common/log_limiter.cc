#include "gantry/common/log_limiter.h"

#include <chrono>
#include <utility>

#include <fmt/format.h>

namespace gantry {

namespace {

int64_t SteadyMillis() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
}

}  // namespace

bool LogLimiter::Allow(int64_t now_ms, int64_t* held) {
  std::lock_guard lock(mu_);
  last_seen_ms_ = now_ms;
  // (A clock stepped back counts as the interval up.)
  if (logged_ && now_ms >= last_ms_ && now_ms - last_ms_ < interval_ms_) {
    ++held_;
    return false;
  }
  logged_ = true;
  last_ms_ = now_ms;
  *held = held_;
  held_ = 0;
  return true;
}

int64_t LogLimiter::Reset(int64_t now_ms) {
  if (!logged_.load(std::memory_order_relaxed)) return 0;  // the common case: nothing to reset
  std::lock_guard lock(mu_);
  // (A clock stepped back counts as the interval up.)
  if (now_ms >= last_seen_ms_ && now_ms - last_seen_ms_ < interval_ms_) return 0;  // failures still come
  logged_ = false;
  return std::exchange(held_, 0);
}

int64_t LogLimiter::Reset() { return Reset(SteadyMillis()); }

bool LogLimiter::Allow(int64_t* held) { return Allow(SteadyMillis(), held); }

std::string LogLimiter::HeldText(int64_t held) const {
  if (held <= 0) return "";
  return fmt::format(" ({} more like it held back since the last such line: at most one every {} s)", held,
                     (interval_ms_ + 999) / 1000);
}

}  // namespace gantry
