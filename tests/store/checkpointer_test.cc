// Checkpointer: the WAL is copied back by its own thread, and it still starts
// over under writes that never pause.
#include "gantry/store/checkpointer.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

#include "gantry/store/group_commit.h"
#include "wal_write_vfs.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(30);

Status InsertRow(SqliteConnection& conn, int i) {
  Result<Statement> stmt = conn.Prepare("INSERT INTO t (k, v) VALUES (?1, ?2)");
  if (!stmt.ok()) return stmt.status();
  // A page-sized value: every commit adds a frame or two to the WAL.
  return stmt->Bind(1, i).Bind(2, std::string(1500, 'x')).Run();
}

// A writer on a fresh file with a table t(k, v), and a checkpointer attached.
struct Checkpointed {
  TempDir dir;
  const std::string path = dir.File("ckpt.db");
  std::unique_ptr<SqliteConnection> writer;
  std::unique_ptr<Checkpointer> checkpointer;

  explicit Checkpointed(CheckpointerOptions options) {
    auto w = SqliteConnection::Open(path, {});
    REQUIRE(w.ok());
    writer = std::move(*w);
    REQUIRE(writer->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").ok());
    auto c = Checkpointer::Start(path, options);
    REQUIRE(c.ok());
    checkpointer = std::move(*c);
    checkpointer->Attach(writer->db());
  }
};

CheckpointerOptions Frames(int wake, int writer) {
  CheckpointerOptions options;
  options.wake_frames = wake;
  options.writer_frames = writer;
  return options;
}

}  // namespace

TEST_CASE("the checkpointer copies the WAL on its own thread and the WAL stays bounded", "[store]") {
  const CheckpointerOptions options = Frames(16, 200);
  Checkpointed db(options);
  const std::string& path = db.path;

  // A reader sees every committed row, whichever file it is in.
  SqliteConnectionOptions read_options;
  read_options.create = false;
  read_options.query_only = true;
  auto reader = SqliteConnection::Open(path, read_options);
  REQUIRE(reader.ok());

  // Commits one after the other, with no pause for a checkpoint to catch up.
  constexpr int kRows = 5000;
  std::uintmax_t largest_wal = 0;
  for (int i = 0; i < kRows; ++i) {
    REQUIRE(InsertRow(*db.writer, i).ok());
    largest_wal = std::max(largest_wal, std::filesystem::file_size(path + "-wal"));
  }
  REQUIRE(WaitFor([&] { return db.checkpointer->background_checkpoints() > 0; }, kDeadline));
  // The WAL started over again and again instead of growing to the 5000
  // frames of 2 KiB the rows take.
  const std::uintmax_t bound = 4 * options.writer_frames * 2100u;
  CHECK(largest_wal < bound);
  {
    // (A statement left stepped would keep a read snapshot open and pin the WAL.)
    auto count = (*reader)->Prepare("SELECT COUNT(*), SUM(length(v)) FROM t");
    REQUIRE(count.ok());
    REQUIRE(*count->Step());
    CHECK(count->Int(0) == kRows);
    CHECK(count->Int(1) == int64_t{kRows} * 1500);
  }

  // Stopped, the writer's hook still checkpoints, and the WAL stays bounded.
  db.checkpointer->Stop();
  const int64_t by_writer = db.checkpointer->writer_checkpoints();
  for (int i = kRows; i < kRows + 600; ++i) REQUIRE(InsertRow(*db.writer, i).ok());
  CHECK(db.checkpointer->writer_checkpoints() > by_writer);
  CHECK(std::filesystem::file_size(path + "-wal") < bound);
}


TEST_CASE("the writer's own checkpoint syncs the WAL even inside a commit that skips its fsync", "[store]") {
  // The background thread stays out of it; every commit checkpoints in its hook.
  Checkpointed db(Frames(1'000'000, 1));

  const auto before = store_internal::WalSyncs();
  {
    store_internal::WalSyncScope lazy(false);
    REQUIRE(InsertRow(*db.writer, 1).ok());
  }
  const auto after = store_internal::WalSyncs();
  CHECK(db.checkpointer->writer_checkpoints() == 1);
  CHECK(after.skipped - before.skipped == 1);  // the commit's own
  // The checkpoint's: the WAL before it copies frames into the database.
  CHECK(after.synced - before.synced >= 1);
}

}  // namespace gantry::testing
