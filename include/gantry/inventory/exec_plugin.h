// ExecPlugin: the bearer token of a kubeconfig user whose credentials come
// from an exec plugin (see exec_credential.h): the plugin is run when a token
// is needed and none is cached, and its token is reused until it is due for
// renewal or the cluster refuses it.
//
// When the plugin runs: on the first Token(); again kExecRefreshBeforeMs
// before the token's expirationTimestamp (or at half its life, for a short
// one); and after Invalidate() with the current token (the cluster answered
// 401). A token without an expiry is kept until it is refused.
//
// Bounds, so a broken plugin cannot fork-storm the daemon: one run at a time
// (other callers wait for its outcome instead of starting their own, unless
// the token being renewed has not expired: they go on with it); a run
// is killed at options.timeout; after a failed run, Token() returns that
// failure without running the plugin again for kExecRetryAfterFailureMs
// (still handing out the last token while it has not expired), and a token
// the cluster refuses within that long of its issue counts as a failure.
//
// Messages start "exec plugin <command>: " and never hold a token or the
// plugin's stdout; a failed run adds the first line of its stderr.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "gantry/common/clock.h"
#include "gantry/common/status.h"
#include "gantry/common/stop_signal.h"
#include "gantry/inventory/exec_credential.h"

namespace gantry::inventory {

// How long a plugin may run before it is killed. `aws eks get-token` takes
// about a second and a cold `gke-gcloud-auth-plugin` a few; a request to the
// cluster that has no unexpired token to go on with waits for the run, so a
// plugin stuck on the network must not hold it up for longer.
inline constexpr std::chrono::milliseconds kExecTimeout{30'000};

// A token is renewed this long before its expiry, so that no request
// reaches the cluster with a token that expired on the way: a KubeClient
// call keeps the token it started with through its retries (3 attempts of
// up to 10 s, up to 5 s apart), and the clocks of the daemon and the
// cluster may differ by a few seconds.
inline constexpr int64_t kExecRefreshBeforeMs = 60'000;

// The least time between a failed run and the next one. A run costs a
// process start (a Python CLI: about a second of CPU); this keeps a plugin
// that always fails, or whose tokens the cluster never accepts, to a few
// runs a minute while requests keep asking.
inline constexpr int64_t kExecRetryAfterFailureMs = 10'000;

struct ExecOptions {
  std::chrono::milliseconds timeout = kExecTimeout;  // a run is killed after this
  const Clock* clock = nullptr;  // caching and retry times; nullptr = system clock
};

class ExecPlugin {
 public:
  explicit ExecPlugin(ExecConfig config, ExecOptions options = {});
  ExecPlugin(const ExecPlugin&) = delete;
  ExecPlugin& operator=(const ExecPlugin&) = delete;

  // The cached token, or a new one from a run of the plugin (blocking for
  // at most options.timeout, plus the run in progress another caller waits
  // for). Errors: kNotFound (no such command; the message carries
  // installHint), kDeadlineExceeded, kUnavailable (it failed),
  // kInvalidArgument (it printed no usable ExecCredential), kUnauthenticated
  // (the cluster refused its fresh token), kIo.
  Result<std::string> Token();

  // The cluster answered 401 to a request sent with `token`: drop it if it
  // is the cached one, so the next Token() runs the plugin. A token already
  // replaced is ignored, so any number of requests refused with the same
  // token cause a single new run.
  void Invalidate(const std::string& token);

  // The daemon stops: a run in progress is killed at once, and no later
  // Token() starts one (kUnavailable, unless a cached token still serves).
  void Stop() { stop_.Set(); }

  const ExecConfig& config() const { return config_; }
  int runs() const;  // how many times the plugin was started; for tests

 private:
  // The answer Token() gives without a run, if any. REQUIRES: mu_ held.
  std::optional<Result<std::string>> CachedLocked(int64_t now_ms) const;
  // Whether a token is held and may still be sent, due for renewal or not.
  // REQUIRES: mu_ held.
  bool UnexpiredLocked(int64_t now_ms) const { return !token_.empty() && now_ms < expiry_ms_; }
  // Runs the plugin once and reads its answer. No lock needed.
  Result<ExecCredential> Run() const;
  // "exec plugin <command>: <what>", with `code`.
  Status Error(Code code, std::string_view what) const;

  const ExecConfig config_;
  const ExecOptions options_;
  const SystemClock system_clock_;
  const Clock* const clock_;  // options_.clock or &system_clock_
  StopSignal stop_;

  std::mutex run_mu_;      // held for a whole run: one run at a time
  mutable std::mutex mu_;  // guards the members below; never held during a run
  std::string token_;      // "" = none usable
  int64_t issued_ms_ = 0;  // when token_ was obtained
  int64_t expiry_ms_ = 0;  // token_ must not be used from then on
  int64_t renew_ms_ = 0;   // a new token is fetched from then on
  Status failure_;         // of the last run, while it holds back the next
  int64_t failed_ms_ = 0;
  int runs_ = 0;
};

namespace exec_internal {
// The first non-blank line of a failed run's stderr, as its message shows it:
// one line of printable ASCII, redacted whole and then cut to 200 bytes.
// "[redacted]" replaces a word that looks like a credential (24 or more
// characters mixing upper case, lower case and digits, or 32 or more hex
// digits; not a path), the value of a key=value, and a URL's user
// information and query values. Exposed for tests.
std::string StderrLine(std::string_view err);
}  // namespace exec_internal

}  // namespace gantry::inventory
