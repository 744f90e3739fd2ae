#include "gantry/common/stop_signal.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

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

}  // namespace gantry
