// Checkpointer: copies the write-ahead log back into the database file on a
// thread of its own, so that the writer's commits rarely wait for it.
//
// SQLite's automatic checkpoint runs inside the commit that fills the WAL to
// its limit: that commit, and every write queued behind it, waits while the
// WAL's pages are read, written to the database file and fsync'd (about a
// fifth of the writer thread's time under a submission burst). Here:
//
//   * the writer's WAL hook (Attach) tells this thread how large the WAL is
//     after each commit; once `wake_frames` frames are not yet copied, the
//     thread runs a PASSIVE checkpoint on its own connection, which copies
//     frames while the writer goes on committing;
//   * a PASSIVE checkpoint never catches up with a writer that never pauses,
//     and only a fully copied WAL starts over from its beginning, so the hook
//     still runs SQLite's own PASSIVE checkpoint on the writer once the WAL
//     holds `writer_frames`. By then nearly every frame has been copied, so
//     it costs the few frames left and one fsync of the database file.
//
// Crash safety is SQLite's: a checkpoint interrupted anywhere is redone from
// the WAL at the next open.
//
// Thread-safety: the hook runs on the writer's thread; Stop from any thread.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gantry/common/status.h"
#include "gantry/store/sqlite_connection.h"

namespace gantry {

struct CheckpointerOptions {
  // New WAL frames that wake the background checkpoint. A checkpoint copies
  // each page once, its newest frame, and every job rewrites the same few
  // pages (the tails of the jobs, events and intents trees, their parents):
  // copying every 1024 frames instead of every 128 wrote 12-20% fewer bytes
  // per dispatched job (bench/dispatch_bench.sh), for a WAL of a few MiB.
  int wake_frames = 1024;
  // WAL size at which the writer itself finishes the copy (4 times SQLite's
  // wal_autocheckpoint default, to stay well above wake_frames).
  int writer_frames = 4000;
};

class Checkpointer {
 public:
  // Opens its own connection to the database at path and starts its thread.
  static Result<std::unique_ptr<Checkpointer>> Start(const std::string& path, CheckpointerOptions options);
  ~Checkpointer();  // Stop()s
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Installs the WAL hook on the writer's connection, replacing SQLite's
  // automatic checkpoint. REQUIRES: this outlives every commit on writer.
  void Attach(sqlite3* writer);
  // Joins the thread. Idempotent. The writer's hook still checkpoints after.
  void Stop();

  // Totals since start, for tests: background checkpoints that copied frames,
  // and the writer's own.
  int64_t background_checkpoints() const;
  int64_t writer_checkpoints() const;

 private:
  Checkpointer(std::unique_ptr<SqliteConnection> conn, CheckpointerOptions options);
  static int Hook(void* self, sqlite3* db, const char* schema, int frames);
  void Committed(sqlite3* db, const char* schema, int frames);
  void Run();

  std::unique_ptr<SqliteConnection> conn_;
  CheckpointerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t frames_ = 0;     // the WAL's size after the last commit       (mu_)
  int64_t looked_at_ = 0;  // its size when the last background look began (mu_)
  bool stopping_ = false;                                          // (mu_)
  int64_t background_ = 0;                                         // (mu_)
  int64_t by_writer_ = 0;                                          // (mu_)
  std::thread thread_;
};

}  // namespace gantry
