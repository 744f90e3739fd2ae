#include "resolve.h"

#include <time.h>

#include <algorithm>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "gantry/common/stop_signal.h"
#include "gantry/common/thread_name.h"

namespace gantry::http {
namespace {

using Clock = std::chrono::steady_clock;

// How often a lookup's wait looks at its stop.
constexpr std::chrono::milliseconds kStopLookEvery{50};

addrinfo TcpHints(int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  return hints;
}

// One getaddrinfo_a request and everything it points to: glibc's helper
// thread reads the name, service and hints and writes the result while the
// lookup runs, so they live and die together.
struct Lookup {
  std::string name, service;
  addrinfo hints = TcpHints(0);
  gaicb request{};

  Lookup(const std::string& host, const std::string& port) : name(host), service(port) {
    request.ar_name = name.c_str();
    request.ar_service = service.c_str();
    request.ar_request = &hints;
  }
  ~Lookup() {
    if (request.ar_result) freeaddrinfo(request.ar_result);
  }
  Lookup(const Lookup&) = delete;
  Lookup& operator=(const Lookup&) = delete;
};

// Waits for the end of a lookup that gai_cancel could not take back, then
// frees it, on a thread of its own: the caller has its deadline to keep.
void FreeWhenDone(std::unique_ptr<Lookup> lookup) {
  Lookup* raw = lookup.release();
  try {
    std::thread([raw] {
      SetThreadName("resolve-reap");
      const gaicb* list[] = {&raw->request};
      while (gai_error(&raw->request) == EAI_INPROGRESS) gai_suspend(list, 1, nullptr);
      delete raw;
    }).detach();
  } catch (const std::system_error&) {
    // No thread to be had: the lookup is leaked rather than freed under
    // glibc's feet (the lambda held a raw pointer, so nothing was freed).
  }
}

timespec Timeout(Clock::duration left) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace

Result<AddrInfoList> Resolve(const std::string& host, const std::string& port, Clock::time_point deadline,
                             int stop_fd) {
  const addrinfo numeric = TcpHints(AI_NUMERICHOST);
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &numeric, &found) == 0) return AddrInfoList(found);

  auto lookup = std::make_unique<Lookup>(host, port);
  gaicb* requests[] = {&lookup->request};
  if (int rc = getaddrinfo_a(GAI_NOWAIT, requests, 1, nullptr); rc != 0) {
    return Status::Unavailable(fmt::format("resolve {}: {}", host, gai_strerror(rc)));
  }
  const gaicb* waited[] = {&lookup->request};
  bool stopped = false;
  while (gai_error(&lookup->request) == EAI_INPROGRESS) {
    auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) break;
    if (stop_fd >= 0) {
      // gai_suspend cannot wait on a descriptor: the stop is looked at
      // between slices of the wait.
      if ((stopped = StopFdSet(stop_fd))) break;
      left = std::min<Clock::duration>(left, kStopLookEvery);
    }
    const timespec timeout = Timeout(left);
    gai_suspend(waited, 1, &timeout);  // done, timed out or interrupted: the loop asks again
  }
  if (gai_error(&lookup->request) == EAI_INPROGRESS) {
    // gai_cancel answers EAI_CANCELED (taken back before it started),
    // EAI_NOTCANCELED (being served) or EAI_ALLDONE (it ended meanwhile).
    const int cancel = gai_cancel(&lookup->request);
    if (cancel != EAI_ALLDONE) {
      if (cancel == EAI_NOTCANCELED) FreeWhenDone(std::move(lookup));
      return Status::Unavailable(
          fmt::format("resolve {}: {}", host, stopped ? "given up: stopping" : "no answer before the deadline"));
    }
  }
  if (int rc = gai_error(&lookup->request); rc != 0) {
    return Status::Unavailable(fmt::format("resolve {}: {}", host, gai_strerror(rc)));
  }
  return AddrInfoList(std::exchange(lookup->request.ar_result, nullptr));
}

}  // namespace gantry::http
