#include "gantry/common/clock.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace gantry {

int64_t SystemClock::NowMillis() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string FormatRfc3339(int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string FormatAge(int64_t age_ms) {
  if (age_ms < 0) age_ms = 0;
  int64_t s = age_ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  int64_t m = s / 60;
  if (m < 60) return s % 60 ? fmt::format("{}m{}s", m, s % 60) : fmt::format("{}m", m);
  int64_t h = m / 60;
  if (h < 24) return m % 60 ? fmt::format("{}h{}m", h, m % 60) : fmt::format("{}h", h);
  return fmt::format("{}d", h / 24);
}

}  // namespace gantry
