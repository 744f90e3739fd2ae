#include "gantry/dispatch/reconciler.h"

#include <future>

#include <spdlog/spdlog.h>

namespace gantry {
namespace {

// Jobs read per phase at start-up. A larger backlog is still found: each
// reconciled job that stays unfinished is requeued by its own pass.
constexpr int kStartupScanLimit = 100'000;
// How long the worker sleeps at most when nothing is due: bounds the delay
// of a WakeAfter whose due time the fake clock jumped over.
constexpr auto kIdlePoll = std::chrono::milliseconds(500);

}  // namespace

Reconciler::Reconciler(JobStore& store, const Clock& clock) : store_(store), clock_(clock) {}

Reconciler::~Reconciler() { Stop(); }

Status Reconciler::Start() {
  auto cancelling = store_.UidsInPhase(JobPhase::kCancelling, kStartupScanLimit);
  if (!cancelling.ok()) return cancelling.status();
  for (const std::string& uid : *cancelling) Wake(uid);
  if (!cancelling->empty()) {
    spdlog::info("reconciler: {} cancellation(s) to finish from before the restart", cancelling->size());
  }
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void Reconciler::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Reconciler::Wake(const std::string& job_uid) {
  bool was_idle;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || !queued_.insert(job_uid).second) return;
    was_idle = ready_.empty();
    ready_.push_back(job_uid);
  }
  // A worker with work queued is not waiting: waking it again would cost a
  // futex call per submission under load.
  if (was_idle) cv_.notify_one();
}

void Reconciler::WakeAfter(const std::string& job_uid, int64_t delay_ms) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    delayed_.emplace(clock_.NowMillis() + delay_ms, job_uid);
  }
  cv_.notify_one();
}

int64_t Reconciler::reconciled() const {
  std::lock_guard lock(mu_);
  return reconciled_;
}

void Reconciler::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    int64_t now = clock_.NowMillis();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string key = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      if (queued_.insert(key).second) ready_.push_back(std::move(key));
    }
    if (ready_.empty()) {
      cv_.wait_for(lock, kIdlePoll);
      continue;
    }
    std::string uid = std::move(ready_.front());
    ready_.pop_front();
    queued_.erase(uid);
    lock.unlock();
    int64_t requeue = Reconcile(uid);
    if (requeue >= 0) WakeAfter(uid, requeue);
    lock.lock();
    ++reconciled_;
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
