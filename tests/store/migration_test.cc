// Schema migrations, the open-time checks and file modes.
#include <sqlite3.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "gantry/common/clock.h"
#include "gantry/store/sqlite_connection.h"
#include "gantry/store/sqlite_store.h"
#include "migrator.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

// Direct access to the file, bypassing the store, as an operator (or a newer
// binary) would have it.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  void Exec(const std::string& sql) {
    REQUIRE(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  }
  int64_t Int(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
    int64_t v = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return v;
  }

 private:
  sqlite3* db_ = nullptr;
};

// A database at path as a binary of schema `version` left it, holding the
// rows `sql` inserts.
void OlderDatabase(const std::string& path, int version, const std::string& sql) {
  Result<std::unique_ptr<SqliteConnection>> conn = SqliteConnection::Open(path, {});
  REQUIRE(conn.ok());
  REQUIRE(MigrateSchema(**conn, EmbeddedMigrations().first(version), 1'000).ok());
  REQUIRE((*conn)->Exec(sql).ok());
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

}  // namespace

TEST_CASE("migrations apply once, in order, and are recorded", "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  REQUIRE(LatestSchemaVersion() >= 1);
  FakeClock clock(1'000);
  OpenStore(path, &clock).reset();
  {
    RawDb raw(path);
    CHECK(raw.Int("SELECT COUNT(*) FROM schema_version") == LatestSchemaVersion());
    CHECK(raw.Int("SELECT MAX(version) FROM schema_version") == LatestSchemaVersion());
    CHECK(raw.Int("SELECT name = 'init' FROM schema_version WHERE version = 1") == 1);
    CHECK(raw.Int("SELECT applied_at_ms FROM schema_version WHERE version = 1") == 1'000);
    CHECK(raw.Int("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                  "('jobs', 'job_events')") == 2);
    CHECK(raw.Int("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                  "('jobs_by_namespace', 'jobs_by_queue', 'jobs_by_phase', "
                  "'job_events_by_job')") == 4);
  }
  // Reopening applies nothing: same rows, original timestamps, data intact.
  clock.Set(2'000);
  {
    auto store = OpenStore(path, &clock);
    REQUIRE(SubmitSync(*store, MakeJob("ns", "kept")).ok());
  }
  OpenStore(path, &clock).reset();
  RawDb raw(path);
  CHECK(raw.Int("SELECT COUNT(*) FROM schema_version") == LatestSchemaVersion());
  CHECK(raw.Int("SELECT MAX(applied_at_ms) FROM schema_version") == 1'000);
  CHECK(raw.Int("SELECT COUNT(*) FROM jobs") == 1);
}

TEST_CASE("migration 004 keeps every event, its id and order, keyed by the job's seq",
          "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  // A database as a version-3 binary left it, with history.
  OlderDatabase(path, 3,
                "INSERT INTO jobs (uid, namespace, name, queue, spec_json, phase, created_ms, updated_ms) "
                "VALUES ('u-old', 'ns', 'old', 'q', '{}', 'Succeeded', 1, 1), "
                "       ('u-run', 'ns', 'run', 'q', '{}', 'Running', 2, 2);"
                "INSERT INTO job_events (job_uid, time_ms, reason) VALUES "
                "  ('u-old', 10, 'Submitted'), ('u-run', 11, 'Submitted'), ('u-old', 12, 'Succeeded');");
  auto store = OpenStore(path);
  Result<std::vector<JobEvent>> old_events = store->Events("u-old");
  REQUIRE(old_events.ok());
  REQUIRE(old_events->size() == 2);
  CHECK((*old_events)[0].reason == "Submitted");
  CHECK((*old_events)[1].reason == "Succeeded");
  CHECK((*old_events)[1].time_ms == 12);
  Result<std::vector<JobEvent>> run_events = store->Events("u-run");
  REQUIRE(run_events.ok());
  CHECK(run_events->size() == 1);

  // New events continue after the old ids (AUTOINCREMENT survived the copy),
  // and a purge still takes the job's events with it.
  REQUIRE(SubmitSync(*store, MakeJob("ns", "new")).ok());
  REQUIRE(PurgeSync(*store, "ns", "old").ok());
  store.reset();
  RawDb raw(path);
  CHECK(raw.Int("SELECT MIN(id) FROM job_events WHERE job_uid NOT IN ('u-old', 'u-run')") == 4);
  CHECK(raw.Int("SELECT COUNT(*) FROM job_events WHERE job_uid = 'u-old'") == 0);
  CHECK(raw.Int("SELECT COUNT(*) FROM job_events WHERE job_uid = 'u-run'") == 1);
  CHECK(raw.Int("SELECT COUNT(*) FROM job_events AS e JOIN jobs AS j ON j.seq = e.job_seq "
                "AND j.uid = e.job_uid") == 2);
}

TEST_CASE("migration 005 keeps every intent, keyed by job, cluster and kind, without the cluster index",
          "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  // A database as a version-4 binary left it, with intents.
  OlderDatabase(path, 4,
                "INSERT INTO jobs (uid, namespace, name, queue, spec_json, phase, created_ms, updated_ms) "
                "VALUES ('u-a', 'ns', 'a', 'q', '{}', 'Nominating', 1, 1), "
                "       ('u-b', 'ns', 'b', 'q', '{}', 'Succeeded', 2, 2);"
                "INSERT INTO remote_intents (job_uid, cluster, kind, namespace, name, epoch, present, updated_ms) "
                "VALUES ('u-a', 'c2', 'Workload', 'ns', 'a-1', 1, 1, 10), "
                "       ('u-a', 'c1', 'Workload', 'ns', 'a-1', 1, 1, 11), ('u-b', 'c1', 'Job', 'ns', 'b-2', 2, 0, 12);");
  auto store = OpenStore(path);
  Result<std::vector<RemoteIntent>> a = store->Intents("u-a");
  REQUIRE(a.ok());
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].cluster == "c1");  // by cluster, then kind
  CHECK((*a)[1].cluster == "c2");
  CHECK((*a)[1].updated_ms == 10);
  Result<std::vector<RemoteIntent>> b = store->Intents("u-b");
  REQUIRE(b.ok());
  REQUIRE(b->size() == 1);
  CHECK((*b)[0].kind == "Job");
  CHECK((*b)[0].epoch == 2);
  CHECK_FALSE((*b)[0].present);
  Result<std::vector<std::string>> in_c1 = store->UidsWithIntentsIn("c1", "", 100);
  REQUIRE(in_c1.ok());
  CHECK(in_c1->size() == 2);
  // A purge still takes the job's intents with it.
  REQUIRE(PurgeSync(*store, "ns", "b").ok());
  store.reset();
  RawDb raw(path);
  CHECK(raw.Int("SELECT COUNT(*) FROM remote_intents WHERE job_uid = 'u-b'") == 0);
  CHECK(raw.Int("SELECT COUNT(*) FROM sqlite_master WHERE name = 'remote_intents_by_cluster'") == 0);
  CHECK(raw.Int("SELECT COUNT(*) FROM sqlite_master WHERE name = 'remote_intents' AND sql LIKE '%WITHOUT ROWID%'") == 1);
}

TEST_CASE("migration 006 adds the finish time, 0 for jobs that finished before it", "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  OlderDatabase(path, 5,
                "INSERT INTO jobs (uid, namespace, name, queue, spec_json, phase, created_ms, updated_ms) "
                "VALUES ('u-done', 'ns', 'done', 'q', '{}', 'Succeeded', 1, 7);");
  auto store = OpenStore(path);
  Result<JobRecord> done = store->GetByUid("u-done");
  REQUIRE(done.ok());
  CHECK(done->phase == JobPhase::kSucceeded);
  CHECK(done->updated_ms == 7);
  CHECK(done->finished_ms == 0);
}

TEST_CASE("migration 007 gives every intent an empty refusal", "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  OlderDatabase(path, 6,
                "INSERT INTO jobs (uid, namespace, name, queue, spec_json, phase, created_ms, updated_ms) "
                "VALUES ('u-a', 'ns', 'a', 'q', '{}', 'Nominating', 1, 7);"
                "INSERT INTO remote_intents (job_uid, cluster, kind, namespace, name, epoch, present, updated_ms) "
                "VALUES ('u-a', 'c1', 'Workload', 'ns', 'a-x', 1, 1, 7);");
  auto store = OpenStore(path);
  auto intents = store->Intents("u-a");
  REQUIRE(intents.ok());
  REQUIRE(intents->size() == 1);
  CHECK((*intents)[0].present);
  CHECK((*intents)[0].refusal.empty());
}

TEST_CASE("migration 013 indexes the list by namespace and phase", "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  OlderDatabase(path, 12,
                "INSERT INTO jobs (uid, namespace, name, queue, spec_json, phase, created_ms, updated_ms) "
                "VALUES ('u-1', 'a', 'one', 'q', '{}', 'Running', 1, 1), ('u-2', 'b', 'two', 'q', '{}', 'Running', 2, 2), "
                "       ('u-3', 'a', 'three', 'q', '{}', 'Succeeded', 3, 3), "
                "       ('u-4', 'a', 'four', 'q', '{}', 'Running', 4, 4);");
  auto store = OpenStore(path);
  // The rows that were there before the index, in seq order, a page at a time.
  ListQuery query;
  query.ns = "a";
  query.phase = JobPhase::kRunning;
  query.limit = 1;
  Result<JobPage> first = store->List(query);
  REQUIRE(first.ok());
  REQUIRE(first->jobs.size() == 1);
  CHECK(first->jobs[0].uid == "u-1");
  REQUIRE(first->next_after_seq);
  query.after_seq = *first->next_after_seq;
  Result<JobPage> second = store->List(query);
  REQUIRE(second.ok());
  REQUIRE(second->jobs.size() == 1);
  CHECK(second->jobs[0].uid == "u-4");
  CHECK_FALSE(second->next_after_seq);
  store.reset();
  RawDb raw(path);
  CHECK(raw.Int("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'jobs_by_namespace_phase'") == 1);
}

TEST_CASE("an upgrade that fails half way leaves the database at its old version, whole", "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  const int old_version = 8;
  OlderDatabase(path, old_version, "SELECT 1");
  // The rest of the embedded migrations, then one that fails.
  std::vector<Migration> upgrade(EmbeddedMigrations().begin(), EmbeddedMigrations().end());
  upgrade.push_back({upgrade.back().version + 1, "broken", "CREATE TABLE t (x INTEGER); SELECT * FROM missing;"});
  {
    Result<std::unique_ptr<SqliteConnection>> conn = SqliteConnection::Open(path, {});
    REQUIRE(conn.ok());
    Result<int> migrated = MigrateSchema(**conn, upgrade, 2'000);
    REQUIRE_FALSE(migrated.ok());
    CHECK_THAT(migrated.status().message(), Catch::Contains("broken"));
    CHECK_THAT(migrated.status().message(), Catch::Contains("left at schema version 8"));
  }
  RawDb raw(path);
  CHECK(raw.Int("SELECT MAX(version) FROM schema_version") == old_version);
  // Nothing of the migrations after 8 is there: 009's column, 011's table.
  CHECK(raw.Int("SELECT COUNT(*) FROM pragma_table_info('remote_intents') WHERE name = 'gate_opened_ms'") == 0);
  CHECK(raw.Int("SELECT COUNT(*) FROM sqlite_master WHERE name = 'purged_jobs'") == 0);
  // The binary of this build still opens it, and brings it up to date.
  CHECK(OpenStore(path) != nullptr);
}

TEST_CASE("a database from a newer binary is refused", "[store][migration]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  OpenStore(path).reset();
  {
    RawDb raw(path);
    raw.Exec("INSERT INTO schema_version (version, name, applied_at_ms) VALUES (" +
             std::to_string(LatestSchemaVersion() + 1) + ", 'future', 0)");
  }
  SqliteStoreOptions options;
  options.path = path;
  Result<std::unique_ptr<SqliteStore>> store = OpenSqliteStore(options);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().message().find(path) != std::string::npos);
  CHECK(store.status().message().find("downgrade") != std::string::npos);
  CHECK(store.status().message().find(std::to_string(LatestSchemaVersion() + 1)) !=
        std::string::npos);
}

TEST_CASE("database, -wal and -shm files are 0600 whatever the umask", "[store][open]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  // The test process is single-threaded here; restore the umask before REQUIREs.
  mode_t old_umask = ::umask(0);
  std::unique_ptr<SqliteStore> store;
  {
    SqliteStoreOptions options;
    options.path = path;
    Result<std::unique_ptr<SqliteStore>> opened = OpenSqliteStore(options);
    ::umask(old_umask);
    REQUIRE(opened.ok());
    store = std::move(*opened);
  }
  REQUIRE(SubmitSync(*store, MakeJob("ns", "a")).ok());
  CHECK(ModeOf(path) == 0600);
  CHECK(ModeOf(path + "-wal") == 0600);
  CHECK(ModeOf(path + "-shm") == 0600);
}

TEST_CASE("a full disk is a store unavailable for now, and says so without the database's path",
          "[store][open]") {
  TempDir dir;
  Result<std::unique_ptr<SqliteConnection>> conn = SqliteConnection::Open(dir.File("db"), {});
  REQUIRE(conn.ok());
  // The file may not grow past a few pages: SQLITE_FULL, as on a full disk.
  REQUIRE((*conn)->Exec("CREATE TABLE t (v TEXT NOT NULL)").ok());
  REQUIRE((*conn)->Exec("PRAGMA max_page_count = 8").ok());
  Status full;
  for (int i = 0; i < 100 && full.ok(); ++i) {
    full = (*conn)->Exec("INSERT INTO t VALUES (printf('%.2000c', 'x'))");
  }
  REQUIRE_FALSE(full.ok());
  CHECK(full.code() == Code::kUnavailable);  // the API answers 503, not 500
  CHECK_THAT(full.message(), Catch::Contains("database or disk is full") &&
                                 Catch::Contains("writes are refused until the disk has room again"));
  CHECK(full.message().find(dir.path()) == std::string::npos);
}

TEST_CASE("connections run WAL, synchronous=FULL and foreign keys", "[store][open]") {
  TempDir dir;
  Result<std::unique_ptr<SqliteConnection>> conn = SqliteConnection::Open(dir.File("db"), {});
  REQUIRE(conn.ok());
  auto pragma = [&](const char* sql) {
    Result<Statement> stmt = (*conn)->Prepare(sql);
    REQUIRE(stmt.ok());
    REQUIRE(*stmt->Step());
    return stmt->Text(0);
  };
  CHECK(pragma("PRAGMA journal_mode") == "wal");
  CHECK(pragma("PRAGMA synchronous") == "2");  // FULL
  CHECK(pragma("PRAGMA foreign_keys") == "1");
  CHECK(pragma("PRAGMA busy_timeout") == "5000");
  CHECK(pragma("PRAGMA page_size") == "2048");  // a new database
}

TEST_CASE("open errors name the path", "[store][open]") {
  TempDir dir;
  const std::string path = dir.File("missing-dir/gantry.db");
  SqliteStoreOptions options;
  options.path = path;
  Result<std::unique_ptr<SqliteStore>> store = OpenSqliteStore(options);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().message().find(path) != std::string::npos);

  // A file that is not a database.
  const std::string junk = dir.File("junk.db");
  WriteFile(junk, std::string(4096, 'x'));
  options.path = junk;
  store = OpenSqliteStore(options);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().message().find(junk) != std::string::npos);
}

}  // namespace gantry::testing
