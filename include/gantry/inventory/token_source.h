// TokenSource: the bearer token for one cluster, either fixed (kubeconfig
// `token`) or read from a file (`tokenFile`) that may be rotated underneath us,
// as projected service-account tokens are.
//
// A file source re-reads the file whenever its modification time or size
// differs from the last read (one stat per call; cheap next to a TLS request).
// If a re-read fails (the file is briefly missing during a rotation), the last
// good token is still returned; the first read has nothing to fall back on.
// Surrounding whitespace is trimmed, as client-go does.
//
// Secrecy: a token is never put into a Status message or a log line, and this
// class has no printer. Error messages name the file, never its content.
//
// Thread-safety: Token() may be called from any thread (internally locked).
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "gantry/common/status.h"

namespace gantry::inventory {

class TokenSource {
 public:
  static std::shared_ptr<TokenSource> Static(std::string token);
  static std::shared_ptr<TokenSource> FromFile(std::string path);

  TokenSource(const TokenSource&) = delete;
  TokenSource& operator=(const TokenSource&) = delete;

  // The current token. kIo / kInvalidArgument (file path only in the message)
  // when the file cannot be read or is empty and no earlier token exists.
  Result<std::string> Token();

  // The token file, or "" for a fixed token. Safe to log.
  const std::string& path() const { return path_; }
  // How many times the file was (re)read successfully; for tests and metrics.
  int reads() const;

 private:
  TokenSource(std::string token, std::string path);
  Status Reload();  // REQUIRES: mu_ held

  const std::string path_;
  mutable std::mutex mu_;
  std::string token_;
  std::filesystem::file_time_type mtime_{};
  std::uintmax_t size_ = 0;
  bool loaded_ = false;
  int reads_ = 0;
};

}  // namespace gantry::inventory
