// Reconciler: the level-triggered loop that moves jobs toward their desired
// state. It owns a work queue of job uids that de-duplicates keys (a job
// woken ten times before it is processed is processed once) and supports
// delayed requeues.
//
// The pass itself is a function given at construction: the dispatch engine's
// (engine.h). Without one, the built-in pass only completes cancellations
// (nothing remote exists without an engine); the API tests use that.
//
// Correctness never depends on memory: at Start the reconciler scans the
// store for jobs in non-final phases and jobs with remote intents left, so
// work that a crash interrupted is picked up again.
//
// Several workers run passes in parallel, never two on the same job: a key
// woken while its pass runs is run again right after.
//
// Order of service: urgent wakes (jobs in flight), then plain wakes and due
// timers, then new jobs by priority (highest first), then submission order,
// so that a backlog of new submissions is nominated in that order.
//
// Thread-safety: Wake from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <functional>
#include <thread>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "gantry/common/clock.h"
#include "gantry/dispatch/job_intake.h"
#include "gantry/store/job_scan.h"
#include "gantry/store/job_store.h"

namespace gantry {

class Reconciler final : public dispatch::JobIntake {
 public:
  // What one pass over one job asks for: a requeue delay in ms, or -1 for
  // "only when woken"; and whether that delay is a backstop only (nothing
  // of the job's own is due then: backstop_timers()).
  struct PassResult {
    PassResult(int64_t requeue, bool is_backstop = false) : requeue_ms(requeue), backstop(is_backstop) {}
    int64_t requeue_ms;
    bool backstop;
  };
  using PassFn = std::function<PassResult(const std::string& job_uid)>;

  // scan_page: rows per store read in the scans (job_scan.h).
  Reconciler(JobStore& store, const Clock& clock, PassFn pass = nullptr, int workers = 1,
             int scan_page = kScanPage);
  ~Reconciler() override;  // Stop()s

  // Scans the store for unfinished work, then starts the worker thread.
  Status Start();
  // Finishes the job in hand, then stops; queued keys are dropped (they are
  // found again by the next start's scan).
  void Stop();
  // Starts no pass from now on, without waiting for those in hand (Stop
  // joins them): a shutdown lets them end while the API drains.
  void Quiesce();
  // Wakes every job in a non-final phase (start-up, inventory reload), the
  // Queued ones as new jobs (WakeNew). Returns how many.
  Result<size_t> WakeUnfinished();
  // Wakes every Queued job as a new job (WakeNew), and every Nominating
  // one: a cluster that became Ready may be the first candidate of a queued
  // job, and a cluster an AllAtOnce job waiting for admission has no copy
  // in yet (Decide step 7). Unschedulable jobs too, as new ones: the
  // cluster may be one that can run them. Returns how many.
  Result<size_t> WakeWaiting();

  void Wake(const std::string& job_uid) override { Enqueue(job_uid, Lane::kPlain); }
  void CancelRequested(const std::string& job_uid, std::function<void()> acknowledge) override {
    WakeUrgent(job_uid);
    acknowledge();
  }
  // A new job: served after the other wakes, by priority, then seq.
  void Created(JobRecord record, std::shared_ptr<JobSpec> spec) override;
  void WakeNew(const std::string& job_uid, int32_t priority, int64_t seq);
  // Ahead of every plain Wake: for jobs already in flight (a watch event, a
  // cluster that went away), so that leases, starts and finishes are not
  // stuck behind a burst of new submissions.
  void WakeUrgent(const std::string& job_uid) { Enqueue(job_uid, Lane::kUrgent); }
  // Processes job_uid no earlier than delay_ms from now.
  void WakeAfter(const std::string& job_uid, int64_t delay_ms);

  // Jobs waiting on a backstop timer now (PassResult::backstop, not yet
  // due or answered by an earlier pass). Read without the lock.
  size_t backstop_timers() const { return backstop_timers_.load(std::memory_order_relaxed); }
  // Jobs reconciled since start (for tests and metrics).
  int64_t reconciled() const;
  // At most this many passes at once (clamped to 1..workers; initially
  // workers): the other workers wait before they take a job, so the queue's
  // order holds. The engine sets it from how its clusters answer
  // (Engine::SetPassAllowance).
  void SetConcurrency(int passes);
  int concurrency() const;
  // Workers waiting because that many passes are at work while jobs are
  // queued for them (0 when none is queued).
  int gated() const;
  // Passes at work now.
  int active() const;

