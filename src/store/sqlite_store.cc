// SqliteStore: opening and the read path. Writes are in sqlite_store_writes.cc.
#include "gantry/store/sqlite_store.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "job_rows.h"
#include "migrator.h"
#include "new_database.h"
#include "read_sql.h"
#include "schema_migrations.h"
#include "start_checks.h"
#include "start_notice.h"

namespace gantry {
namespace {

// Bounds the IN (...) list a List query builds; far below SQLite's limit on
// bound parameters, and far above any real tenant's namespace count.
constexpr size_t kMaxAllowedNamespaces = 1000;

}  // namespace

int LatestSchemaVersion() {
  std::span<const Migration> all = EmbeddedMigrations();
  return all.empty() ? 0 : all.back().version;
}

namespace {

// A database file that exists and is empty, with no WAL beside it that
// holds its pages, is not a new database: SQLite would take it for one and
// gantry would start with no jobs, forgetting every job a truncated file or
// a failed restore held, and what they run in the clusters.
Status RefuseEmptyFile(const std::string& path) {
  struct stat db {};
  if (::stat(path.c_str(), &db) != 0 || db.st_size != 0) return Status::Ok();
  if (WalHoldsPages(path)) return Status::Ok();
  return Status::Corruption(fmt::format(
      "database {} exists and is empty, so it holds no jobs; if this gantry had jobs, restore the file from a "
      "backup; to start with no jobs, remove it",
      path));
}

// SQLite's own check of the file's structure (pages, indexes), at the start:
// a damaged file otherwise starts, serves reads and says it is ready, and
// fails at its first write. It reads the whole file: 0.16 s for a 210 MB
// synthetic file in the page cache (Python's sqlite3, the test machine).
Status CheckIntegrity(SqliteConnection& conn) {
  const auto start = std::chrono::steady_clock::now();
  struct stat db {};
  if (::stat(conn.path().c_str(), &db) == 0 && db.st_size > (int64_t{1} << 30)) {
    spdlog::info("store: checking {} ({} MiB) before serving", conn.path(), db.st_size >> 20);
  }
  Result<Statement> check = conn.Prepare("PRAGMA quick_check(5)");
  if (!check.ok()) return check.status();
  std::vector<std::string> problems;
  while (true) {
    Result<bool> row = check->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    std::string line = check->Text(0);
    if (line != "ok") problems.push_back(std::move(line));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (seconds >= 1.0) spdlog::info("store: checking {} took {:.1f} s", conn.path(), seconds);
  if (problems.empty()) return Status::Ok();
  return Status::Corruption(fmt::format("database {} is damaged ({}); restore it from a backup", conn.path(),
                                        fmt::join(problems, "; ")));
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> OpenSqliteStore(const SqliteStoreOptions& options) {
  if (options.path.empty()) return Status::Invalid("store: database path is empty");
  SystemClock system_clock;
  const Clock* clock = options.clock != nullptr ? options.clock : &system_clock;

  Result<DatabaseLock> lock = DatabaseLock::Take(options.path);
  if (!lock.ok()) return lock.status();
  GANTRY_RETURN_IF_ERROR(CreateNewDatabase(options.path, clock->NowMillis()));
  GANTRY_RETURN_IF_ERROR(RefuseEmptyFile(options.path));
  struct stat before {};
  const bool existed_with_content = ::stat(options.path.c_str(), &before) == 0 && before.st_size > 0;
  Result<std::unique_ptr<SqliteConnection>> writer = SqliteConnection::Open(options.path, {});
  if (!writer.ok()) return writer.status();
  // SQLite opens a file it cannot write read-only, silently: every write
  // would then fail, long after a start that looked fine.
  if (sqlite3_db_readonly((*writer)->db(), "main") == 1) {
    return Status::Io(fmt::format("database {} can only be read (its permissions, or a read-only filesystem)",
                                  options.path));
  }
  {
    StartNotice notice(options.on_slow_start, options.slow_start_every);
    GANTRY_RETURN_IF_ERROR(CheckIntegrity(**writer));
    GANTRY_RETURN_IF_ERROR(RefuseTableless(**writer, existed_with_content));
    Result<int> migrated = MigrateSchema(**writer, EmbeddedMigrations(), clock->NowMillis());
    if (!migrated.ok()) return migrated.status();
    GANTRY_RETURN_IF_ERROR(CheckOrigin(**writer, options.origin));
  }

  SqliteConnectionOptions read_options;
  read_options.create = false;
  read_options.query_only = true;
  Result<std::unique_ptr<SqliteConnection>> reader =
      SqliteConnection::Open(options.path, read_options);
  if (!reader.ok()) return reader.status();
  // The migrations' writes created -wal and -shm by now.
  GANTRY_RETURN_IF_ERROR((*writer)->SecureCompanionFiles());

  // The WAL is copied back on a thread of its own (checkpointer.h).
  auto checkpointer = Checkpointer::Start(options.path, {});
  if (!checkpointer.ok()) return checkpointer.status();
  (*checkpointer)->Attach((*writer)->db());

  GroupCommitOptions commit_options;
  commit_options.max_batch = options.max_batch;
  commit_options.on_commit = options.on_commit;
  commit_options.on_failure = options.on_commit_failed;
  auto committer = std::make_unique<GroupCommitter>(std::move(*writer), std::move(commit_options));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(*lock), std::move(*reader), std::move(*checkpointer),
                                                      std::move(committer), options.clock, options.same_spec));
}

SqliteStore::SqliteStore(DatabaseLock lock, std::unique_ptr<SqliteConnection> reader,
                         std::unique_ptr<Checkpointer> checkpointer, std::unique_ptr<GroupCommitter> writer,
                         const Clock* clock, std::function<bool(std::string_view, std::string_view)> same_spec)
    : lock_(std::move(lock)),
      clock_(clock != nullptr ? clock : &system_clock_),
      same_spec_(std::move(same_spec)),
      reader_(std::move(reader)),
      checkpointer_(std::move(checkpointer)),
      writer_(std::move(writer)) {}

SqliteStore::~SqliteStore() { Shutdown(); }

void SqliteStore::Shutdown() {
  writer_->Shutdown();
  checkpointer_->Stop();
}

Result<JobRecord> SqliteStore::Get(const std::string& ns, const std::string& name) {
  std::lock_guard lock(read_mu_);
  return SelectJobByName(*reader_, ns, name);
}

Result<JobRecord> SqliteStore::GetByUid(const std::string& uid) {
  std::lock_guard lock(read_mu_);
  return SelectJobByUid(*reader_, uid);
}

Result<bool> SqliteStore::WasPurged(const std::string& uid) {
  std::lock_guard lock(read_mu_);
  auto stmt = reader_->Prepare("SELECT 1 FROM purged_jobs WHERE uid = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, uid);
  return stmt->Step();
}

Result<JobPage> SqliteStore::List(const ListQuery& query) {
  if (query.allowed_namespaces.size() > kMaxAllowedNamespaces) {
    return Status::Invalid(fmt::format("too many allowed namespaces ({} > {})",
                                       query.allowed_namespaces.size(), kMaxAllowedNamespaces));
  }
  const int limit = std::clamp(query.limit, 1, kMaxListLimit);
  std::vector<std::string> params;
  const std::string sql = ListSql(query, &params);

  std::lock_guard lock(read_mu_);
  Result<Statement> stmt = reader_->Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  // One row beyond the page tells whether another page follows.
  stmt->Bind(1, query.after_seq).Bind(2, int64_t{limit} + 1);
  for (size_t i = 0; i < params.size(); ++i) stmt->Bind(static_cast<int>(i) + 3, params[i]);
  JobPage page;
  int64_t bytes = 0;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    if (page.jobs.size() == static_cast<size_t>(limit) || (query.max_bytes > 0 && bytes >= query.max_bytes)) {
      page.next_after_seq = page.jobs.back().seq;
      break;
    }
    Result<JobRecord> job = ReadJob(*stmt);
    if (!job.ok()) return job.status();
    bytes += static_cast<int64_t>(job->TextBytes());
    page.jobs.push_back(std::move(*job));
  }
  return page;
}

Result<std::vector<JobEvent>> SqliteStore::Events(const std::string& uid) {
  std::lock_guard lock(read_mu_);
  Result<Statement> stmt = reader_->Prepare(
      "SELECT id, job_uid, time_ms, type, reason, message, cluster FROM job_events "
      "WHERE job_seq = (SELECT seq FROM jobs WHERE uid = ?1) ORDER BY id");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, uid);
  std::vector<JobEvent> events;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return events;
    Result<JobEvent> event = ReadEvent(*stmt);
    if (!event.ok()) return event.status();
    events.push_back(std::move(*event));
  }
}

