#include "gantry/dispatch/reconciler.h"
#include "gantry/common/thread_name.h"

#include <algorithm>
#include <future>

#include <spdlog/spdlog.h>

#include "gantry/store/job_scan.h"

namespace gantry {
namespace {

// How long the worker sleeps at most when nothing is due: bounds the delay
// of a WakeAfter whose due time the fake clock jumped over.
constexpr auto kIdlePoll = std::chrono::milliseconds(500);

}  // namespace

Reconciler::Reconciler(JobStore& store, const Clock& clock, PassFn pass, int workers, int scan_page)
    : store_(store),
      clock_(clock),
      pass_(std::move(pass)),
      worker_count_(std::max(1, workers)),
      scan_page_(std::max(1, scan_page)),
      allowed_(worker_count_) {}

Reconciler::~Reconciler() { Stop(); }

Status Reconciler::WakePhase(JobPhase phase, size_t* found) {
  return ForEachJobInPhase(
      store_, phase,
      [&](const JobKey& job) {
        Wake(job.uid);
        ++*found;
      },
      scan_page_);
}

Result<size_t> Reconciler::WakeUnfinished() {
  size_t found = 0;
  for (JobPhase phase : {JobPhase::kCancelling, JobPhase::kAdmitted, JobPhase::kRunning}) {
    GANTRY_RETURN_IF_ERROR(WakePhase(phase, &found));
  }
  auto waiting = WakeWaiting();
  if (!waiting.ok()) return waiting.status();
  return found + *waiting;
}

Result<size_t> Reconciler::WakeWaiting() {
  size_t found = 0;
  GANTRY_RETURN_IF_ERROR(WakePhase(JobPhase::kNominating, &found));
  // Queued jobs go where new ones go: nominated by priority, then
  // submission order, after the jobs in flight. Unschedulable ones too:
  // judged against the clusters of then, they are judged again against
  // these (a start, a reload, a cluster Ready: one added at a reload counts
  // only once it answers).
  for (JobPhase phase : {JobPhase::kQueued, JobPhase::kUnschedulable}) {
    GANTRY_RETURN_IF_ERROR(ForEachJobInPhase(
        store_, phase,
        [&](const JobKey& job) {
          WakeNew(job.uid, job.priority, job.seq);
          ++found;
        },
        scan_page_));
  }
  return found;
}

Status Reconciler::Start() {
  auto found = WakeUnfinished();
  if (!found.ok()) return found.status();
  size_t with_intents = 0;
  GANTRY_RETURN_IF_ERROR(ForEachUidWithIntents(
      store_, nullptr,
      [&](const std::string& uid) {
        Wake(uid);
        ++with_intents;
      },
      scan_page_));
  if (*found + with_intents > 0) {
    spdlog::info("reconciler: {} unfinished job(s) and {} with remote objects to converge from before the restart",
                 *found, with_intents);
  }
  for (int i = 0; i < worker_count_; ++i) {
    workers_.emplace_back([this] {
      SetThreadName("dispatch");
      Run();
    });
  }
  return Status::Ok();
}

void Reconciler::Quiesce() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  timer_cv_.notify_all();
  gate_cv_.notify_all();
}

void Reconciler::Stop() {
  Quiesce();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void Reconciler::Created(JobRecord record, std::shared_ptr<JobSpec> spec) {
  (void)spec;
  WakeNew(record.uid, record.priority, record.seq);
}

void Reconciler::WakeNew(const std::string& job_uid, int32_t priority, int64_t seq) {
  Enqueue(job_uid, Lane::kNew, priority, seq);
}

void Reconciler::Enqueue(const std::string& job_uid, Lane lane, int32_t priority, int64_t seq) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  if (active_.count(job_uid)) {
    dirty_.insert(job_uid);
    return;
  }
  const bool had_work = HasWorkLocked();
  bool fresh = queued_.insert(job_uid).second;
  if (lane == Lane::kUrgent) {
    // A key waiting in ready_ or new_ also goes to urgent_; the entry left
    // behind is skipped when reached (its key is no longer queued).
    if (!in_urgent_.insert(job_uid).second) return;
    urgent_.push_back(job_uid);
  } else if (!fresh) {
    return;
  } else if (lane == Lane::kNew) {
    new_.emplace(-int64_t{priority}, seq, job_uid);
  } else {
    ready_.push_back(job_uid);
  }
  // With work queued already, a worker was woken for it or none is idle;
  // the worker that takes it wakes the next one (Run). Waking another here
  // would cost a futex call per submission under load.
  if (!had_work) WakeWorkerLocked();
}

