// machine_probe: what the machine charges for the three things a dispatched
// job does most, so that the dispatch benchmark's figures can be read
// against the machine they came from (the same build has run at twice the
// CPU per job on one virtual machine as on another):
//
//   syscall      a system call that does nothing (getppid)
//   wake         a round trip between two threads through a pipe: two
//                wake-ups of a sleeping thread and four context switches
//   fdatasync    a 4 KiB append to a file, then fdatasync, in DIR
//
//   machine_probe DIR
//
// Prints one line: medians of five rounds each.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Fn>
double MedianMicros(int rounds, int per_round, Fn fn) {
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < per_round; ++i) fn();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / per_round);
  }
  return Median(us);
}

bool Ok(ssize_t n) { return n == 1; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: machine_probe DIR (where the fdatasync test file goes)\n");
    return 2;
  }
  const double syscall_us = MedianMicros(5, 100'000, [] { syscall(SYS_getppid); });

  int to_peer[2], to_us[2];
  if (pipe(to_peer) != 0 || pipe(to_us) != 0) {
    std::perror("pipe");
    return 1;
  }
  constexpr int kTrips = 5 * 5'000;
  bool peer_ok = true;
  std::thread peer([&] {
    char c;
    for (int i = 0; i < kTrips; ++i) {
      if (!Ok(read(to_peer[0], &c, 1)) || !Ok(write(to_us[1], &c, 1))) {
        peer_ok = false;
        return;
      }
    }
  });
  bool ours_ok = true;
  const double wake_us = MedianMicros(5, 5'000, [&] {
    char c = 'x';
    ours_ok = ours_ok && Ok(write(to_peer[1], &c, 1)) && Ok(read(to_us[0], &c, 1));
  });
  peer.join();
  for (int fd : {to_peer[0], to_peer[1], to_us[0], to_us[1]}) close(fd);
  if (!peer_ok || !ours_ok) {
    std::fprintf(stderr, "machine_probe: the pipe round trip failed\n");
    return 1;
  }

  const std::string path = std::string(argv[1]) + "/.machine_probe";
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  std::string page(4096, 'p');
  bool io_ok = true;
  const double sync_us = MedianMicros(5, 40, [&] {
    io_ok = io_ok && write(fd, page.data(), page.size()) == static_cast<ssize_t>(page.size()) && fdatasync(fd) == 0;
  });
  close(fd);
  unlink(path.c_str());
  if (!io_ok) {
    std::fprintf(stderr, "machine_probe: write or fdatasync failed in %s\n", argv[1]);
    return 1;
  }
  std::printf("machine     syscall %.2f us, thread wake round trip %.1f us, 4 KiB append + fdatasync %.0f us "
              "(medians; bench/machine_probe.cc)\n",
              syscall_us, wake_us, sync_us);
  return 0;
}
