// SqliteStore: the embedded JobStore on one SQLite file in WAL mode.
//
// Durability: synchronous=FULL, so a write's callback runs only after its
// transaction's WAL frames are fsync'd. Concurrent writes are batched by the
// GroupCommitter (one transaction and one fsync for many submissions).
//
// The database file and its -wal/-shm companions are created with mode 0600.
// Schema migrations (schema/NNN_*.sql, embedded in the binary at build time)
// are applied in order at open, each in its own transaction, and recorded in
// the schema_version table; an applied migration is never edited.
//
// Thread-safety: all methods are safe from any thread (see JobStore).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "gantry/common/clock.h"
#include "gantry/store/checkpointer.h"
#include "gantry/store/group_commit.h"
#include "gantry/store/cluster_state_store.h"
#include "gantry/store/database_lock.h"
#include "gantry/store/job_store.h"
#include "gantry/store/sqlite_connection.h"

namespace gantry {

struct SqliteStoreOptions {
  // Path of the database file; its directory must exist.
  std::string path;
  // Most writes folded into one transaction. Larger batches mean fewer fsyncs
  // but a longer wait for the first writer in a batch.
  int max_batch = 1024;
  // Called after every commit with its latency in seconds and the number of
  // writes it carried (for the store commit latency metric). Optional.
  std::function<void(double seconds, int writes, bool synced)> on_commit;
  // Called after a commit failed as a whole (GroupCommitOptions::on_failure):
  // every write in it was refused. Optional.
  std::function<void(const Status& error, int writes)> on_commit_failed;
  // Time source for event timestamps written by the store. Must outlive the store.
  const Clock* clock = nullptr;  // nullptr = system clock
  // Called every slow_start_every, on a thread of its own, while the start's
  // check of the file and its migrations run (a large database on a cold
  // disk may take minutes): the daemon tells systemd to extend its start
  // timeout. Optional.
  std::function<void()> on_slow_start;
  std::chrono::milliseconds slow_start_every{10'000};
  // Whether a submission's spec text is the stored job's spec again, when
  // the two texts differ (the daemon gives SameJobSpec: a quantity spelt
  // another way). Unset: only the same text is the same job.
  std::function<bool(std::string_view stored, std::string_view submitted)> same_spec;
  // The daemon's origin label value, checked against the one the database's
  // jobs were dispatched with (CheckOrigin in start_checks.h): the open
  // fails while unfinished jobs carry another. "" skips the check.
  std::string origin;
};

class SqliteStore;

// Opens (creating if needed) and migrates the database. Errors name the path.
Result<std::unique_ptr<SqliteStore>> OpenSqliteStore(const SqliteStoreOptions& options);

// Highest schema version compiled into this binary.
int LatestSchemaVersion();

// Writes go through one GroupCommitter (its writer thread runs every callback);
// reads use a separate query_only connection behind a mutex, which WAL lets
// run alongside the writer. Write callbacks see their own and earlier writes
// in subsequent reads (read-your-writes: the callback runs after COMMIT).
class SqliteStore final : public JobStore, public ClusterStateStore {
 public:
  ~SqliteStore() override;  // Shutdown(), then closes the connections

  // Submit's record: created_ms = 0 is replaced by the clock's now and
  // updated_ms = 0 by created_ms; seq is assigned. A re-submission of the same
  // uid (an API retry) returns the stored record as kExisting.
  void Submit(JobRecord job, StoreCallback<SubmitResult> done) override;
  // A job already Cancelling is returned unchanged, without a second event.
  void RequestCancel(std::string ns, std::string name, StoreCallback<JobRecord> done) override;
  void Purge(std::string ns, std::string name, StoreCallback<std::string> done) override;
  void ExpireFinished(int64_t finished_before_ms, int64_t finished_from_ms, int limit,
                      StoreCallback<ExpiredJobs> done) override;
  // The event's job_uid is set to uid; time_ms = 0 is replaced by now.
  void Transition(std::string uid, JobPhase expected_phase, JobPhase new_phase, std::string message,
                  std::optional<JobEvent> event, StoreCallback<JobRecord> done) override;

  Result<JobRecord> Get(const std::string& ns, const std::string& name) override;
  Result<JobRecord> GetByUid(const std::string& uid) override;
  Result<bool> WasPurged(const std::string& uid) override;
  // limit is clamped to 1..kMaxListLimit.
  Result<JobPage> List(const ListQuery& query) override;
  // Oldest first; an unknown uid has no events (empty, not NotFound).
  Result<std::vector<JobEvent>> Events(const std::string& uid) override;
  Result<EventTail> LastEvents(const std::string& uid, int limit) override;
  Result<std::map<JobPhase, int64_t>> CountByPhase() override;
  // limit is clamped to 1..kMaxScanLimit.
  Result<std::vector<JobKey>> JobsInPhase(JobPhase phase, int64_t after_seq, int limit) override;
  void ApplyDispatch(DispatchUpdate update, StoreCallback<JobRecord> done) override;
  Result<std::vector<RemoteIntent>> Intents(const std::string& uid) override;
  // limit is clamped to 1..kMaxScanLimit.
  Result<std::vector<std::string>> UidsWithIntents(const std::string& after_uid, int limit) override;
  Result<std::vector<std::string>> UidsWithIntentsIn(const std::string& cluster, const std::string& after_uid,
                                                     int limit) override;

  Result<std::map<std::string, ClusterOutage>> LoadOutages() override;
  void SaveOutage(std::string cluster, std::optional<ClusterOutage> outage, std::string last_error,
                  StoreCallback<bool> done) override;
  Result<std::map<std::string, int64_t>> LoadWatchRefusals() override;
  void SaveWatchRefusal(std::string cluster, std::optional<int64_t> since_ms, StoreCallback<bool> done) override;
  Result<std::map<std::string, std::string>> LoadClusterIds() override;
  void SaveClusterId(std::string cluster, std::optional<std::string> cluster_id, StoreCallback<bool> done) override;

  // Stops accepting writes (they fail with kUnavailable) and waits until the
  // queued ones are committed and their callbacks have run. Idempotent.
  // REQUIRES: not called from a write callback.
  void Shutdown();

  // The writer, for components that add their own tables (migrations 002+)
  // and need their writes in the same group commit. See group_commit.h.
  GroupCommitter& writer() { return *writer_; }

  static constexpr int kMaxListLimit = 5000;
  static constexpr int kMaxScanLimit = 100'000;  // rows in one page of a scan

 private:
  friend Result<std::unique_ptr<SqliteStore>> OpenSqliteStore(const SqliteStoreOptions& options);
  SqliteStore(DatabaseLock lock, std::unique_ptr<SqliteConnection> reader, std::unique_ptr<Checkpointer> checkpointer,
              std::unique_ptr<GroupCommitter> writer, const Clock* clock,
              std::function<bool(std::string_view, std::string_view)> same_spec);
  // SameSubmission, with same_spec_ when the texts differ.
  bool SameSpec(const JobRecord& stored, const std::string& spec_json) const;

  int64_t Now() const { return clock_->NowMillis(); }

  DatabaseLock lock_;  // first: released after every connection is closed
  SystemClock system_clock_;
  const Clock* clock_;  // options.clock or &system_clock_
  std::function<bool(std::string_view, std::string_view)> same_spec_;  // SqliteStoreOptions::same_spec
  std::mutex read_mu_;  // serializes use of reader_ (a connection is single-threaded)
  std::unique_ptr<SqliteConnection> reader_;
  // Before writer_: the writer's WAL hook calls it until the writer is gone.
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<GroupCommitter> writer_;
};

}  // namespace gantry
