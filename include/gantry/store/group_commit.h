// GroupCommitter: many durable writes, one transaction and one fsync.
//
// Owns a writer connection and one writer thread. Callers Enqueue an op (a
// function that writes through the connection) and a completion. The thread
// takes every queued op (up to max_batch) and runs:
//
//   BEGIN IMMEDIATE
//     SAVEPOINT op; op1; RELEASE op     (or ROLLBACK TO op when op1 fails)
//     SAVEPOINT op; op2; RELEASE op
//     ...
//   COMMIT                              (synchronous=FULL: fsync'd when it returns)
//
// then calls every completion with its op's Status, outside the queue lock.
// A failing op rolls back only its own changes and gets its own error; the
// others commit. If BEGIN or COMMIT fails (or SQLite aborts the transaction
// under an op, e.g. disk full), every op of the batch gets that error: none
// of its writes is durable.
//
// An op enqueued as kMayBeLost does not need its own fsync: a batch of only
// such ops commits without one (wal_write_vfs.h, WalSyncScope). Its
// completion still runs after the commit, which every reader then sees and
// a crash of the process keeps; a power failure or an OS crash before the
// next durable commit loses it. For writes that the caller can make again
// from what it observes (the dispatch engine's, see DispatchUpdate::durable).
//
// While a batch commits, new ops queue up and form the next batch, so the
// batch size adapts to the load: one op alone commits at once, a burst
// shares one fsync.
//
// Completions run on the writer thread: they must be quick and must not wait
// for another write. Ops run inside the transaction: they must not BEGIN,
// COMMIT or hold a Statement beyond their return.
//
// Shutdown (the destructor, or Shutdown()): ops already queued are committed
// and completed; an op enqueued after shutdown began completes at once, on
// the caller's thread, with Code::kUnavailable.
//
// Thread-safety: Enqueue, Shutdown and the counters are safe from any thread.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "gantry/common/status.h"
#include "gantry/store/sqlite_connection.h"

namespace gantry {

struct GroupCommitOptions {
  // Most ops folded into one transaction. Larger batches mean fewer fsyncs but
  // a longer wait for the first op of a batch. Values < 1 mean 1.
  int max_batch = 1024;
  // Called on the writer thread after every successful commit with the time
  // from BEGIN to the end of COMMIT, in seconds, and the number of ops it
  // carried (failed ops included), and whether it was fsync'd (false: all of
  // its ops were kMayBeLost). Optional.
  std::function<void(double seconds, int writes, bool synced)> on_commit;
  // Called on the writer thread after a batch failed as a whole (BEGIN or
  // COMMIT failed, or an op's error ended the transaction: a full disk, an
  // I/O error), with that error and the number of ops it failed. Optional.
  std::function<void(const Status& error, int writes)> on_failure;
  // While the last commit failed, a commit of probe_op alone is tried this
  // often when no write comes: its success (on_commit, with 1 write) tells
  // that commits work again (a full disk given room) without waiting for
  // the next real write, which a daemon judged not ready may never get.
  // Its failures are not reported (on_failure): the first one was. Zero:
  // never tried.
  std::chrono::milliseconds retry_after_failure{5'000};
  // The probe: by default it adds and removes a row of schema_version, so
  // its commit appends to the WAL as any write does. Optional.
  std::function<Status(SqliteConnection& conn)> probe_op;
};

class GroupCommitter {
 public:
  // An op writes through the connection (cached statements) or the raw handle.
  using Op = std::function<Status(SqliteConnection& conn)>;
  using RawOp = std::function<Status(sqlite3* db)>;
  using Done = std::function<void(Status)>;

  // REQUIRES: conn is a writer connection (not query_only) no one else uses.
  GroupCommitter(std::unique_ptr<SqliteConnection> conn, GroupCommitOptions options);
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Queues op; done(status) runs once the op's outcome is committed (or
  // failed): durable for a kDurable op, see above for a kMayBeLost one.
  enum class Durability { kDurable, kMayBeLost };
  void Enqueue(Op op, Done done, Durability durability = Durability::kDurable);
  void Enqueue(RawOp op, Done done);

  // Stops accepting ops, commits what is queued, joins the writer thread.
  // Idempotent and safe to call concurrently. REQUIRES: not called from a completion (the writer
  // thread).
  void Shutdown();

  // Totals since start: committed transactions, and ops they carried.
  int64_t commits() const { return commits_.load(); }
  int64_t writes() const { return writes_.load(); }

 private:
  struct Pending {
    Op op;
    Done done;
    Durability durability = Durability::kDurable;
  };

  void Run();
  // Commits the batch; returns whether it committed. A probe's failure is
  // not reported (GroupCommitOptions::retry_after_failure); a success after
  // failures (was_failing) is.
  bool CommitBatch(std::deque<Pending>& batch, bool probe, bool was_failing);
  // Runs one op inside its savepoint. Returns the op's status; sets *aborted
  // when SQLite rolled back the whole transaction.
  Status RunOp(const Op& op, bool* aborted);

  std::unique_ptr<SqliteConnection> conn_;
  GroupCommitOptions options_;
  std::atomic<int64_t> commits_{0};
  std::atomic<int64_t> writes_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::mutex join_mu_;         // serializes joining thread_

  std::thread thread_;  // last: starts after every other member exists
};

}  // namespace gantry
