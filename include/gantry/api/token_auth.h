// TokenAuth: who is calling, and which namespaces they may use.
//
// Tokens come from a YAML file (see config/tokens.example.yaml): one entry per
// token with a subject, the SHA-256 of the token (or, discouraged, the token
// itself) and the namespaces it may act on ("*" = admin). Bearer tokens are
// compared by their SHA-256, so the file need not hold secrets and tokens
// never reach a log.
//
// With no tokens file, only loopback clients are accepted (as an anonymous
// admin); the daemon warns about this at start.
//
// Thread-safety: Authenticate from any thread; Reload swaps the table
// atomically (in-flight requests keep the table they started with).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "gantry/common/status.h"
#include "gantry/http/message.h"

namespace gantry::api {

struct Principal {
  std::string subject;
  bool admin = false;
  std::set<std::string> namespaces;  // ignored when admin
  // The token's cap on what its jobs may preempt (tokens file maxPriority):
  // spec.priority at most this, and a WorkloadPriorityClass only one of
  // priority_classes (whose values are the worker clusters'). Unset: none.
  std::optional<int32_t> max_priority;
  std::set<std::string> priority_classes;

  bool MayUse(const std::string& ns) const { return admin || namespaces.count(ns) > 0; }
};

class TokenAuth {
 public:
  // path "" = no tokens file (loopback-only mode).
  static Result<std::unique_ptr<TokenAuth>> Load(const std::string& path);
  // Re-reads the file. On error the old table stays and the error is returned.
  Status Reload();

  // kUnauthenticated without a valid token, kPermissionDenied for a
  // non-loopback client when no tokens file is configured.
  Result<Principal> Authenticate(const http::Request& request) const;
  bool open_mode() const { return path_.empty(); }
  std::size_t size() const;

  // Lower-case hex SHA-256 of a token, as written in the tokens file.
  static std::string Sha256Hex(const std::string& token);

 private:
  using Table = std::unordered_map<std::string, Principal>;  // sha256 hex -> principal
  static Result<std::shared_ptr<const Table>> ReadFile(const std::string& path);

  std::string path_;
  mutable std::mutex mu_;
  std::shared_ptr<const Table> table_;
};

}  // namespace gantry::api
