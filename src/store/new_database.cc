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

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 || errno != ENOENT;
}

Status Remove(const std::string& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return Status::Ok();
  return Status::Io(fmt::format("remove {}, left by a start that died creating the database: {}", path,
                                std::strerror(errno)));
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

Status CreateNewDatabase(const std::string& path, int64_t now_ms) {
  if (Exists(path) || Exists(path + "-wal")) return Status::Ok();
  const std::string building = path + ".new";
  for (const char* suffix : {"", "-wal", "-shm"}) GANTRY_RETURN_IF_ERROR(Remove(building + suffix));
  GANTRY_RETURN_IF_ERROR(Build(building, now_ms));
  // The last connection closed: SQLite removes a WAL it has copied back.
  // One still there holds what the file lacks, and the rename would leave
  // it behind.
  struct stat wal {};
  if (::stat((building + "-wal").c_str(), &wal) == 0 && wal.st_size > 0) {
    return Status::Io(fmt::format("database {}: its WAL is still there after it closed", building));
  }
  GANTRY_RETURN_IF_ERROR(Remove(building + "-wal"));
  GANTRY_RETURN_IF_ERROR(Remove(building + "-shm"));
  GANTRY_RETURN_IF_ERROR(Sync(building, false));
  if (::rename(building.c_str(), path.c_str()) != 0) {
    return Status::Io(fmt::format("rename {} to {}: {}", building, path, std::strerror(errno)));
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  GANTRY_RETURN_IF_ERROR(Sync(dir.empty() ? "." : dir, true));
  spdlog::info("store: created database {}", path);
  return Status::Ok();
}

}  // namespace gantry
