// StartNotice: calls a function every `every` on a thread of its own for as
// long as it lives: while the store's start checks the file and migrates it
// (sqlite_store.cc), the daemon tells systemd each time to extend its start
// timeout. A thread, not SQLite's progress handler: the SQLite of Debian 12
// (3.40) calls no handler inside quick_check's walk of the B-trees, which
// is one step of its program and, on a cold disk, nearly all of its time.
// Private to the store.
//
// Thread-safety: the function runs on the notice's thread; the destructor
// waits for a call under way to return.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace gantry {

class StartNotice {
 public:
  // An empty call starts no thread. every below 1 ms is taken as 1 ms.
  StartNotice(std::function<void()> call, std::chrono::milliseconds every);
  ~StartNotice();
  StartNotice(const StartNotice&) = delete;
  StartNotice& operator=(const StartNotice&) = delete;

 private:
  void Run();

  std::function<void()> call_;
  std::chrono::milliseconds every_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace gantry
