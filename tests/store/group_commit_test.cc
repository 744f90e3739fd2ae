// GroupCommitter on its own table, and SqliteStore under concurrent writers.
#include "gantry/store/group_commit.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <algorithm>
#include <vector>

#include "gantry/store/sqlite_store.h"
#include "wal_write_vfs.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(30);

// A committer on a fresh file with a table t(k TEXT PRIMARY KEY).
std::unique_ptr<GroupCommitter> MakeCommitter(const TempDir& dir, GroupCommitOptions options) {
  Result<std::unique_ptr<SqliteConnection>> conn = SqliteConnection::Open(dir.File("gc.db"), {});
  REQUIRE(conn.ok());
  REQUIRE((*conn)->Exec("CREATE TABLE t (k TEXT PRIMARY KEY)").ok());
  return std::make_unique<GroupCommitter>(std::move(*conn), std::move(options));
}

GroupCommitter::Op InsertKey(std::string key) {
  return [key](SqliteConnection& conn) -> Status {
    Result<Statement> stmt = conn.Prepare("INSERT INTO t (k) VALUES (?1)");
    if (!stmt.ok()) return stmt.status();
    return stmt->Bind(1, key).Run();
  };
}

// An op that holds the writer thread until released, so that the ops queued
// meanwhile are certain to form one batch.
// Enqueue(gate.Op()), then gate.AwaitEntered(): the writer is now inside
// the gate's batch, and everything enqueued until gate.Open() forms the next.
struct Gate {
  std::promise<void> release;
  std::shared_future<void> opened = release.get_future().share();
  std::shared_ptr<std::promise<void>> entered = std::make_shared<std::promise<void>>();
  std::future<void> entered_future = entered->get_future();

  GroupCommitter::Op Op() {
    return [f = opened, entered = entered](SqliteConnection&) -> Status {
      entered->set_value();
      return f.wait_for(kDeadline) == std::future_status::ready
                 ? Status::Ok()
                 : Status::Deadline("gate never opened");
    };
  }
  void AwaitEntered() { REQUIRE(entered_future.wait_for(kDeadline) == std::future_status::ready); }
  void Open() { release.set_value(); }
};