void Reconciler::WakeWorkerLocked() {
  if (sleeping_ > 0) {
    cv_.notify_one();
  } else if (timer_waiter_) {
    timer_cv_.notify_one();
  }
}

void Reconciler::TimerSetLocked() {
  if (timer_waiter_ && !delayed_.empty() && delayed_.begin()->first < timer_due_ms_) {
    timer_due_ms_ = delayed_.begin()->first;
    timer_cv_.notify_one();
  }
}

void Reconciler::WakeAfter(const std::string& job_uid, int64_t delay_ms) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  ScheduleLocked(job_uid, clock_.MonotonicMillis() + delay_ms);
  TimerSetLocked();
}

namespace {

void EraseEntry(std::multimap<int64_t, std::string>& delayed, int64_t due_ms, const std::string& uid) {
  auto range = delayed.equal_range(due_ms);
  for (auto d = range.first; d != range.second; ++d) {
    if (d->second == uid) {
      delayed.erase(d);
      return;
    }
  }
}

}  // namespace

void Reconciler::ScheduleLocked(const std::string& uid, int64_t due_ms, bool backstop) {
  const uint64_t seq = ++request_seq_;
  auto it = due_.find(uid);
  if (it != due_.end()) {
    if (it->second.due_ms <= due_ms) {
      it->second.set_seq = seq;  // the earlier timer now stands for this request too
      return;
    }
    EraseEntry(delayed_, it->second.due_ms, uid);
    EraseTimerLocked(it);
  }
  delayed_.emplace(due_ms, uid);
  due_[uid] = Timer{due_ms, seq, backstop};
  if (backstop) backstop_timers_.fetch_add(1, std::memory_order_relaxed);
}

void Reconciler::EraseTimerLocked(std::map<std::string, Timer>::iterator it) {
  if (it->second.backstop) backstop_timers_.fetch_sub(1, std::memory_order_relaxed);
  due_.erase(it);
}

void Reconciler::DropTimerLocked(const std::string& uid, uint64_t since_seq) {
  auto it = due_.find(uid);
  if (it == due_.end() || it->second.set_seq > since_seq) return;
  EraseEntry(delayed_, it->second.due_ms, uid);
  EraseTimerLocked(it);
}

int64_t Reconciler::reconciled() const {
  std::lock_guard lock(mu_);
  return reconciled_;
}

void Reconciler::SetConcurrency(int passes) {
  bool more = false;
  {
    std::lock_guard lock(mu_);
    const int allowed = std::clamp(passes, 1, worker_count_);
    more = allowed > allowed_;
    allowed_ = allowed;
  }
  if (more) gate_cv_.notify_all();
}

int Reconciler::concurrency() const {
  std::lock_guard lock(mu_);
  return allowed_;
}

int Reconciler::gated() const {
  std::lock_guard lock(mu_);
  return HasWorkLocked() ? gated_ : 0;  // waiting at the gate with nothing queued is idling
}

int Reconciler::active() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(active_.size());
}

int Reconciler::idle_workers() const {
  std::lock_guard lock(mu_);
  return sleeping_ + (timer_waiter_ ? 1 : 0);
}

int64_t Reconciler::wakeups() const {
  std::lock_guard lock(mu_);
  return wakeups_;
}

