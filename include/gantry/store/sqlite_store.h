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

#include <functional>
#include <memory>
#include <string>

#include "gantry/common/clock.h"
#include "gantry/store/job_store.h"

namespace gantry {

struct SqliteStoreOptions {
  // Path of the database file; its directory must exist.
  std::string path;
  // Most writes folded into one transaction. Larger batches mean fewer fsyncs
  // but a longer wait for the first writer in a batch.
  int max_batch = 1024;
  // Called after every commit with its latency in seconds and the number of
  // writes it carried (for the store commit latency metric). Optional.
  std::function<void(double seconds, int writes)> on_commit;
  // Time source for event timestamps written by the store. Must outlive the store.
  const Clock* clock = nullptr;  // nullptr = system clock
};

class SqliteStore;

// Opens (creating if needed) and migrates the database. Errors name the path.
Result<std::unique_ptr<SqliteStore>> OpenSqliteStore(const SqliteStoreOptions& options);

// Highest schema version compiled into this binary.
int LatestSchemaVersion();

}  // namespace gantry
