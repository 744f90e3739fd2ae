// Clock: the seam through which every component reads the time, so tests can
// drive time with FakeClock instead of sleeping.
//
// NowMillis: milliseconds since the Unix epoch (wall clock), because such
// times are persisted and shown to users. MonotonicMillis: for what is only
// waited for in this process (timers), where a step of the wall clock (NTP,
// a resumed VM) must not move a due time: SystemClock reads the steady
// clock, FakeClock the same value as NowMillis (a test drives both) until
// the test steps its wall clock.
//
// Thread-safety: SystemClock and FakeClock are safe to call from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gantry {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMillis() const = 0;
  virtual int64_t MonotonicMillis() const { return NowMillis(); }
};

class SystemClock final : public Clock {
 public:
  int64_t NowMillis() const override;
  int64_t MonotonicMillis() const override;
};

// Both clocks read the same until StepWall, which moves the wall clock
// alone, as an NTP step or a resumed VM does; Advance moves both.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t NowMillis() const override { return now_.load() + wall_step_.load(); }
  int64_t MonotonicMillis() const override { return now_.load(); }
  void Advance(int64_t ms) { now_ += ms; }
  void Set(int64_t ms) { now_ = ms - wall_step_.load(); }  // the wall clock reads ms
  void StepWall(int64_t ms) { wall_step_ += ms; }

 private:
  std::atomic<int64_t> now_;
  std::atomic<int64_t> wall_step_{0};
};

// RFC 3339 UTC with second precision, as Kubernetes writes timestamps:
// "2026-11-29T10:39:14Z".
std::string FormatRfc3339(int64_t unix_ms);

// Unix milliseconds of an RFC 3339 date-time, as Kubernetes and its client
// plugins write them: "2026-11-29T10:39:14Z", with optional fractional
// seconds (kept to the millisecond) and a "Z" or "+hh:mm"/"-hh:mm" offset.
// nullopt for anything else, including an impossible date.
std::optional<int64_t> ParseRfc3339(std::string_view text);

// kubectl-style age: "42s", "3m12s", "5h3m", "12d".
std::string FormatAge(int64_t age_ms);

// An HTTP Date header (RFC 9110's IMF-fixdate, whole seconds, as every
// server writes it): "Sun, 06 Nov 1994 08:49:37 GMT". The parse takes that
// form only (not the obsolete RFC 850 or asctime ones): unset otherwise.
std::string FormatHttpDate(int64_t unix_ms);
std::optional<int64_t> ParseHttpDate(std::string_view text);

}  // namespace gantry