Result<EventTail> SqliteStore::LastEvents(const std::string& uid, int limit) {
  std::lock_guard lock(read_mu_);
  // One statement, so that the count and the rows are of one snapshot; each
  // row carries the count (no row: no event at all), a subquery SQLite
  // evaluates once, as it names no column of the row.
  Result<Statement> stmt = reader_->Prepare(
      "SELECT e.id, e.job_uid, e.time_ms, e.type, e.reason, e.message, e.cluster, "
      "(SELECT COUNT(*) FROM job_events WHERE job_seq = (SELECT seq FROM jobs WHERE uid = ?1)) "
      "FROM job_events AS e "
      "WHERE e.job_seq = (SELECT seq FROM jobs WHERE uid = ?1) ORDER BY e.id DESC LIMIT ?2");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, uid);
  stmt->Bind(2, int64_t{limit > 0 ? limit : -1});  // SQLite's "no limit"
  EventTail tail;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    Result<JobEvent> event = ReadEvent(*stmt);
    if (!event.ok()) return event.status();
    tail.total = stmt->Int(7);
    tail.events.push_back(std::move(*event));
  }
  std::reverse(tail.events.begin(), tail.events.end());
  return tail;
}

Result<std::map<JobPhase, int64_t>> SqliteStore::CountByPhase() {
  std::map<JobPhase, int64_t> counts;
  for (JobPhase p : kAllJobPhases) counts[p] = 0;
  std::lock_guard lock(read_mu_);
  Result<Statement> stmt = reader_->Prepare("SELECT phase, COUNT(*) FROM jobs GROUP BY phase");
  if (!stmt.ok()) return stmt.status();
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return counts;
    std::string name = stmt->Text(0);
    std::optional<JobPhase> phase = ParseJobPhase(name);
    if (!phase) {
      return Status::Corruption(fmt::format("{} jobs in {} have unknown phase '{}'", stmt->Int(1),
                                            reader_->path(), name));
    }
    counts[*phase] = stmt->Int(1);
  }
}

