// Reconciler: the level-triggered loop that moves jobs toward their desired
// state. It owns a work queue of job uids that de-duplicates keys (a job
// woken ten times before it is processed is processed once) and supports
// delayed requeues.
//
// Today it completes cancellation of jobs that have nothing remote to clean
// up (Cancelling -> Cancelled). The dispatch engine extends Reconcile() with
// the protocol in DESIGN.md; the queue, the wake-up path and the start-up
// scan are the parts it builds on.
//
// Correctness never depends on memory: at Start the reconciler scans the
// store for jobs in non-final phases, so work that a crash interrupted is
// picked up again.
//
// Thread-safety: Wake from any thread; one worker thread runs Reconcile.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "gantry/common/clock.h"
#include "gantry/common/job_waker.h"
#include "gantry/store/job_store.h"

namespace gantry {

class Reconciler final : public JobWaker {
 public:
  Reconciler(JobStore& store, const Clock& clock);
  ~Reconciler() override;  // Stop()s

  // Scans the store for unfinished work, then starts the worker thread.
  Status Start();
  // Finishes the job in hand, then stops; queued keys are dropped (they are
  // found again by the next start's scan).
  void Stop();

  void Wake(const std::string& job_uid) override;
  // Processes job_uid no earlier than delay_ms from now.
  void WakeAfter(const std::string& job_uid, int64_t delay_ms);

  // Jobs reconciled since start (for tests and metrics).
  int64_t reconciled() const;

 private:
  void Run();
  // One level-triggered pass over one job. Returns a requeue delay in ms, or
  // -1 when the job needs nothing more until something changes.
  int64_t Reconcile(const std::string& uid);

  JobStore& store_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;
  std::set<std::string> queued_;                  // keys in ready_ (de-duplication)
  std::multimap<int64_t, std::string> delayed_;   // due time (clock ms) -> key
  bool stopping_ = false;
  int64_t reconciled_ = 0;
  std::thread worker_;
};

}  // namespace gantry
