// StopSignal: a one-way "stop" that a thread blocked in poll() can wait on
// beside its socket: an eventfd that becomes readable for good once Set. A
// quiet connection then needs no periodic wake-up to notice a shutdown (a
// hundred clusters' watches, woken ten times a second each to ask, were
// most of the daemon's CPU at rest).
//
// Thread-safety: Set, is_set and fd from any thread.
#pragma once

#include <atomic>
#include <chrono>

namespace gantry {

class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  void Set();
  bool is_set() const { return set_.load(); }
  // Readable once Set; -1 when no eventfd could be made (then waiters must
  // ask is_set() now and then instead).
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::atomic<bool> set_{false};
};

// Waits up to `wait` for a StopSignal's fd to be readable (0: a look only):
// true once it is. Where only the fd is at hand (a client given it in its
// options). With fd -1 (none), sleeps `wait` and answers false.
bool StopFdSet(int fd, std::chrono::milliseconds wait = std::chrono::milliseconds(0));

}  // namespace gantry