  // Idle workers now, and how often a worker has woken from its idle wait
  // (for tests: a wake that is not needed costs two context switches).
  int idle_workers() const;
  int64_t wakeups() const;

 private:
  void Run();
  // Wakes every job in the phase (Wake); adds how many to *found.
  Status WakePhase(JobPhase phase, size_t* found);
  enum class Lane { kUrgent, kPlain, kNew };
  void Enqueue(const std::string& job_uid, Lane lane, int32_t priority = 0, int64_t seq = 0);
  // REQUIRES: mu_ held. Whether a key waits in any lane.
  bool HasWorkLocked() const { return !urgent_.empty() || !ready_.empty() || !new_.empty(); }
  // REQUIRES: mu_ held. Wakes one idle worker for work that waits.
  void WakeWorkerLocked();
  // REQUIRES: mu_ held. After a timer was set: wakes the timer waiter if it
  // now sleeps past the earliest due time.
  void TimerSetLocked();
  // REQUIRES: mu_ held. Keeps only the earliest due time per key, stamped
  // with the sequence number of the latest request it stands for.
  void ScheduleLocked(const std::string& uid, int64_t due_ms, bool backstop = false);
  // REQUIRES: mu_ held. Drops uid's timer if nothing asked for it after
  // request since_seq: a pass that began then has seen what it was for, and
  // its own result says when to look again. (A sequence, not a time: a
  // wall clock stepped back during the pass would make a request that came
  // in meanwhile look older than the pass, and drop it.)
  void DropTimerLocked(const std::string& uid, uint64_t since_seq);
  // One level-triggered pass over one job. Returns a requeue delay in ms, or
  // -1 when the job needs nothing more until something changes.
  int64_t Reconcile(const std::string& uid);

  JobStore& store_;
  const Clock& clock_;
  PassFn pass_;
  int worker_count_;
  int scan_page_;
  std::unordered_set<std::string> active_;  // keys being reconciled now
  std::unordered_set<std::string> dirty_;   // woken while active: run again after
  mutable std::mutex mu_;
  // Idle workers. One of them, the timer waiter, sleeps on timer_cv_ until
  // the earliest timer is due; the others sleep on cv_ until there is work.
  // So a timer coming due wakes one thread, not every idle one, and a timer
  // set later than the earliest wakes none. Every wake-up is two context
  // switches, and at hundreds of jobs a second they add up.
  std::condition_variable cv_;
  std::condition_variable timer_cv_;
  int sleeping_ = 0;          // idle workers on cv_
  // SetConcurrency: the passes allowed at once, and the workers waiting on
  // gate_cv_ because that many are at work.
  int allowed_ = 0;
  int gated_ = 0;
  std::condition_variable gate_cv_;
  bool timer_waiter_ = false;  // an idle worker is on timer_cv_
  int64_t timer_due_ms_ = 0;  // the monotonic time it wakes at (INT64_MAX: only its idle poll)
  int64_t wakeups_ = 0;
  uint64_t request_seq_ = 0;  // timer requests so far (ScheduleLocked)
  std::deque<std::string> ready_;
  std::deque<std::string> urgent_;                // served before ready_
  // New jobs, served after ready_: (-priority, seq) orders them.
  std::set<std::tuple<int64_t, int64_t, std::string>> new_;
  std::unordered_set<std::string> queued_;        // keys waiting in any of the three (de-duplication)
  std::unordered_set<std::string> in_urgent_;     // keys waiting in urgent_
  std::multimap<int64_t, std::string> delayed_;   // due time (Clock::MonotonicMillis) -> key
  struct Timer {
    int64_t due_ms = 0;  // its entry in delayed_
    uint64_t set_seq = 0;  // when it was last asked for (request_seq_ then)
    bool backstop = false;
  };
  std::map<std::string, Timer> due_;              // key -> its one entry in delayed_
  // REQUIRES: mu_ held. Erases `it` from due_ (not from delayed_), counted.
  void EraseTimerLocked(std::map<std::string, Timer>::iterator it);
  std::atomic<size_t> backstop_timers_{0};        // entries of due_ with backstop set
  bool stopping_ = false;
  int64_t reconciled_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace gantry