void Reconciler::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    int64_t now = clock_.MonotonicMillis();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string key = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      if (auto it = due_.find(key); it != due_.end()) EraseTimerLocked(it);
      if (active_.count(key)) {
        dirty_.insert(key);
      } else if (queued_.insert(key).second) {
        ready_.push_back(std::move(key));
      }
    }
    if (!HasWorkLocked()) {
      if (timer_waiter_) {
        ++sleeping_;
        cv_.wait(lock);
        --sleeping_;
      } else {
        auto wait = kIdlePoll;
        timer_due_ms_ = INT64_MAX;
        if (!delayed_.empty()) {
          timer_due_ms_ = delayed_.begin()->first;
          wait = std::min(wait, std::chrono::milliseconds(std::max<int64_t>(1, timer_due_ms_ - now)));
        }
        timer_waiter_ = true;
        timer_cv_.wait_for(lock, wait);
        timer_waiter_ = false;
      }
      ++wakeups_;
      continue;
    }
    if (static_cast<int>(active_.size()) >= allowed_) {
      // As many passes at work as allowed: one of their workers takes the
      // next job when it is done.
      ++gated_;
      gate_cv_.wait(lock);
      --gated_;
      continue;
    }
    std::string uid;
    if (!urgent_.empty()) {
      uid = std::move(urgent_.front());
      urgent_.pop_front();
      in_urgent_.erase(uid);
    } else if (!ready_.empty()) {
      uid = std::move(ready_.front());
      ready_.pop_front();
    } else {
      uid = std::get<2>(*new_.begin());
      new_.erase(new_.begin());
    }
    if (!queued_.erase(uid)) continue;  // served from another queue already
    // While this worker is busy: another idle one takes the work still
    // queued, and one watches the timers if this one was doing it.
    if (HasWorkLocked()) {
      WakeWorkerLocked();
    } else if (!timer_waiter_ && sleeping_ > 0) {
      cv_.notify_one();
    }
    active_.insert(uid);
    const uint64_t started = request_seq_;  // timers asked for up to now are this pass's
    lock.unlock();
    PassResult result(-1);
    try {
      result = pass_ ? pass_(uid) : PassResult(Reconcile(uid));
    } catch (const std::exception& e) {
      spdlog::error("reconciler: job {}: {}", uid, e.what());
      result = PassResult(5'000);
    }
    const int64_t requeue = result.requeue_ms;
    lock.lock();
    ++reconciled_;
    active_.erase(uid);
    // A timer asked for before this pass began (a resync, a bookkeeping
    // delay, a retry) is answered by it; one asked for meanwhile is kept.
    DropTimerLocked(uid, started);
    if (dirty_.erase(uid) || requeue == 0) {
      // Woken while in hand, or asked to look again at once: it is in
      // flight. This worker takes it next.
      queued_.insert(uid);
      if (in_urgent_.insert(uid).second) urgent_.push_back(uid);
    } else if (requeue > 0) {
      ScheduleLocked(uid, clock_.MonotonicMillis() + requeue, result.backstop);
      TimerSetLocked();
    }
  }
}

int64_t Reconciler::Reconcile(const std::string& uid) {
  auto job = store_.GetByUid(uid);
  if (!job.ok()) {
    if (job.status().code() != Code::kNotFound) {
      spdlog::warn("reconciler: reading job {}: {}", uid, job.status().ToString());
      return 1000;
    }
    return -1;  // purged meanwhile
  }
  // Step 1: a cancellation with nothing remote to withdraw completes at once.
  // (No remote objects exist before the dispatch engine creates them.)
  if (job->phase == JobPhase::kCancelling) {
    std::promise<Status> done;
    JobEvent event;
    event.job_uid = uid;
    event.reason = "Cancelled";
    event.message = "no remote objects to withdraw; job cancelled";
    store_.Transition(uid, JobPhase::kCancelling, JobPhase::kCancelled, "cancelled by request", event,
                      [&done](Result<JobRecord> r) { done.set_value(r.status()); });
    Status s = done.get_future().get();
    if (s.ok()) {
      spdlog::info("job {}/{} cancelled uid={}", job->ns, job->name, uid);
    } else if (s.code() != Code::kConflict) {
      spdlog::warn("reconciler: cancelling {}: {}", uid, s.ToString());
      return 1000;
    }
  }
  return -1;
}

}  // namespace gantry
