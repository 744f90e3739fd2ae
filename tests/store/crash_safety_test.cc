// Crash safety: a write acknowledged by its callback survives SIGKILL.
//
// A forked child opens the store and submits jobs as fast as it can; each
// callback writes the job's name to a pipe. The parent reads K
// acknowledgements, SIGKILLs the child at once, reopens the database and
// checks that every acknowledged job (including any still in the pipe) is
// there. SIGKILL keeps the page cache, so this proves "callback after
// COMMIT", not the fsync itself (that is synchronous=FULL's job).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "gantry/store/sqlite_store.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

// Runs in the forked child; never returns. Keeps up to kInFlight writes
// queued so commits carry real batches.
[[noreturn]] void RunChild(const std::string& path, int round, int ack_fd) {
  constexpr int kInFlight = 64;
  constexpr int kMaxJobs = 200'000;  // a bound, in case the parent never kills us
  SqliteStoreOptions options;
  options.path = path;
  Result<std::unique_ptr<SqliteStore>> store = OpenSqliteStore(options);
  if (!store.ok()) _exit(2);
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  for (int i = 0; i < kMaxJobs; ++i) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < kInFlight; });
      ++in_flight;
    }
    std::string name = "r" + std::to_string(round) + "-" + std::to_string(i);
    JobRecord job = MakeJob("crash", name);
    job.uid = "uid-" + name;  // MakeJob's counter restarts in every forked child
    (*store)->Submit(std::move(job), [&, name](Result<SubmitResult> r) {
      if (!r.ok() || r->outcome != SubmitOutcome::kCreated) _exit(3);
      std::string line = name + "\n";  // < PIPE_BUF: one atomic write
      if (::write(ack_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(4);
      std::lock_guard lock(mu);
      --in_flight;
      cv.notify_one();
    });
  }
  _exit(0);
}

// Reads newline-separated names from fd until `want` arrived (want < 0: until
// EOF) or the deadline passes.
void ReadAcks(int fd, int want, std::string* buffer, std::vector<std::string>* names) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (want < 0 || static_cast<int>(names->size()) < want) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    REQUIRE(left.count() > 0);
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    REQUIRE(n >= 0);
    if (n == 0) continue;
    char chunk[4096];
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    REQUIRE(got >= 0);
    if (got == 0) return;  // EOF: the child is gone
    buffer->append(chunk, static_cast<size_t>(got));
    size_t nl;
    while ((nl = buffer->find('\n')) != std::string::npos) {
      names->push_back(buffer->substr(0, nl));
      buffer->erase(0, nl + 1);
    }
  }
}

}  // namespace

TEST_CASE("acknowledged submissions survive SIGKILL", "[store][crash]") {
  TempDir dir;
  const std::string path = dir.File("crash.db");
  size_t total_acked = 0;
  for (int round = 0; round < 4; ++round) {
    const int want = 50 + round * 300;  // kill at different points of the stream
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      RunChild(path, round, fds[1]);
    }
    ::close(fds[1]);
    std::string buffer;
    std::vector<std::string> acked;
    ReadAcks(fds[0], want, &buffer, &acked);
    ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    ReadAcks(fds[0], -1, &buffer, &acked);  // acks written before the kill landed
    ::close(fds[0]);
    REQUIRE(static_cast<int>(acked.size()) >= want);

    auto store = OpenStore(path);
    for (const std::string& name : acked) {
      INFO("round " << round << " job " << name);
      REQUIRE(store->Get("crash", name).ok());
    }
    total_acked += acked.size();
  }
  auto store = OpenStore(path);
  CHECK(store->CountByPhase()->at(JobPhase::kQueued) >= static_cast<int64_t>(total_acked));
}

}  // namespace gantry::testing
