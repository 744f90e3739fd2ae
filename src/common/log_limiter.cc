#include "gantry/common/log_limiter.h"

#include <chrono>

#include <fmt/format.h>

namespace gantry {

bool LogLimiter::Allow(int64_t now_ms, int64_t* held) {
  std::lock_guard lock(mu_);
  if (logged_ && now_ms - last_ms_ < interval_ms_) {
    ++held_;
    return false;
  }
  logged_ = true;
  last_ms_ = now_ms;
  *held = held_;
  held_ = 0;
  return true;
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
