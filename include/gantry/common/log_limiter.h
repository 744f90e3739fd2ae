// LogLimiter: lets a log line that repeats on every attempt (a commit
// failing on a full disk, every job's write failing with it) through at
// most once an interval, and counts the ones it held back, so that the
// first line after the interval can say how many there were. A failure a
// few dozen passes a second run into must not fill the disk that holds
// the journal.
//
// Thread-safety: Allow from any thread.
#pragma once

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

  // What to add to the line let through when held > 0 ("N more like it
  // held back ..."), else "".
  std::string HeldText(int64_t held) const;

 private:
  const int64_t interval_ms_;
  std::mutex mu_;
  bool logged_ = false;
  int64_t last_ms_ = 0;
  int64_t held_ = 0;
};

}  // namespace gantry
