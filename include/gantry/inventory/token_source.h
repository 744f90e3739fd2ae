// TokenSource: the bearer token for one cluster, either fixed (kubeconfig
// `token`), read from a file (`tokenFile`) that may be rotated underneath us,
// as projected service-account tokens are, or printed by an exec credential
// plugin (`exec`; see ExecPlugin for when it runs and what it caches).
//
// A file source re-reads the file whenever its modification time or size
// differs from the last read (one stat per call; cheap next to a TLS request).
// If a re-read fails (the file is briefly missing during a rotation), the last
// good token is still returned; the first read has nothing to fall back on.
// Surrounding whitespace is trimmed, as client-go does.
//
// A request the cluster refuses with 401 hands its token back to
// Invalidate(): an exec plugin is then run again; a fixed token or a file
// has nothing better to offer and ignores it.
//
// Secrecy: a token is never put into a Status message or a log line, and this
// class has no printer. Error messages name the file or the plugin, never
// the token.
//
// Thread-safety: every method may be called from any thread (internally
// locked).
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "gantry/common/status.h"
#include "gantry/inventory/exec_plugin.h"

namespace gantry::inventory {

// What makes token unfit to send as "Authorization: Bearer <token>", or ""
// when it is fit: a line break or another control character (a token file of
// two lines would put a header of its own into every request), or a space
// inside it. Names no character of the token.
std::string BearerTokenProblem(std::string_view token);
// token without the spaces, tabs and line breaks around it, as a fixed
// token or a token file is read (client-go trims them too).
std::string TrimToken(std::string_view token);

class TokenSource {
 public:
  static std::shared_ptr<TokenSource> Static(std::string token);
  static std::shared_ptr<TokenSource> FromFile(std::string path);
  static std::shared_ptr<TokenSource> FromExec(ExecConfig config, ExecOptions options = {});

  TokenSource(const TokenSource&) = delete;
  TokenSource& operator=(const TokenSource&) = delete;

  // The current token. kIo / kInvalidArgument (file path only in the message)
  // when the file cannot be read or is empty and no earlier token exists;
  // for a plugin, the errors of ExecPlugin::Token().
  Result<std::string> Token();

  // The cluster answered 401 to `token` (see ExecPlugin::Invalidate).
  void Invalidate(const std::string& token);

  // The daemon stops: a plugin's run in progress ends at once, and none
  // starts after (ExecPlugin::Stop). Nothing for a fixed token or a file.
  void Stop();

  // Whether `other` hands out the same tokens without asking either: the
  // same fixed token, the same file (re-read on rotation), or a plugin with
  // the same configuration. Never reads a file or runs a plugin.
  bool SameSource(const TokenSource& other) const;

  // The token file, or "" for a fixed token or a plugin. Safe to log.
  const std::string& path() const { return path_; }
  // The plugin's configuration, or nullptr. Safe to log but for env values.
  const ExecConfig* exec() const { return exec_ ? &exec_->config() : nullptr; }
  // How many times the file was (re)read successfully; for tests and metrics.
  int reads() const;
  // Who the token is for ("cluster c1"), put before its log lines.
  void set_owner(std::string owner);
  // Why the file, rotated, is not read (its token read before is sent
  // meanwhile); "" while the file holds a token. For gantry clusters.
  std::string problem() const;

 private:
  TokenSource(std::string token, std::string path);
  Status Reload();  // REQUIRES: mu_ held

  const std::string path_;
  std::unique_ptr<ExecPlugin> exec_;  // set by FromExec before sharing; answers Token()
  mutable std::mutex mu_;
  std::string token_;
  std::filesystem::file_time_type mtime_{};
  std::uintmax_t size_ = 0;
  bool loaded_ = false;
  int reads_ = 0;
  std::string owner_;
  // Apart from mu_, which a read of the file holds: the fleet asks for it
  // under its own lock, which must not wait on a slow mount.
  mutable std::mutex problem_mu_;
  std::string problem_;
};

}  // namespace gantry::inventory