// Collects completions from the writer thread.
struct Outcomes {
  std::mutex mu;
  std::vector<Status> statuses;
  GroupCommitter::Done At(size_t i) {
    {
      std::lock_guard lock(mu);
      if (statuses.size() <= i) statuses.resize(i + 1, Status::Internal("pending"));
    }
    return [this, i](Status st) {
      std::lock_guard lock(mu);
      statuses[i] = std::move(st);
    };
  }
  bool AllDone() {
    std::lock_guard lock(mu);
    for (const Status& st : statuses) {
      if (st.code() == Code::kInternal && st.message() == "pending") return false;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("one failing op in a batch does not fail the others", "[store][group_commit]") {
  TempDir dir;
  std::vector<int> batch_sizes;
  std::mutex mu;
  GroupCommitOptions options;
  options.on_commit = [&](double seconds, int writes, bool) {
    CHECK(seconds >= 0);
    std::lock_guard lock(mu);
    batch_sizes.push_back(writes);
  };
  auto committer = MakeCommitter(dir, options);
  Gate gate;
  Outcomes out;
  committer->Enqueue(gate.Op(), out.At(0));
  gate.AwaitEntered();
  // These queue up behind the gate and commit together: a duplicate key in
  // the middle fails alone.
  committer->Enqueue(InsertKey("a"), out.At(1));
  committer->Enqueue(InsertKey("b"), out.At(2));
  committer->Enqueue(InsertKey("a"), out.At(3));
  committer->Enqueue(GroupCommitter::RawOp([](sqlite3* db) -> Status {
                       int rc = sqlite3_exec(db, "INSERT INTO t (k) VALUES ('raw')", nullptr,
                                             nullptr, nullptr);
                       return rc == SQLITE_OK ? Status::Ok() : Status::Io("raw insert");
                     }),
                     out.At(4));
  gate.Open();
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  CHECK(out.statuses[0].ok());
  CHECK(out.statuses[1].ok());
  CHECK(out.statuses[2].ok());
  CHECK(out.statuses[3].code() == Code::kConflict);
  CHECK(out.statuses[4].ok());
  committer.reset();
  REQUIRE(batch_sizes == std::vector<int>{1, 4});

  auto conn = SqliteConnection::Open(dir.File("gc.db"), {});
  REQUIRE(conn.ok());
  Result<Statement> count =
      (*conn)->Prepare("SELECT group_concat(k, ',') FROM (SELECT k FROM t ORDER BY k)");
  REQUIRE(count.ok());
  REQUIRE(*count->Step());
  CHECK(count->Text(0) == "a,b,raw");
}

TEST_CASE("a batch of ops that may be lost commits without an fsync, one durable op brings it back", "[store][group_commit]") {
  TempDir dir;
  std::mutex mu;
  std::vector<bool> synced;
  GroupCommitOptions options;
  options.on_commit = [&](double, int, bool s) {
    std::lock_guard lock(mu);
    synced.push_back(s);
  };
  auto committer = MakeCommitter(dir, options);
  constexpr auto kLost = GroupCommitter::Durability::kMayBeLost;
  Outcomes out;
  const auto before = store_internal::WalSyncs();
  {
    Gate gate;
    committer->Enqueue(gate.Op(), out.At(0), kLost);
    gate.AwaitEntered();
    committer->Enqueue(InsertKey("lazy-1"), out.At(1), kLost);
    committer->Enqueue(InsertKey("lazy-2"), out.At(2), kLost);
    gate.Open();
    REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  }
  const auto lazy = store_internal::WalSyncs();
  {
    Gate gate;
    committer->Enqueue(gate.Op(), out.At(3), kLost);
    gate.AwaitEntered();
    committer->Enqueue(InsertKey("lazy-3"), out.At(4), kLost);
    committer->Enqueue(InsertKey("durable"), out.At(5));
    gate.Open();
    REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  }
  const auto mixed = store_internal::WalSyncs();
  for (const Status& st : out.statuses) CHECK(st.ok());
  CHECK(committer->commits() == 4);
  committer.reset();
  CHECK(std::count(synced.begin(), synced.end(), false) == 3);  // commits without their own fsync
  CHECK(synced == std::vector<bool>{false, false, false, true});
  // The gates' batches write nothing, so they reach no sync at all.
  CHECK(lazy.skipped - before.skipped == 1);
  CHECK(lazy.synced == before.synced);
  CHECK(mixed.skipped == lazy.skipped);
  CHECK(mixed.synced - lazy.synced == 1);
}

TEST_CASE("a failed COMMIT fails every op of the batch, and says so", "[store][group_commit]") {
  TempDir dir;
  std::mutex mu;
  std::vector<std::pair<Code, int>> failures;  // on_failure's calls
  GroupCommitOptions options;
  options.on_failure = [&](const Status& error, int writes) {
    std::lock_guard lock(mu);
    failures.emplace_back(error.code(), writes);
  };
  auto committer = MakeCommitter(dir, std::move(options));
  Outcomes out;
  // A deferred foreign key is only checked at COMMIT: one dangling child
  // makes the whole transaction fail there.
  committer->Enqueue(GroupCommitter::Op([](SqliteConnection& conn) {
                       return conn.Exec(
                           "CREATE TABLE child (p TEXT REFERENCES t (k) DEFERRABLE INITIALLY "
                           "DEFERRED)");
                     }),
                     out.At(0));
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  REQUIRE(out.statuses[0].ok());

  Gate gate;
  committer->Enqueue(gate.Op(), out.At(1));
  gate.AwaitEntered();
  committer->Enqueue(InsertKey("fine"), out.At(2));
  committer->Enqueue(GroupCommitter::Op([](SqliteConnection& conn) {
                       return conn.Exec("INSERT INTO child (p) VALUES ('dangling')");
                     }),
                     out.At(3));
  gate.Open();
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  CHECK(out.statuses[1].ok());  // its own batch
  CHECK(out.statuses[2].code() == Code::kConflict);
  CHECK(out.statuses[3].code() == Code::kConflict);
  CHECK(committer->commits() == 2);
  {
    std::lock_guard lock(mu);
    CHECK(failures == std::vector<std::pair<Code, int>>{{Code::kConflict, 2}});
  }

  // The writer recovers: the next batch commits.
  committer->Enqueue(InsertKey("after"), out.At(4));
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  CHECK(out.statuses[4].ok());
}

TEST_CASE("after a failed commit, an idle writer tries a probe commit until one succeeds, reporting only that",
          "[store][group_commit]") {
  TempDir dir;
  std::mutex mu;
  int failures = 0, commits = 0, probes = 0;
  std::atomic<bool> broken{true};  // commits fail while set (a full disk, say)
  GroupCommitOptions options;
  options.retry_after_failure = std::chrono::milliseconds(20);
  options.on_failure = [&](const Status&, int) {
    std::lock_guard lock(mu);
    ++failures;
  };
  options.on_commit = [&](double, int, bool) {
    std::lock_guard lock(mu);
    ++commits;
  };
  // A dangling child of a deferred foreign key fails the COMMIT.
  const auto dangling = [&broken](SqliteConnection& conn) {
    return broken ? conn.Exec("INSERT INTO child (p) VALUES ('dangling')") : Status::Ok();
  };
  options.probe_op = [&](SqliteConnection& conn) {
    {
      std::lock_guard lock(mu);
      ++probes;
    }
    return dangling(conn);
  };
  auto committer = MakeCommitter(dir, std::move(options));
  Outcomes out;
  committer->Enqueue(GroupCommitter::Op([](SqliteConnection& conn) {
                       return conn.Exec("CREATE TABLE child (p TEXT REFERENCES t (k) DEFERRABLE INITIALLY DEFERRED)");
                     }),
                     out.At(0));
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));  // its own commit
  committer->Enqueue(GroupCommitter::Op(dangling), out.At(1));
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  CHECK(out.statuses[1].code() == Code::kConflict);
  // Probes run and fail, unreported: the one failure told is the write's.
  REQUIRE(WaitFor([&] {
    std::lock_guard lock(mu);
    return probes >= 3;
  }, kDeadline));
  {
    std::lock_guard lock(mu);
    CHECK(failures == 1);
    CHECK(commits == 1);  // the CREATE TABLE's
  }
  broken = false;  // room again: the next probe commits, and says so
  REQUIRE(WaitFor([&] {
    std::lock_guard lock(mu);
    return commits == 2;
  }, kDeadline));
  // Then it waits for writes, trying nothing more.
  int probes_then = 0;
  {
    std::lock_guard lock(mu);
    probes_then = probes;
  }
  committer->Enqueue(InsertKey("after"), out.At(2));
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  CHECK(out.statuses[2].ok());
  std::lock_guard lock(mu);
  CHECK(probes == probes_then);
  CHECK(failures == 1);
}

TEST_CASE("the default probe commits a write to schema_version that leaves no row", "[store][group_commit]") {
  TempDir dir;
  std::mutex mu;
  std::vector<int> commits;  // the writes each commit carried
  GroupCommitOptions options;
  options.retry_after_failure = std::chrono::milliseconds(20);
  options.on_commit = [&](double, int writes, bool) {
    std::lock_guard lock(mu);
    commits.push_back(writes);
  };
  auto committer = MakeCommitter(dir, std::move(options));
  Outcomes out;
  committer->Enqueue(GroupCommitter::Op([](SqliteConnection& conn) {
                       return conn.Exec(
                           "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                           "applied_at_ms INTEGER NOT NULL);"
                           "CREATE TABLE child (p TEXT REFERENCES t (k) DEFERRABLE INITIALLY DEFERRED)");
                     }),
                     out.At(0));
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  REQUIRE(out.statuses[0].ok());
  // Another connection's data_version moves when a commit changed the file:
  // the probe's must, as a write's does.
  Result<std::unique_ptr<SqliteConnection>> reader = SqliteConnection::Open(dir.File("gc.db"), {});
  REQUIRE(reader.ok());
  auto data_version = [&] {
    Result<Statement> v = (*reader)->Prepare("PRAGMA data_version");
    REQUIRE(v.ok());
    REQUIRE(*v->Step());
    return v->Int(0);
  };
  const int64_t version_before = data_version();
  // A commit that fails (a dangling child of a deferred foreign key), once:
  // the probe that follows has nothing against it.
  committer->Enqueue(GroupCommitter::Op([](SqliteConnection& conn) {
                       return conn.Exec("INSERT INTO child (p) VALUES ('dangling')");
                     }),
                     out.At(1));
  REQUIRE(WaitFor([&] { return out.AllDone(); }, kDeadline));
  CHECK(out.statuses[1].code() == Code::kConflict);
  REQUIRE(WaitFor([&] {
    std::lock_guard lock(mu);
    return commits.size() == 2;
  }, kDeadline));
  {
    std::lock_guard lock(mu);
    CHECK(commits == std::vector<int>{1, 1});  // the tables', then the probe's alone
  }
  CHECK(data_version() != version_before);
  // The probe's row went in the same transaction it came in.
  Result<Statement> rows = (*reader)->Prepare("SELECT count(*) FROM schema_version");
  REQUIRE(rows.ok());
  REQUIRE(*rows->Step());
  CHECK(rows->Int(0) == 0);
}

