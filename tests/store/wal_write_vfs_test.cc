// The gantry-wal VFS: WAL appends leave in one write per commit, and every
// commit is whole and readable by another connection the moment it returns.
#include "wal_write_vfs.h"

#include <catch2/catch.hpp>

#include <string>

#include "gantry/store/sqlite_connection.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

using store_internal::WalWrites;

int64_t Scalar(SqliteConnection& conn, const std::string& sql) {
  auto stmt = conn.Prepare(sql);
  REQUIRE(stmt.ok());
  auto row = stmt->Step();
  REQUIRE(row.ok());
  REQUIRE(*row);
  return stmt->Int(0);
}

// A writer on a fresh file with a table t(k, v), and a read-only connection.
struct WriterAndReader {
  TempDir dir;
  const std::string path = dir.File("wal.db");
  std::unique_ptr<SqliteConnection> writer;
  std::unique_ptr<SqliteConnection> reader;

  WriterAndReader() {
    REQUIRE(store_internal::WalWriteVfsName() != nullptr);
    auto w = SqliteConnection::Open(path, {});
    REQUIRE(w.ok());
    writer = std::move(*w);
    REQUIRE(writer->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").ok());
    SqliteConnectionOptions read_options;
    read_options.create = false;
    read_options.query_only = true;
    auto r = SqliteConnection::Open(path, read_options);
    REQUIRE(r.ok());
    reader = std::move(*r);
  }
};

TEST_CASE("WAL writes are gathered and every commit is visible to another connection at once", "[store]") {
  WriterAndReader db;
  SqliteConnection& w = *db.writer;
  REQUIRE(w.Exec("CREATE INDEX t_by_v ON t (v)").ok());
  SqliteConnection& r = *db.reader;

  SECTION("small commits: one write each, each seen whole right after it") {
    const auto before = WalWrites();
    constexpr int kCommits = 200;
    for (int c = 0; c < kCommits; ++c) {
      REQUIRE(w.Exec("BEGIN IMMEDIATE").ok());
      for (int i = 0; i < 8; ++i) {
        auto ins = w.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)");
        REQUIRE(ins.ok());
        // Random-ish index keys touch several pages per commit.
        REQUIRE(ins->Bind(1, c * 8 + i).Bind(2, std::to_string((c * 8 + i) * 7919 % 100003) + std::string(900, 'v')).Run().ok());
      }
      REQUIRE(w.Exec("COMMIT").ok());
      CHECK(Scalar(r, "SELECT COUNT(*) FROM t") == (c + 1) * 8);
    }
    const auto after = WalWrites();
    const int64_t asked = after.in - before.in;
    const int64_t made = after.out - before.out;
    // SQLite asks for two writes per frame and several frames per commit.
    CHECK(asked >= 4 * kCommits);
    CHECK(made <= kCommits + 10);  // (the WAL header of each restart aside)
  }

  SECTION("a transaction larger than the buffer, rewriting pages it already wrote") {
    REQUIRE(w.Exec("PRAGMA cache_size=20").ok());  // spills to the WAL mid-transaction
    REQUIRE(w.Exec("BEGIN IMMEDIATE").ok());
    for (int i = 0; i < 2000; ++i) {
      auto ins = w.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)");
      REQUIRE(ins.ok());
      REQUIRE(ins->Bind(1, i).Bind(2, std::string(600, static_cast<char>('a' + i % 26))).Run().ok());
    }
    REQUIRE(w.Exec("UPDATE t SET v = v || 'x' WHERE k % 3 = 0").ok());
    REQUIRE(w.Exec("COMMIT").ok());
    CHECK(Scalar(r, "SELECT COUNT(*) FROM t") == 2000);
    CHECK(Scalar(r, "SELECT COUNT(*) FROM t WHERE length(v) = 601") == 667);
  }

  SECTION("a rolled-back transaction leaves nothing behind") {
    REQUIRE(w.Exec("INSERT INTO t (k, v) VALUES (1, 'kept')").ok());
    REQUIRE(w.Exec("PRAGMA cache_size=10").ok());
    REQUIRE(w.Exec("BEGIN IMMEDIATE").ok());
    for (int i = 2; i < 1000; ++i) {
      auto ins = w.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)");
      REQUIRE(ins.ok());
      REQUIRE(ins->Bind(1, i).Bind(2, std::string(700, 'r')).Run().ok());
    }
    REQUIRE(w.Exec("ROLLBACK").ok());
    REQUIRE(w.Exec("INSERT INTO t (k, v) VALUES (2, 'after')").ok());
    CHECK(Scalar(r, "SELECT COUNT(*) FROM t") == 2);
  }

  // Whatever the section did, the database is consistent.
  auto check = r.Prepare("PRAGMA integrity_check");
  REQUIRE(check.ok());
  REQUIRE(*check->Step());
  CHECK(check->Text(0) == "ok");
}

}  // namespace

TEST_CASE("a commit inside WalSyncScope(false) is seen at once without an fsync, and the next durable one syncs",
          "[store]") {
  WriterAndReader db;
  SqliteConnection& w = *db.writer;
  SqliteConnection& r = *db.reader;

  const auto before = store_internal::WalSyncs();
  {
    store_internal::WalSyncScope lazy(false);
    for (int i = 0; i < 5; ++i) {
      REQUIRE(w.Exec("INSERT INTO t (k, v) VALUES (" + std::to_string(i) + ", '" + std::string(900, 'v') + "')").ok());
      // The frames left the buffer at the commit: another connection reads them.
      CHECK(Scalar(r, "SELECT COUNT(*) FROM t") == i + 1);
    }
    {
      store_internal::WalSyncScope nested(true);  // scopes nest
      REQUIRE(w.Exec("INSERT INTO t (k, v) VALUES (100, 'durable inside')").ok());
    }
    REQUIRE(w.Exec("INSERT INTO t (k, v) VALUES (101, 'lazy again')").ok());
  }
  const auto lazy = store_internal::WalSyncs();
  CHECK(lazy.skipped - before.skipped == 6);
  CHECK(lazy.synced - before.synced == 1);
  REQUIRE(w.Exec("INSERT INTO t (k, v) VALUES (102, 'durable')").ok());
  const auto after = store_internal::WalSyncs();
  CHECK(after.skipped == lazy.skipped);
  CHECK(after.synced - lazy.synced == 1);
  CHECK(Scalar(r, "SELECT COUNT(*) FROM t") == 8);

  // Every frame copied back and no reader in the way: the next commit starts
  // the log over with a new header, which is synced before the frames that
  // overwrite the old ones, even inside the scope. The commit's own sync is
  // skipped as before.
  REQUIRE(w.Exec("PRAGMA wal_checkpoint(PASSIVE)").ok());
  const auto checkpointed = store_internal::WalSyncs();
  {
    store_internal::WalSyncScope lazy(false);
    REQUIRE(w.Exec("INSERT INTO t (k, v) VALUES (103, 'after the log started over')").ok());
  }
  const auto restarted = store_internal::WalSyncs();
  CHECK(restarted.synced - checkpointed.synced == 1);
  CHECK(restarted.skipped - checkpointed.skipped == 1);
  CHECK(Scalar(r, "SELECT COUNT(*) FROM t") == 9);
}

}  // namespace gantry::testing
