// LogLimiter: lets a log line that repeats on every attempt (a commit
// failing on a full disk, every job's write failing with it) through at
// most once an interval, and counts the ones it held back, so that the
// first line after the interval can say how many there were. A failure a
// few dozen passes a second run into must not fill the disk that holds
// the journal.
//
// Thread-safety: Allow from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace gantry {

class LogLimiter {
 public:
  explicit LogLimiter(int64_t interval_ms = 10'000) : interval_ms_(interval_ms) {}

  // Whether the line may be logged at now_ms (a monotonic time); when it
  // may, *held is how many were held back since the last one let through.
  bool Allow(int64_t now_ms, int64_t* held);
  // Allow at the monotonic clock's time.
  bool Allow(int64_t* held);

  // A success (a commit) at now_ms (the clock Allow is given). When no
  // failure came for an interval before it, the trouble is over: the next
  // line is let through at once, and how many were held back since the last
  // line let through (which no later line will tell) is returned. While
  // failures still come between successes (a disk with room for small
  // writes only), nothing changes (0): the lines stay limited.
  int64_t Reset(int64_t now_ms);
  // Reset at the monotonic clock's time.
  int64_t Reset();

  // What to add to the line let through when held > 0 ("N more like it
  // held back ..."), else "".
  std::string HeldText(int64_t held) const;

 private:
  const int64_t interval_ms_;
  std::mutex mu_;
  std::atomic<bool> logged_{false};  // read without the lock by Reset, on every success
  int64_t last_ms_ = 0;       // the last line let through
  int64_t last_seen_ms_ = 0;  // the last line asked for, let through or not
  int64_t held_ = 0;
};

}  // namespace gantry
