#include "gantry/store/group_commit.h"
#include "gantry/common/thread_name.h"
#include "wal_write_vfs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>
#include <vector>

namespace gantry {
namespace {

// Calls a completion; an exception from user code must not kill the writer.
void Complete(const GroupCommitter::Done& done, Status status) {
  if (!done) return;
  try {
    done(std::move(status));
  } catch (const std::exception& e) {
    spdlog::error("store: write completion threw: {}", e.what());
  } catch (...) {
    spdlog::error("store: write completion threw a non-standard exception");
  }
}

// Runs a parameterless statement through the connection's cache, so the
// per-batch and per-op transaction control costs no parsing.
Status RunCached(SqliteConnection& conn, const char* sql) {
  Result<Statement> stmt = conn.Prepare(sql);
  return stmt.ok() ? stmt->Run() : stmt.status();
}

// The default probe (GroupCommitOptions::probe_op): a row of schema_version
// added and removed, so that its commit appends to the WAL as a write does
// (the row is never seen: it goes in the same transaction).
Status ProbeWrite(SqliteConnection& conn) {
  Status added = RunCached(conn,
                           "INSERT OR REPLACE INTO schema_version (version, name, applied_at_ms) "
                           "VALUES (-1, 'commit probe', 0)");
  return added.ok() ? RunCached(conn, "DELETE FROM schema_version WHERE version = -1") : added;
}

}  // namespace

GroupCommitter::GroupCommitter(std::unique_ptr<SqliteConnection> conn, GroupCommitOptions options)
    : conn_(std::move(conn)), options_(std::move(options)) {
  if (options_.max_batch < 1) options_.max_batch = 1;
  thread_ = std::thread([this] {
    SetThreadName("store-writer");
    Run();
  });
}

GroupCommitter::~GroupCommitter() { Shutdown(); }

void GroupCommitter::Enqueue(Op op, Done done, Durability durability) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queue_.push_back(Pending{std::move(op), std::move(done), durability});
      cv_.notify_one();
      return;
    }
  }
  Complete(done, Status::Unavailable("store is shutting down"));
}

void GroupCommitter::Enqueue(RawOp op, Done done) {
  Enqueue(Op([op = std::move(op)](SqliteConnection& conn) { return op(conn.db()); }),
          std::move(done));
}

void GroupCommitter::Shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  std::lock_guard join_lock(join_mu_);  // two concurrent Shutdowns must not both join
  if (thread_.joinable()) thread_.join();
}

void GroupCommitter::Run() {
  std::deque<Pending> batch;
  bool failing = false;  // the last commit failed
  const auto pending = [this] { return stopping_ || !queue_.empty(); };
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (failing && options_.retry_after_failure.count() > 0) {
        if (!cv_.wait_for(lock, options_.retry_after_failure, pending)) {
          lock.unlock();
          batch.push_back(Pending{options_.probe_op ? Op(options_.probe_op) : Op(ProbeWrite), [](Status) {}});
          failing = !CommitBatch(batch, /*probe=*/true, /*was_failing=*/true);
          batch.clear();
          continue;
        }
      } else {
        cv_.wait(lock, pending);
      }
      if (queue_.empty()) return;  // stopping and drained
      size_t take = std::min(queue_.size(), static_cast<size_t>(options_.max_batch));
      auto end = queue_.begin() + static_cast<std::ptrdiff_t>(take);
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
      queue_.erase(queue_.begin(), end);
    }
    failing = !CommitBatch(batch, /*probe=*/false, /*was_failing=*/failing);
    batch.clear();
  }
}

Status GroupCommitter::RunOp(const Op& op, bool* aborted) {
  *aborted = false;
  GANTRY_RETURN_IF_ERROR(RunCached(*conn_, "SAVEPOINT op"));
  Status status;
  try {
    status = op(*conn_);
  } catch (const std::exception& e) {
    status = Status::Internal(std::string("store write op threw: ") + e.what());
  } catch (...) {
    status = Status::Internal("store write op threw a non-standard exception");
  }

  // Some errors (SQLITE_FULL, IOERR, NOMEM) make SQLite roll back the whole
  // transaction by itself; then there is no savepoint left to go back to, and
  // the earlier ops' changes are gone too.
  if (sqlite3_get_autocommit(conn_->db()) != 0) {
    *aborted = true;
    return status.ok() ? Status::Io(conn_->path() + ": transaction ended inside a write op")
                       : status;
  }
  if (!status.ok()) {
    Status st = RunCached(*conn_, "ROLLBACK TO op");
    if (!st.ok()) {
      *aborted = true;
      return st;
    }
  }
  Status st = RunCached(*conn_, "RELEASE op");
  if (!st.ok()) *aborted = true;
  return status.ok() ? st : status;
}

bool GroupCommitter::CommitBatch(std::deque<Pending>& batch, bool probe, bool was_failing) {
  auto start = std::chrono::steady_clock::now();
  std::vector<Status> results(batch.size());
  Status batch_error = RunCached(*conn_, "BEGIN IMMEDIATE");
  for (size_t i = 0; i < batch.size() && batch_error.ok(); ++i) {
    bool aborted = false;
    results[i] = RunOp(batch[i].op, &aborted);
    if (aborted) batch_error = results[i];
  }
  const bool sync = std::any_of(batch.begin(), batch.end(),
                                [](const Pending& p) { return p.durability == Durability::kDurable; });
  if (batch_error.ok()) {
    store_internal::WalSyncScope scope(sync);
    batch_error = RunCached(*conn_, "COMMIT");
  }
  if (!batch_error.ok()) {
    if (sqlite3_get_autocommit(conn_->db()) == 0) {
      Status st = RunCached(*conn_, "ROLLBACK");
      if (!st.ok()) spdlog::error("store: rollback after failed batch: {}", st.ToString());
    }
    if (probe) {
      spdlog::debug("store: a probe commit failed: {}", batch_error.ToString());
      return false;
    }
    // The owner's on_failure says it (the daemon's, at most every 10 s):
    // a line per failed batch would flood the log while the disk is full.
    if (!options_.on_failure) {
      spdlog::warn("store: batch of {} writes failed: {}", batch.size(), batch_error.ToString());
    } else {
      spdlog::debug("store: batch of {} writes failed: {}", batch.size(), batch_error.ToString());
      try {
        options_.on_failure(batch_error, static_cast<int>(batch.size()));
      } catch (...) {
        spdlog::error("store: on_failure threw");
      }
    }
    for (auto& p : batch) Complete(p.done, batch_error);
    return false;
  }
  if (was_failing) spdlog::info("store: a commit succeeds again");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  commits_.fetch_add(1);
  writes_.fetch_add(static_cast<int64_t>(batch.size()));
  if (options_.on_commit) {
    try {
      options_.on_commit(seconds, static_cast<int>(batch.size()), sync);
    } catch (...) {
      spdlog::error("store: on_commit threw");
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) Complete(batch[i].done, std::move(results[i]));
  return true;
}

}  // namespace gantry
