#include "gantry/store/sqlite_connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "wal_write_vfs.h"

namespace gantry {
namespace {

// Owner read/write only: job specs may carry credentials-adjacent data.
constexpr mode_t kFileMode = 0600;

// An existing database that others may read or write (restored from a
// backup as 0644, say) is made private again, and the operator told.
Status KeepPrivate(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return Status::Ok();
  if (::chmod(path.c_str(), kFileMode) != 0) {
    return Status::Io(fmt::format("database {} is open to others (mode {:o}) and cannot be made private: {}", path,
                                  st.st_mode & 0777, std::strerror(errno)));
  }
  spdlog::warn("store: database {} was open to others (mode {:o}): now 0600", path, st.st_mode & 0777);
  return Status::Ok();
}

// Creates path with mode 0600 unless it exists. fchmod makes the mode exact
// whatever the umask (open's mode argument is masked by it).
Status CreateFileIfMissing(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode);
  if (fd < 0) {
    if (errno == EEXIST) return KeepPrivate(path);
    return Status::Io(fmt::format("create database {}: {}", path, std::strerror(errno)));
  }
  Status st;
  if (::fchmod(fd, kFileMode) != 0) {
    st = Status::Io(fmt::format("chmod database {}: {}", path, std::strerror(errno)));
  }
  ::close(fd);
  return st;
}

constexpr int kNewDatabasePageSize = 2048;
// Address space, not memory: the kernel's page cache backs it.
constexpr int64_t kMmapBytes = int64_t{1} << 30;

}  // namespace

Status SqliteStatus(sqlite3* db, int rc, std::string_view context) {
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  // sqlite3_errmsg describes the most recent failure on db; fall back to the
  // generic text for rc when there is no handle.
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message = file != nullptr && *file != '\0'
                            ? fmt::format("sqlite {}: {}: {}", file, context, detail)
                            : fmt::format("sqlite: {}: {}", context, detail);
  switch (rc & 0xff) {  // primary code; extended codes keep it in the low byte
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(std::move(message));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(std::move(message));
    case SQLITE_FULL:
      // Passes once space is freed: unavailable, as a client is told (503),
      // and without the file's path, which a tenant's answer would show.
      return Status::Unavailable(fmt::format("{}: {}; writes are refused until the disk has room again",
                                             kDatabaseFullPrefix, detail));
    case SQLITE_CONSTRAINT:
      return Status::Conflict(std::move(message));
    default:
      return Status::Io(std::move(message));
  }
}

Result<std::unique_ptr<SqliteConnection>> SqliteConnection::Open(
    const std::string& path, const SqliteConnectionOptions& options) {
  if (options.create) GANTRY_RETURN_IF_ERROR(CreateFileIfMissing(path));
  sqlite3* raw = nullptr;
  // No SQLITE_OPEN_CREATE: the file was created above with the right mode, or
  // must already exist.
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  // WAL appends gathered into one write per commit (wal_write_vfs.h); this
  // relies on the synchronous=FULL set below.
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, store_internal::WalWriteVfsName());
  if (rc != SQLITE_OK) {
    std::string detail = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);
    return Status::Io(fmt::format("open database {}: {}", path, detail));
  }
  sqlite3_extended_result_codes(raw, 1);
  std::unique_ptr<SqliteConnection> conn(
      new SqliteConnection(raw, path, options.max_cached_statements));

  GANTRY_RETURN_IF_ERROR(
      conn->Exec(fmt::format("PRAGMA busy_timeout={}", options.busy_timeout_ms)));
  // Only takes effect on a new, empty database (later it is a no-op): every
  // job writes random keys into the uid, name and event indexes, and each
  // such insert rewrites a whole page into the WAL, so smaller pages mean
  // fewer bytes per commit to write and fsync.
  GANTRY_RETURN_IF_ERROR(conn->Exec(fmt::format("PRAGMA page_size={}", kNewDatabasePageSize)));
  // journal_mode answers with the mode in force: anything but "wal" (e.g. a
  // file system without shared memory) means our durability story is off.
  {
    Result<Statement> stmt = conn->Prepare("PRAGMA journal_mode=WAL");
    if (!stmt.ok()) return stmt.status();
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    std::string mode = *row ? stmt->Text(0) : "";
    if (mode != "wal") {
      return Status::Io(fmt::format("database {}: journal_mode is '{}', want 'wal'", path, mode));
    }
  }
  GANTRY_RETURN_IF_ERROR(conn->Exec("PRAGMA synchronous=FULL"));
  // A read transaction that finds the database changed since its last one
  // drops its whole page cache, and with a busy writer that is nearly every
  // read: without a mapping each page is then a pread syscall and a copy.
  // Pages still in the WAL are read with pread either way.
  GANTRY_RETURN_IF_ERROR(conn->Exec(fmt::format("PRAGMA mmap_size={}", kMmapBytes)));
  GANTRY_RETURN_IF_ERROR(conn->Exec("PRAGMA foreign_keys=ON"));
  if (options.query_only) GANTRY_RETURN_IF_ERROR(conn->Exec("PRAGMA query_only=ON"));
  return conn;
}

SqliteConnection::~SqliteConnection() {
  cache_.clear();  // statements must be finalized before the handle closes
  sqlite3_close_v2(db_);
}

Status SqliteConnection::Exec(std::string_view sql) {
  std::string text(sql);  // sqlite3_exec needs a NUL-terminated string
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return Status::Ok();
  return Error(rc, text.substr(0, text.find('\n')));
}

Result<Statement> SqliteConnection::Prepare(std::string_view sql) {
  if (auto it = cache_.find(sql); it != cache_.end()) return Statement(it->second.get(), false);
  bool cache = cache_.size() < max_cached_;
  sqlite3_stmt* raw = nullptr;
  unsigned flags = cache ? SQLITE_PREPARE_PERSISTENT : 0;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), flags, &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    return Error(rc, fmt::format("prepare {}", sql));
  }
  if (raw == nullptr) return Status::Internal(fmt::format("empty SQL: '{}'", sql));
  if (!cache) return Statement(raw, true);
  cache_.emplace(std::string(sql), StmtPtr(raw));
  return Statement(raw, false);
}

Status SqliteConnection::SecureCompanionFiles() const {
  for (const char* suffix : {"-wal", "-shm"}) {
    std::string file = path_ + suffix;
    if (::chmod(file.c_str(), kFileMode) != 0 && errno != ENOENT) {
      return Status::Io(fmt::format("chmod {}: {}", file, std::strerror(errno)));
    }
  }
  return Status::Ok();
}

Status SqliteConnection::Error(int rc, std::string_view what) const {
  return SqliteStatus(db_, rc, what);
}

}  // namespace gantry
