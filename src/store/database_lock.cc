#include "gantry/store/database_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gantry {

Result<DatabaseLock> DatabaseLock::Take(const std::string& database_path) {
  const std::string path = database_path + ".lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io(fmt::format("lock file {}: {}", path, std::strerror(errno)));
  DatabaseLock lock(fd);  // closes fd on every return below
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return Status::Io(fmt::format("lock {}: {}", path, std::strerror(errno)));
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    std::string holder = n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Status::Unavailable(
        fmt::format("database {} is in use by another gantry{} (it holds {}): one daemon per data directory",
                    database_path, holder.empty() ? "" : " (pid " + holder + ")", path));
  }
  const std::string mine = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) < 0) {
    return Status::Io(fmt::format("lock file {}: {}", path, std::strerror(errno)));
  }
  (void)::fchmod(fd, 0600);
  return lock;
}

DatabaseLock& DatabaseLock::operator=(DatabaseLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DatabaseLock::~DatabaseLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace gantry
