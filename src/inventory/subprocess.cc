#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "gantry/common/stop_signal.h"

namespace gantry::inventory::internal {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Without a pidfd (kernels before 5.3) nothing wakes poll when a child that
// closed its output exits; it is then asked this often until the deadline.
constexpr int kExitPollMs = 5;

std::string ErrnoText(int err) { return std::generic_category().message(err); }

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// posix_spawn's two setup objects, destroyed on every path.
struct SpawnSetup {
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
};

// A close-on-exec pipe whose ends are both above 2: the child's 0, 1 and 2
// are replaced in order, and an end that were itself 0..2 (a daemon started
// with closed stdio) would be overwritten before it is duplicated.
Status MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::Io("pipe: " + ErrnoText(errno));
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  for (Fd* end : {&read_end, &write_end}) {
    if (end->get() > 2) continue;
    const int moved = fcntl(end->get(), F_DUPFD_CLOEXEC, 3);
    if (moved < 0) return Status::Io("pipe: " + ErrnoText(errno));
    end->Reset(moved);
  }
  return Status::Ok();
}

Result<pid_t> Spawn(const SubprocessSpec& spec, int out_fd, int err_fd) {
  SpawnSetup s;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  int rc = posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&s.actions, out_fd, 1);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&s.actions, err_fd, 2);
  // Descriptors the daemon opened without O_CLOEXEC (a library's) stay ours.
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&s.actions, 3);
  if (rc == 0) {
    rc = posix_spawnattr_setflags(
        &s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  if (rc == 0) rc = posix_spawnattr_setpgroup(&s.attr, 0);  // a group of its own
  if (rc == 0) rc = posix_spawnattr_setsigmask(&s.attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&s.attr, &all);
  if (rc != 0) return Status::Io("cannot be started: " + ErrnoText(rc));

  // posix_spawn's argument arrays are not const-qualified, but it only reads them.
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const bool in_path = spec.command.find('/') == std::string::npos;
  rc = in_path
           ? posix_spawnp(&pid, spec.command.c_str(), &s.actions, &s.attr, argv.data(), envp.data())
           : posix_spawn(&pid, spec.command.c_str(), &s.actions, &s.attr, argv.data(), envp.data());
  if (rc == ENOENT) return Status::NotFound(in_path ? "not found in PATH" : "not found");
  if (rc != 0) return Status::Io("cannot be started: " + ErrnoText(rc));
  return pid;
}

// Reads once from a ready pipe into `into`, keeping at most `limit` bytes.
// False at end of file. *over is set when bytes were dropped.
bool ReadSome(int fd, std::string& into, std::size_t limit, bool* over) {
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  const std::size_t keep =
      std::min(static_cast<std::size_t>(n), limit - std::min(limit, into.size()));
  into.append(buf, keep);
  if (keep < static_cast<std::size_t>(n)) *over = true;
  return true;
}

// Whether the child has exited, without reaping it: until it is reaped its
// pid (and so its process group id) cannot be reused, so kill(-pid) is safe.
bool HasExited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

}  // namespace

Result<SubprocessResult> RunSubprocess(const SubprocessSpec& spec) {
  if (spec.stop_fd >= 0 && StopFdSet(spec.stop_fd)) {
    SubprocessResult stopped;
    stopped.end = SubprocessResult::End::kStopped;
    return stopped;
  }
  Fd out_read, out_write, err_read, err_write;
  GANTRY_RETURN_IF_ERROR(MakePipe(out_read, out_write));
  GANTRY_RETURN_IF_ERROR(MakePipe(err_read, err_write));
  Result<pid_t> spawned = Spawn(spec, out_write.get(), err_write.get());
  if (!spawned.ok()) return spawned.status();
  const pid_t pid = *spawned;
  // The child holds its own copies: end of file comes when it, and whatever
  // it started with them, has closed them.
  out_write.Reset();
  err_write.Reset();
  // Readable once the child has exited; -1 before Linux 5.3 (see kExitPollMs).
  Fd exit_fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));

  SubprocessResult result;
  Status failure;
  const SteadyClock::time_point deadline = SteadyClock::now() + spec.deadline;
  bool out_open = true, err_open = true, exited = false, must_kill = false;
  while (out_open || err_open || !exited) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) {
      result.end = SubprocessResult::End::kTimedOut;
      must_kill = true;
      break;
    }
    pollfd fds[4];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out_read.get(), POLLIN, 0};
    if (err_open) fds[n++] = {err_read.get(), POLLIN, 0};
    int wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 60'000));
    if (!exited && exit_fd.get() >= 0) fds[n++] = {exit_fd.get(), POLLIN, 0};
    if (spec.stop_fd >= 0) fds[n++] = {spec.stop_fd, POLLIN, 0};
    if (!exited && exit_fd.get() < 0 && !out_open && !err_open) {
      wait_ms = std::min(wait_ms, kExitPollMs);
    }
    if (poll(fds, n, wait_ms) < 0 && errno != EINTR) {
      failure = Status::Io("waiting for it: " + ErrnoText(errno));
      must_kill = true;
      break;
    }
    bool over = false, stopped = false;
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == spec.stop_fd) stopped = true;
      if (fds[i].fd == out_read.get()) {
        out_open = ReadSome(out_read.get(), result.out, spec.max_stdout, &over);
      }
      if (fds[i].fd == err_read.get()) {
        bool dropped = false;  // a chatty helper is not an error: its first bytes are enough
        err_open = ReadSome(err_read.get(), result.err, spec.max_stderr, &dropped);
      }
    }
    if (over || stopped) {
      result.end = over ? SubprocessResult::End::kStdoutTooLarge : SubprocessResult::End::kStopped;
      must_kill = true;
      break;
    }
    if (!exited) exited = HasExited(pid);
  }
  if (must_kill) {
    kill(-pid, SIGKILL);  // the helper and what it started in its group
    kill(pid, SIGKILL);   // in case it left the group
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.ok()) return failure;
  if (must_kill) return result;
  if (WIFSIGNALED(status)) {
    result.end = SubprocessResult::End::kSignaled;
    result.code = WTERMSIG(status);
  } else {
    result.end = SubprocessResult::End::kExited;
    result.code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace gantry::inventory::internal
