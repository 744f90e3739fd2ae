#include "start_notice.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "gantry/common/thread_name.h"

namespace gantry {

StartNotice::StartNotice(std::function<void()> call, std::chrono::milliseconds every)
    : call_(std::move(call)), every_(std::max(every, std::chrono::milliseconds(1))) {
  if (call_) thread_ = std::thread([this] { Run(); });
}

StartNotice::~StartNotice() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StartNotice::Run() {
  SetThreadName("store-start");
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, every_, [this] { return done_; })) {
    lock.unlock();
    try {
      call_();
    } catch (const std::exception& e) {  // a notice is a courtesy: the start goes on
      spdlog::warn("store: the start's progress notice failed: {}", e.what());
    }
    lock.lock();
  }
}

}  // namespace gantry
