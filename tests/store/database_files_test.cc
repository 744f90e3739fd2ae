// The database's files: one daemon per database, and private modes.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <sqlite3.h>

#include "gantry/store/sqlite_store.h"
#include "log_capture.h"
#include "start_notice.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry {
namespace {

using testing::TempDir;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

SqliteStoreOptions At(const std::string& path) {
  SqliteStoreOptions options;
  options.path = path;
  return options;
}

// A database of 300 jobs at path, closed: enough rows for a few pages of
// the jobs table and its indexes.
void FillStore(const std::string& path) {
  auto store = OpenSqliteStore(At(path));
  REQUIRE(store.ok());
  for (int i = 0; i < 300; ++i) {
    REQUIRE(testing::SubmitSync(**store, testing::MakeJob("team-a", "j" + std::to_string(i))).ok());
  }
}

}  // namespace

TEST_CASE("a database in use by a store is refused to a second, naming the holder", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  {
    auto first = OpenSqliteStore(At(path));
    REQUIRE(first.ok());
    auto second = OpenSqliteStore(At(path));
    REQUIRE_FALSE(second.ok());
    CHECK(second.status().code() == Code::kUnavailable);
    CHECK_THAT(second.status().message(), Catch::Contains("in use by another gantry"));
    CHECK_THAT(second.status().message(), Catch::Contains("pid " + std::to_string(::getpid())));
    CHECK(ModeOf(path + ".lock") == 0600);
    // The first goes on working.
    REQUIRE((*first)->LoadOutages().ok());
  }
  // Once the first is gone, the database opens again.
  CHECK(OpenSqliteStore(At(path)).ok());
}

TEST_CASE("a database found open to others is made private again", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  REQUIRE(OpenSqliteStore(At(path)).ok());  // made, then closed
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  auto store = OpenSqliteStore(At(path));
  REQUIRE(store.ok());
  CHECK(ModeOf(path) == 0600);
}

TEST_CASE("a database file that exists and is empty is refused, not taken for a new database", "[store]") {
  // A truncated file, or a restore that wrote nothing: started on, gantry
  // would forget every job it held.
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  { std::ofstream(path).flush(); }
  auto store = OpenSqliteStore(At(path));
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kCorruption);
  CHECK_THAT(store.status().message(), Catch::Contains("exists and is empty") && Catch::Contains("remove it"));
  // Removed, it starts anew.
  REQUIRE(std::remove(path.c_str()) == 0);
  CHECK(OpenSqliteStore(At(path)).ok());
}

TEST_CASE("a database file that holds no table is refused, not taken for a new database", "[store]") {
  // What a copy of a running gantry's gantry.db alone may hold: its header,
  // its tables still in the -wal it was copied without.
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA user_version = 7", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  REQUIRE(st.st_size > 0);
  auto store = OpenSqliteStore(At(path));
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kCorruption);
  CHECK_THAT(store.status().message(), Catch::Contains("holds no tables") && Catch::Contains("-wal") &&
                                           Catch::Contains("remove the file"));
  // A database gantry made opens again, and one whose file is new is made.
  REQUIRE(std::remove(path.c_str()) == 0);
  REQUIRE(OpenSqliteStore(At(path)).ok());
  CHECK(OpenSqliteStore(At(path)).ok());
}

TEST_CASE("a new database is built beside its path and renamed into place: a start that died building it "
          "leaves nothing the next start refuses",
          "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  // What such a start leaves: the database half built beside the path (a
  // header and no tables, a WAL), never at it.
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((path + ".gantry-creating").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  { std::ofstream(path + ".gantry-creating-wal") << "torn"; }
  auto store = OpenSqliteStore(At(path));
  REQUIRE(store.ok());
  CHECK(ModeOf(path) == 0600);
  for (const char* left : {".gantry-creating", ".gantry-creating-wal", ".gantry-creating-shm"}) {
    CHECK(::access((path + left).c_str(), F_OK) != 0);
  }
  REQUIRE(testing::SubmitSync(**store, testing::MakeJob("team-a", "train")).ok());
  store->reset();
  // And it is the database, as any other: it opens again with its job.
  auto again = OpenSqliteStore(At(path));
  REQUIRE(again.ok());
  CHECK((*again)->Get("team-a", "train").ok());
}

TEST_CASE("a database missing beside its WAL is refused, not made anew under that WAL", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  FillStore(path);
  // What an operator who removed gantry.db alone leaves: SQLite would
  // replay the WAL over a new file.
  { std::ofstream(path + "-wal") << std::string(4096, 'x'); }
  REQUIRE(std::remove(path.c_str()) == 0);
  auto store = OpenSqliteStore(At(path));
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kCorruption);
  CHECK_THAT(store.status().message(), Catch::Contains("is missing, but its " + path + "-wal is there"));
  CHECK(::access(path.c_str(), F_OK) != 0);  // nothing made
}

