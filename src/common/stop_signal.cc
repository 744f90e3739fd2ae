#include "gantry/common/stop_signal.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <thread>

namespace gantry {

StopSignal::StopSignal() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

StopSignal::~StopSignal() {
  if (fd_ >= 0) ::close(fd_);
}

void StopSignal::Set() {
  if (set_.exchange(true)) return;
  if (fd_ >= 0) {
    const uint64_t one = 1;
    // Never read back: the count stays above zero, so the fd stays readable.
    [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof(one));
  }
}

bool StopFdSet(int fd, std::chrono::milliseconds wait) {
  if (fd < 0) {
    if (wait.count() > 0) std::this_thread::sleep_for(wait);
    return false;
  }
  const auto until = std::chrono::steady_clock::now() + wait;
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

}  // namespace gantry
