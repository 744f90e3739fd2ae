// Stragglers: reads the answers a pass stopped waiting for, one thread per
// cluster that has any, so that one cluster slow to answer holds neither
// the pass nor the other clusters' answers (Engine::RunActions hands over
// a request whose answer has not come kStragglerGrace after its wave went
// out). Each task reads one answer, bounded by its request's deadline, and
// does what follows it; a cluster's tasks run in the order handed over,
// which is about the order their deadlines come in.
//
// A thread ends once its cluster has nothing more to read; Stop (and the
// destructor) lets every task handed over run, then joins.
//
// Thread-safety: all members from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace gantry::dispatch {

class Stragglers {
 public:
  Stragglers() = default;
  ~Stragglers() { Stop(); }
  Stragglers(const Stragglers&) = delete;
  Stragglers& operator=(const Stragglers&) = delete;

  // Runs task on cluster's thread. False once stopping (task not run).
  bool Hand(const std::string& cluster, std::function<void()> task);
  void Stop();

 private:
  struct Lane {
    std::deque<std::function<void()>> tasks;
    bool running = false;  // a thread works this lane
  };
  void Run(const std::string& cluster);

  std::mutex mu_;
  std::condition_variable idle_;
  std::map<std::string, Lane> lanes_;
  std::map<std::string, std::thread> threads_;  // ended ones are joined by the next Hand, or Stop
  size_t pending_ = 0;
  bool stopping_ = false;
};

}  // namespace gantry::dispatch
