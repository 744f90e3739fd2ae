#include "slow_lane.h"

#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

#include "gantry/common/thread_name.h"

namespace gantry::api {

SlowLane::SlowLane(std::size_t capacity, const char* thread_name)
    : capacity_(capacity), thread_name_(thread_name), thread_([this] { Run(); }) {}

SlowLane::~SlowLane() { Stop(); }

void SlowLane::Stop() {
  std::lock_guard once(stop_mu_);
  std::deque<Work> left;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    left.swap(queue_);
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  for (Work& work : left) work(false);
}

bool SlowLane::Post(Work work) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || queue_.size() >= capacity_) return false;
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
  return true;
}

void SlowLane::Run() {
  SetThreadName(thread_name_);
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Work work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      work(true);
    } catch (const std::exception& e) {
      // Handlers report expected failures as values; this is a bug (as on
      // the server's loop, it must not end the daemon).
      spdlog::error("api: a request on the slow lane threw: {}", e.what());
    }
    lock.lock();
  }
}

}  // namespace gantry::api
