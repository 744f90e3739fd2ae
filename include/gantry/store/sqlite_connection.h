// SqliteConnection: one sqlite3* handle in RAII form, with the pragmas gantry
// relies on and a cache of prepared statements keyed by SQL text.
//
// Open() creates a missing database file itself, with open(O_CREAT, 0600)
// followed by fchmod(0600) so the mode does not depend on the process umask.
// SQLite creates the -wal and -shm companions with the database file's mode
// (and fchmods them past the umask), so they are 0600 too;
// SecureCompanionFiles() re-applies 0600 to whichever exist as a belt and
// braces check, and the store calls it once they exist.
//
// Every connection runs journal_mode=WAL, synchronous=FULL (a commit returns
// only after its WAL frames are fsync'd), foreign_keys=ON and a busy timeout.
//
// Thread-safety: none. A connection is used by one thread at a time (the
// GroupCommitter's writer thread, or a reader behind a mutex); it is opened
// with SQLITE_OPEN_NOMUTEX because that serialization is ours.
#pragma once

#include <sqlite3.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "gantry/common/status.h"
#include "gantry/store/statement.h"

namespace gantry {

// How the error of a write the full disk refused begins (SQLITE_FULL): it
// names no file, and may be shown to anyone (/readyz).
inline constexpr std::string_view kDatabaseFullPrefix = "gantry's database cannot grow";

struct SqliteConnectionOptions {
  // Create the database file (mode 0600) when it is missing.
  bool create = true;
  // Reject writes on this connection (PRAGMA query_only) — for read connections.
  bool query_only = false;
  // How long a statement waits for a lock another connection holds.
  int busy_timeout_ms = 5000;
  // Statements kept prepared; beyond this, Prepare hands out uncached ones.
  // Bounds memory when SQL text varies (e.g. IN lists of varying length).
  size_t max_cached_statements = 128;
};

class SqliteConnection {
 public:
  // Errors name the path.
  static Result<std::unique_ptr<SqliteConnection>> Open(const std::string& path,
                                                        const SqliteConnectionOptions& options);
  ~SqliteConnection();
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  // Runs one or more ';'-separated statements without results (DDL, BEGIN...).
  Status Exec(std::string_view sql);

  // Returns a prepared statement for sql, from the cache when possible.
  // REQUIRES: no other live handle for the same sql (a cached statement is
  // shared); the handle is destroyed before this connection.
  Result<Statement> Prepare(std::string_view sql);

  // chmod 0600 the -wal and -shm files that exist. See the file comment.
  Status SecureCompanionFiles() const;

  // A Status for SQLite result code rc naming the path and what was being done.
  Status Error(int rc, std::string_view what) const;

  sqlite3* db() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  SqliteConnection(sqlite3* db, std::string path, size_t max_cached)
      : db_(db), path_(std::move(path)), max_cached_(max_cached) {}

  struct StmtDeleter {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

  sqlite3* db_;
  std::string path_;
  size_t max_cached_;
  std::map<std::string, StmtPtr, std::less<>> cache_;  // destroyed before db_ is closed
};

// Maps a SQLite result code to a Status: BUSY/LOCKED -> Unavailable,
// CORRUPT/NOTADB -> Corruption, CONSTRAINT -> Conflict, else Io. The message
// is "<context>: <sqlite message>" and names the database file when db is set.
Status SqliteStatus(sqlite3* db, int rc, std::string_view context);

}  // namespace gantry
