#include "gantry/common/log_limiter.h"

#include <chrono>
#include <utility>

#include <fmt/format.h>

namespace gantry {

bool LogLimiter::Allow(int64_t now_ms, int64_t* held) {
  std::lock_guard lock(mu_);
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

int64_t LogLimiter::Reset() {
  if (!logged_.load(std::memory_order_relaxed)) return 0;  // the common case: nothing to reset
  std::lock_guard lock(mu_);
  logged_ = false;
  return std::exchange(held_, 0);
}

bool LogLimiter::Allow(int64_t* held) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return Allow(std::chrono::duration_cast<std::chrono::milliseconds>(now).count(), held);
}

std::string LogLimiter::HeldText(int64_t held) const {
  if (held <= 0) return "";
  return fmt::format(" ({} more like it held back since the last such line: at most one every {} s)", held,
                     (interval_ms_ + 999) / 1000);
}

}  // namespace gantry
