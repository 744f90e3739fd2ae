// Statement: a scoped handle on one prepared SQLite statement.
//
// Obtained from SqliteConnection::Prepare. A statement borrowed from the
// connection's cache is reset and its bindings cleared when the handle goes
// out of scope (so it never holds a read transaction open); an uncached one is
// finalized. Bind errors are remembered and reported by the next Step, so
// binding reads as a chain without a check per call.
//
// Thread-safety: none; use it on the thread that owns its connection.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "gantry/common/status.h"

namespace gantry {

class Statement {
 public:
  Statement() = default;
  // owned: finalize on destruction (else reset, as the cache keeps it).
  Statement(sqlite3_stmt* stmt, bool owned) : stmt_(stmt), owned_(owned) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQL "?1". Text is copied (SQLITE_TRANSIENT).
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, std::string_view value);

  // Runs one step: true when a row is available, false when done.
  Result<bool> Step();
  // Runs to completion; a statement that yields a row is an Internal error.
  Status Run();

  // Column accessors for the current row; columns are 0-based. NULL reads as
  // 0 / "" so bad stored data never crashes a reader.
  int64_t Int(int column) const;
  std::string Text(int column) const;

  sqlite3_stmt* get() const { return stmt_; }

 private:
  void Release();

  sqlite3_stmt* stmt_ = nullptr;
  bool owned_ = false;
  int bind_rc_ = SQLITE_OK;  // first bind failure, reported by Step
};

}  // namespace gantry
