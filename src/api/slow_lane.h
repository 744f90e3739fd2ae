// SlowLane: one thread, apart from the HTTP server's loop, for the API work
// whose time grows with what a client sends (parsing a large job document).
// On the loop, a megabyte of YAML would hold every other connection for
// most of a second, and a few such requests the daemon's systemd watchdog.
//
// The queue is bounded: Post refuses work beyond `capacity` waiting, and the
// caller answers 429. Work still queued when the lane is destroyed runs
// with `run` false, to answer without doing it.
//
// The API keeps two: one for job documents, which any submitter fills, and
// one for the operator's work (inventory reloads, the job count of
// /metrics), so that a burst of large submissions neither refuses nor
// delays it (api_service.h).
//
// Thread-safety: Post from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gantry::api {

class SlowLane {
 public:
  using Work = std::function<void(bool run)>;
  // thread_name: the lane's thread, as ps and a debugger show it (at most 15 characters).
  SlowLane(std::size_t capacity, const char* thread_name);
  ~SlowLane();
  SlowLane(const SlowLane&) = delete;
  SlowLane& operator=(const SlowLane&) = delete;

  // False (and work not taken) when `capacity` pieces already wait, or
  // after Stop.
  bool Post(Work work);
  // Ends the lane: the piece running finishes, what waits runs with `run`
  // false. The destructor does it too; the daemon calls it before it
  // stops what the work uses (the engine, the store).
  void Stop();

 private:
  void Run();

  const std::size_t capacity_;
  const char* const thread_name_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Work> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;       // GUARDED_BY(mu_)
  std::mutex stop_mu_;      // one Stop joins
  std::thread thread_;
};

}  // namespace gantry::api
