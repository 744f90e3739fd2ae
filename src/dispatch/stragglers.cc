#include "stragglers.h"

#include <exception>
#include <system_error>
#include <vector>

#include <spdlog/spdlog.h>

#include "gantry/common/thread_name.h"

namespace gantry::dispatch {

bool Stragglers::Hand(const std::string& cluster, std::function<void()> task) {
  std::vector<std::thread> ended;
  bool handed = true;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    Lane& lane = lanes_[cluster];
    lane.tasks.push_back(std::move(task));
    ++pending_;
    if (lane.running) return true;
    lane.running = true;
    // The lane's last thread has ended (running was cleared as it left).
    if (auto t = threads_.find(cluster); t != threads_.end()) {
      ended.push_back(std::move(t->second));
      threads_.erase(t);
    }
    try {
      threads_.emplace(cluster, std::thread([this, cluster] { Run(cluster); }));
    } catch (const std::system_error& e) {  // no thread to be had: the caller reads the answer
      spdlog::warn("dispatch: no thread for {}'s late answers: {}", cluster, e.what());
      lane.tasks.pop_back();
      --pending_;
      lane.running = false;
      idle_.notify_all();
      handed = false;
    }
  }
  for (std::thread& t : ended) t.join();
  return handed;
}

void Stragglers::Run(const std::string& cluster) {
  SetThreadName("dispatch-late");
  std::unique_lock lock(mu_);
  Lane& lane = lanes_[cluster];
  while (!lane.tasks.empty()) {
    std::function<void()> task = std::move(lane.tasks.front());
    lane.tasks.pop_front();
    lock.unlock();
    try {
      task();
    } catch (const std::exception& e) {
      spdlog::error("dispatch: reading a late answer from {}: {}", cluster, e.what());
    }
    task = nullptr;  // what it holds (a connection's lease) goes back now
    lock.lock();
    --pending_;
  }
  lane.running = false;
  idle_.notify_all();
}

void Stragglers::Stop() {
  std::map<std::string, std::thread> threads;
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
    idle_.wait(lock, [&] { return pending_ == 0; });
    threads.swap(threads_);
  }
  for (auto& [cluster, t] : threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace gantry::dispatch
