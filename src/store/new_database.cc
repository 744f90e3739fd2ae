#include "new_database.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/store/sqlite_connection.h"
#include "migrator.h"
#include "schema_migrations.h"

namespace gantry {
namespace {

// Beside the path, under a name no operator would give a copy of theirs.
constexpr const char* kBuildingSuffix = ".gantry-creating";

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 || errno != ENOENT;
}

// Removes what a start that died building the database left, saying so.
Status Remove(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();  // not there
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::Io(fmt::format("remove {}, left by a start that died creating the database: {}", path,
                                  std::strerror(errno)));
  }
  spdlog::warn("store: removed {} ({} bytes), left by a start that died creating the database", path,
               static_cast<int64_t>(st.st_size));
  return Status::Ok();
}

// fsync of a file or directory by its path.
Status Sync(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return Status::Io(fmt::format("open {} to sync it: {}", path, std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::Io(fmt::format("fsync {}: {}", path, std::strerror(err)));
  return Status::Ok();
}

// Every migration applied to `building`, its WAL copied back into the file
// and gone once the connection closes.
Status Build(const std::string& building, int64_t now_ms) {
  Result<std::unique_ptr<SqliteConnection>> conn = SqliteConnection::Open(building, {});
  if (!conn.ok()) return conn.status();
  Result<int> migrated = MigrateSchema(**conn, EmbeddedMigrations(), now_ms);
  if (!migrated.ok()) return migrated.status();
  Result<Statement> checkpoint = (*conn)->Prepare("PRAGMA wal_checkpoint(TRUNCATE)");
  if (!checkpoint.ok()) return checkpoint.status();
  Result<bool> row = checkpoint->Step();
  if (!row.ok()) return row.status();
  if (!*row || checkpoint->Int(0) != 0) {
    return Status::Io(fmt::format("database {}: its new WAL could not be copied back into it", building));
  }
  return Status::Ok();
}

}  // namespace

bool WalHoldsPages(const std::string& path) {
  struct stat wal {};
  return ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 32;
}

Status CreateNewDatabase(const std::string& path, int64_t now_ms) {
  if (Exists(path)) return Status::Ok();
  if (WalHoldsPages(path)) {
    // SQLite would replay it over a new, empty file: part of an old
    // database, or pages it cannot place.
    return Status::Corruption(fmt::format(
        "database {} is missing, but its {}-wal is there: restore {}, or, to start with no jobs, remove {}-wal "
        "and {}-shm too",
        path, path, path, path, path));
  }
  const std::string building = path + kBuildingSuffix;
  for (const char* suffix : {"", "-wal", "-shm"}) GANTRY_RETURN_IF_ERROR(Remove(building + suffix));
  spdlog::info("store: creating database {} (built as {}, renamed into place once complete)", path, building);
  GANTRY_RETURN_IF_ERROR(Build(building, now_ms));
  // The last connection closed: SQLite removes a WAL it has copied back.
  // One still there holds what the file lacks, and the rename would leave
  // it behind.
  struct stat wal {};
  if (::stat((building + "-wal").c_str(), &wal) == 0 && wal.st_size > 0) {
    return Status::Io(fmt::format("database {}: its WAL is still there after it closed", building));
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    if (::unlink((building + suffix).c_str()) != 0 && errno != ENOENT) {
      return Status::Io(fmt::format("remove {}{}: {}", building, suffix, std::strerror(errno)));
    }
  }
  GANTRY_RETURN_IF_ERROR(Sync(building, false));
  if (::rename(building.c_str(), path.c_str()) != 0) {
    return Status::Io(fmt::format("rename {} to {}: {}", building, path, std::strerror(errno)));
  }
  // The rename is done: a directory that cannot be synced only leaves it
  // to the next flush of the file system.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (Status synced = Sync(dir.empty() ? "." : dir, true); !synced.ok()) {
    spdlog::warn("store: {} is in place, but its directory could not be synced: {}", path, synced.message());
  }
  return Status::Ok();
}

}  // namespace gantry