namespace {

// The first column of every row: the uid scans.
Result<std::vector<std::string>> ReadUids(Statement& stmt) {
  std::vector<std::string> uids;
  while (true) {
    Result<bool> row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) return uids;
    uids.push_back(stmt.Text(0));
  }
}

}  // namespace

// By the index on (phase, seq): each page reads only its own rows.
Result<std::vector<JobKey>> SqliteStore::JobsInPhase(JobPhase phase, int64_t after_seq, int limit) {
  std::lock_guard lock(read_mu_);
  Result<Statement> stmt = reader_->Prepare(kJobsInPhaseSql);
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, JobPhaseName(phase)).Bind(2, after_seq).Bind(3, int64_t{std::clamp(limit, 1, kMaxScanLimit)});
  std::vector<JobKey> keys;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return keys;
    keys.push_back({stmt->Text(0), static_cast<int32_t>(stmt->Int(1)), stmt->Int(2)});
  }
}

Result<std::vector<RemoteIntent>> SqliteStore::Intents(const std::string& uid) {
  std::lock_guard lock(read_mu_);
  Result<Statement> stmt = reader_->Prepare(
      "SELECT job_uid, cluster, kind, namespace, name, epoch, present, updated_ms, refusal, gate_opened_ms, "
      "gate_refusal, created_ms, hold "
      "FROM remote_intents WHERE job_uid = ?1 ORDER BY cluster, kind");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, uid);
  std::vector<RemoteIntent> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    RemoteIntent i;
    i.job_uid = stmt->Text(0);
    i.cluster = stmt->Text(1);
    i.kind = stmt->Text(2);
    i.ns = stmt->Text(3);
    i.name = stmt->Text(4);
    i.epoch = stmt->Int(5);
    i.present = stmt->Int(6) != 0;
    i.updated_ms = stmt->Int(7);
    i.refusal = stmt->Text(8);
    i.gate_opened_ms = stmt->Int(9);
    i.gate_refusal = stmt->Text(10);
    i.created_ms = stmt->Int(11);
    i.hold = stmt->Text(12);
    out.push_back(std::move(i));
  }
}

Result<std::vector<std::string>> SqliteStore::UidsWithIntents(const std::string& after_uid, int limit) {
  std::lock_guard lock(read_mu_);
  Result<Statement> stmt = reader_->Prepare(kUidsWithIntentsSql);
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, after_uid).Bind(2, int64_t{std::clamp(limit, 1, kMaxScanLimit)});
  return ReadUids(*stmt);
}

// There is no index by cluster (schema 005), because every dispatch write
// would pay for it and this runs only when a cluster's readiness changes.
// The table holds the intents of unfinished jobs only.
Result<std::vector<std::string>> SqliteStore::UidsWithIntentsIn(const std::string& cluster,
                                                                const std::string& after_uid, int limit) {
  std::lock_guard lock(read_mu_);
  Result<Statement> stmt = reader_->Prepare(kUidsWithIntentsInSql);
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, after_uid).Bind(2, cluster).Bind(3, int64_t{std::clamp(limit, 1, kMaxScanLimit)});
  return ReadUids(*stmt);
}

}  // namespace gantry
