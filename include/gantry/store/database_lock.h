// DatabaseLock: one daemon per database. An exclusive flock on
// "<database>.lock" (mode 0600, holding the holder's pid), taken before the
// database is opened and held until the store is gone; the kernel lets go
// of it when the process dies, SIGKILL included. A second `gantry serve` on
// the same data directory is refused at start, before it migrates or acts
// on the fleet, instead of running a second engine beside the first.
#pragma once

#include <string>

#include "gantry/common/status.h"

namespace gantry {

class DatabaseLock {
 public:
  // Takes the lock, or fails (kUnavailable) naming the holder's pid.
  static Result<DatabaseLock> Take(const std::string& database_path);

  DatabaseLock() = default;
  DatabaseLock(DatabaseLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DatabaseLock& operator=(DatabaseLock&& other) noexcept;
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;
  ~DatabaseLock();

 private:
  explicit DatabaseLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gantry