TEST_CASE("shutdown drains queued ops and rejects later ones", "[store][group_commit]") {
  TempDir dir;
  auto committer = MakeCommitter(dir, {});
  Gate gate;
  Outcomes out;
  committer->Enqueue(gate.Op(), out.At(0));
  gate.AwaitEntered();
  for (size_t i = 1; i <= 50; ++i) committer->Enqueue(InsertKey(std::to_string(i)), out.At(i));
  std::thread stopper([&] { committer->Shutdown(); });
  // Probe until an op is refused: from then on shutdown has begun. Probes
  // accepted before that are drained like the others.
  std::atomic<bool> refused{false};
  size_t probes = 0;
  REQUIRE(WaitFor(
      [&] {
        committer->Enqueue(InsertKey("probe" + std::to_string(probes++)), [&](Status st) {
          if (st.code() == Code::kUnavailable) refused = true;
        });
        return refused.load();
      },
      kDeadline));
  gate.Open();
  stopper.join();
  REQUIRE(out.AllDone());
  for (const Status& st : out.statuses) CHECK(st.ok());
  CHECK(committer->writes() == static_cast<int64_t>(51 + probes - 1));
}

TEST_CASE("concurrent submitters share commits", "[store][group_commit]") {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  constexpr int kTotal = kThreads * kPerThread;
  TempDir dir;
  std::atomic<int64_t> commits{0};
  std::atomic<int64_t> committed_writes{0};
  SqliteStoreOptions options;
  options.path = dir.File("db");
  options.on_commit = [&](double, int writes, bool) {
    commits++;
    committed_writes += writes;
  };
  Result<std::unique_ptr<SqliteStore>> opened = OpenSqliteStore(options);
  REQUIRE(opened.ok());
  SqliteStore& store = **opened;

  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        JobRecord job = MakeJob("ns" + std::to_string(t), "job-" + std::to_string(i));
        store.Submit(std::move(job), [&](Result<SubmitResult> r) {
          (r.ok() && r->outcome == SubmitOutcome::kCreated ? ok : failed)++;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(WaitFor([&] { return ok + failed == kTotal; }, std::chrono::seconds(60)));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(failed == 0);
  CHECK(committed_writes == kTotal);
  CHECK(commits < kTotal);
  std::fprintf(stderr,
               "store_test: %d durable submits in %.3f s (%.0f/s), %lld commits, "
               "%.1f writes/commit\n",
               kTotal, seconds, kTotal / seconds, static_cast<long long>(commits.load()),
               static_cast<double>(kTotal) / static_cast<double>(commits.load()));

  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      REQUIRE(store.Get("ns" + std::to_string(t), "job-" + std::to_string(i)).ok());
    }
  }
  CHECK(store.CountByPhase()->at(JobPhase::kQueued) == kTotal);
}

}  // namespace gantry::testing