TEST_CASE("a database from before the origin was recorded takes the daemon's, with a warning while it has "
          "unfinished jobs",
          "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  auto with_origin = [&](const std::string& origin) {
    SqliteStoreOptions options = At(path);
    options.origin = origin;
    return OpenSqliteStore(options);
  };
  {
    auto store = with_origin("gantry");
    REQUIRE(store.ok());
    REQUIRE(testing::SubmitSync(**store, testing::MakeJob("team-a", "train")).ok());
  }
  // What a database from before migration 018 lacks.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "DELETE FROM daemon_settings WHERE key = 'origin'", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(db);
  {
    testing::LogCapture capture;
    REQUIRE(with_origin("gantry-b").ok());
    CHECK_THAT(capture.Text(), Catch::Contains("does not say which origin its jobs were dispatched with") &&
                                   Catch::Contains("1 of its jobs are not finished") &&
                                   Catch::Contains("taken to carry origin gantry-b"));
  }
  // Recorded now: the other one is refused, and no warning comes again.
  CHECK_FALSE(with_origin("gantry").ok());
  testing::LogCapture capture;
  REQUIRE(with_origin("gantry-b").ok());
  CHECK(capture.Text().find("does not say which origin") == std::string::npos);
}

TEST_CASE("a database is opened only with the origin its unfinished jobs were dispatched with", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  auto with_origin = [&](const std::string& origin) {
    SqliteStoreOptions options = At(path);
    options.origin = origin;
    return OpenSqliteStore(options);
  };
  std::string uid;
  {
    auto store = with_origin("gantry");  // recorded at the first start
    REQUIRE(store.ok());
    auto submitted = testing::SubmitSync(**store, testing::MakeJob("team-a", "train"));
    REQUIRE(submitted.ok());
    uid = submitted->job.uid;
  }
  CHECK(with_origin("gantry").ok());
  CHECK(with_origin("").ok());  // (no check asked)
  {
    auto refused = with_origin("gantry-b");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == Code::kInvalidArgument);
    CHECK_THAT(refused.status().message(),
               Catch::Contains("origin is gantry-b in the configuration, but this database's jobs were dispatched "
                               "with origin gantry: 1 of its jobs are not finished or have objects left") &&
                   Catch::Contains("put origin back to gantry"));
  }
  auto rows = [&](bool present) {
    auto store = with_origin("gantry");
    REQUIRE(store.ok());
    DispatchUpdate u;
    u.uid = uid;
    u.expected_phase = JobPhase::kCancelled;
    if (present) {
      u.upsert_intents.push_back(testing::MakeIntent("c1", "Job", 1, false));
    } else {
      u.drop_intents.emplace_back("c1", "Job");
    }
    REQUIRE(testing::ApplySync(**store, u).ok());
  };
  {
    auto store = with_origin("gantry");
    REQUIRE(store.ok());
    testing::ForcePhase(**store, uid, JobPhase::kCancelled);
  }
  // Cancelled, its run's delete not confirmed yet: still refused.
  rows(true);
  CHECK_FALSE(with_origin("gantry-b").ok());
  rows(false);
  // Every job finished: the new origin is taken, and then the old one is
  // the other.
  CHECK(with_origin("gantry-b").ok());
  CHECK(with_origin("gantry-b").ok());
  auto store = with_origin("gantry");
  REQUIRE(store.ok());  // (nothing unfinished either way)
}

TEST_CASE("a damaged database file is refused at the start, not found out at the first write", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  FillStore(path);
  // Garbage over the pages past the first two (the header and the schema
  // stay readable, as in the damage seen in a trial).
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(f.good());
    f.seekp(8192);
    const std::string junk(8192, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto store = OpenSqliteStore(At(path));
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kCorruption);
  CHECK_THAT(store.status().message(), Catch::Contains("is damaged") && Catch::Contains("backup"));
}

TEST_CASE("a start notice calls every period on its own thread until it ends, and outlives a call that throws",
          "[store]") {
  std::atomic<int> calls{0};
  {
    StartNotice notice(
        [&calls] {
          if (++calls == 1) throw std::runtime_error("first call fails");
        },
        std::chrono::milliseconds(1));
    REQUIRE(testing::WaitFor([&] { return calls.load() >= 3; }, std::chrono::seconds(10)));
  }
  const int at_end = calls.load();
  // Ended: joined, so no call is under way or to come.
  StartNotice idle({}, std::chrono::milliseconds(1));  // no function: no thread
  CHECK(calls.load() == at_end);
}

TEST_CASE("a store's start says nothing within slow_start_every, and serves as before once open", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  FillStore(path);
  int notices = 0;
  SqliteStoreOptions options = At(path);
  options.on_slow_start = [&notices] { ++notices; };
  options.slow_start_every = std::chrono::hours(1);
  auto store = OpenSqliteStore(options);
  REQUIRE(store.ok());
  CHECK(notices == 0);
  REQUIRE(testing::SubmitSync(**store, testing::MakeJob("team-b", "after")).ok());
  CHECK(notices == 0);
}

}  // namespace gantry