namespace gantry::testing {

// Closed loop: each client waits for its write before sending the next, as
// API connections do. Shows commits/s and fsync-bound latency; hidden from the
// default run (it measures, it does not assert much).
TEST_CASE("closed-loop submit throughput", "[.][perf][store]") {
  constexpr int kClients = 64;
  constexpr int kPerClient = 200;
  TempDir dir;
  std::atomic<int64_t> commits{0};
  std::atomic<int64_t> latency_us{0};
  SqliteStoreOptions options;
  options.path = dir.File("db");
  options.on_commit = [&](double seconds, int, bool) {
    commits++;
    latency_us += static_cast<int64_t>(seconds * 1e6);
  };
  Result<std::unique_ptr<SqliteStore>> opened = OpenSqliteStore(options);
  REQUIRE(opened.ok());
  SqliteStore& store = **opened;
  std::atomic<int> done{0};
  std::function<void(int, int)> next = [&](int client, int i) {
    if (i == kPerClient) return;
    store.Submit(MakeJob("c" + std::to_string(client), "j" + std::to_string(i)),
                 [&, client, i](Result<SubmitResult> r) {
                   if (r.ok()) done++;
                   next(client, i + 1);  // enqueue only: never waits on the writer
                 });
  };
  auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < kClients; ++c) next(c, 0);
  REQUIRE(WaitFor([&] { return done == kClients * kPerClient; }, std::chrono::seconds(120)));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "store_test closed loop: %d clients, %.0f submits/s, %.0f commits/s, "
               "%.1f writes/commit, mean commit %.2f ms\n",
               kClients, done / seconds, commits / seconds,
               static_cast<double>(done) / static_cast<double>(commits),
               static_cast<double>(latency_us) / 1000.0 / static_cast<double>(commits));
}

}  // namespace gantry::testing
