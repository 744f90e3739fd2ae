#include "gantry/inventory/exec_plugin.h"
#include "server_url.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "gantry/common/ascii.h"
#include "subprocess.h"

extern char** environ;

namespace gantry::inventory {
namespace {

// The expiry of a token that has none: it is kept until the cluster refuses it.
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// An ExecCredential with a token is a few KiB; more is a broken plugin.
constexpr std::size_t kMaxOutputBytes = 1 << 20;
// Of a failed run's stderr only the first line is reported; this is plenty.
constexpr std::size_t kMaxStderrBytes = 4 << 10;
// Cuts for what goes into a message, which ends up in logs and in the API's
// cluster view: a stderr line, an installHint.
constexpr std::size_t kMaxLineBytes = 200;
constexpr std::size_t kMaxHintBytes = 500;

// `text` made fit for a one-line message: printable ASCII kept, whitespace
// and control characters (a terminal's colour codes) collapsed into single
// spaces, other bytes as '?' (the message must stay valid UTF-8 for the
// API's JSON, and a cut could split a character), at most `limit` bytes.
std::string OneLine(std::string_view text, std::size_t limit) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
      continue;
    }
    if (out.size() >= limit) break;
    out.push_back(u < 0x80 ? c : '?');
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Whether a word looks like a credential: 24 or more characters mixing
// upper case, lower case and digits (tokens, keys, signatures), or 32 or more
// hex digits, where words, paths and names seldom are. Best effort: a plugin
// should not print secrets.
// Also OpenShift's tokens (sha256~...), and 48 or more characters of letters
// and digits, dashes or underscores (API keys such as sk-proj-...; not file
// or host names: no '/' or '.'; longer than UUIDs and request ids).
bool TokenLike(std::string_view word) {
  if (word.starts_with("sha256~") && word.size() > 7) return true;
  if (word.size() < 24) return false;
  if (word.front() == '/' || word.front() == '~' || word.front() == '.') return false;  // a path
  bool upper = false, lower = false, digit = false, hex = true, dotted = false;
  for (const char c : word) {
    upper |= c >= 'A' && c <= 'Z';
    lower |= c >= 'a' && c <= 'z';
    digit |= c >= '0' && c <= '9';
    hex &= (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    dotted |= c == '/' || c == '.';
  }
  return (upper && lower && digit) || (hex && word.size() >= 32 && digit && lower) ||
         (word.size() >= 48 && (upper || lower) && digit && !dotted);
}

// Whether the word after this one is a credential whatever it looks like:
// "Bearer X" (an Authorization header), "password: X". Not "token:", which
// plugins mostly write before what went wrong ("get token: exit status 1").
bool NamesSecret(std::string_view word) {
  std::string w = ToLowerAscii(word);
  if (w == "bearer") return true;
  if (!w.ends_with(':')) return false;
  w.pop_back();
  return w == "password" || w == "secret" || w == "authorization";
}

std::string RedactWord(std::string_view word) {
  if (word.find("://") != std::string_view::npos) return internal::RedactUrl(word);
  // key=value: the value alone may be the secret (token=..., --password=...).
  const std::size_t eq = word.find('=');
  if (eq != std::string_view::npos && eq + 1 < word.size()) return std::string(word.substr(0, eq + 1)) + "[redacted]";
  return TokenLike(word) ? std::string("[redacted]") : std::string(word);
}

std::string WithStderr(std::string what, std::string_view err) {
  const std::string line = exec_internal::StderrLine(err);
  return line.empty() ? what : what + ": " + line;
}

// The daemon's environment with the configured variables and
// KUBERNETES_EXEC_INFO in place of any of the same name. Reading environ
// from any thread is safe because gantry never changes its environment.
std::vector<std::string> PluginEnvironment(const ExecConfig& config) {
  std::map<std::string, std::string, std::less<>> added;
  for (const auto& [name, value] : config.env) added[name] = value;  // the later wins
  added["KUBERNETES_EXEC_INFO"] = ExecRequestJson(config);
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!added.contains(entry.substr(0, entry.find('=')))) env.emplace_back(entry);
  }
  for (const auto& [name, value] : added) env.push_back(name + "=" + value);
  return env;
}

}  // namespace

namespace exec_internal {

std::string StderrLine(std::string_view err) {
  const std::size_t start = err.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "";
  err.remove_prefix(start);
  // Redacted whole, then cut: a cut first could leave a secret's start
  // too short to look like one.
  const std::string line = OneLine(err.substr(0, err.find('\n')), kMaxStderrBytes);
  std::string out;
  std::size_t from = 0;
  bool secret_next = false;
  while (from < line.size()) {  // OneLine left single spaces between words
    const std::size_t to = std::min(line.find(' ', from), line.size());
    const std::string_view word = std::string_view(line).substr(from, to - from);
    if (!out.empty()) out.push_back(' ');
    out += secret_next ? std::string("[redacted]") : RedactWord(word);
    secret_next = NamesSecret(word);
    from = to + 1;
  }
  return OneLine(out, kMaxLineBytes);
}

}  // namespace exec_internal

ExecPlugin::ExecPlugin(ExecConfig config, ExecOptions options)
    : config_(std::move(config)),
      options_(options),
      clock_(options.clock != nullptr ? options.clock : &system_clock_) {}

int ExecPlugin::runs() const {
  std::lock_guard lock(mu_);
  return runs_;
}

Status ExecPlugin::Error(Code code, std::string_view what) const {
  return Status(code, fmt::format("exec plugin {}: {}", config_.command, what));
}

std::optional<Result<std::string>> ExecPlugin::CachedLocked(int64_t now_ms) const {
  if (!token_.empty() && now_ms < renew_ms_) return Result<std::string>(token_);
  if (!failure_.ok() && now_ms - failed_ms_ < kExecRetryAfterFailureMs) {
    if (UnexpiredLocked(now_ms)) return Result<std::string>(token_);
    return Result<std::string>(failure_);
  }
  return std::nullopt;
}

Result<std::string> ExecPlugin::Token() {
  {
    std::lock_guard lock(mu_);
    if (auto cached = CachedLocked(clock_->NowMillis())) return std::move(*cached);
  }
  std::unique_lock run(run_mu_, std::try_to_lock);
  if (!run.owns_lock()) {
    // Another caller is running the plugin. While the token it renews has
    // not expired, this request goes on with it instead of waiting up to
    // the run's timeout (a slow token service would stall every request).
    {
      std::lock_guard lock(mu_);
      if (UnexpiredLocked(clock_->NowMillis())) return token_;
    }
    run.lock();
  }
  {
    // A run that ended while this caller waited for run_mu_ has answered it.
    std::lock_guard lock(mu_);
    if (auto cached = CachedLocked(clock_->NowMillis())) return std::move(*cached);
    ++runs_;
  }
  Result<ExecCredential> fresh = Run();
  std::lock_guard lock(mu_);
  const int64_t now = clock_->NowMillis();
  if (fresh.ok() && fresh->expiry_ms && *fresh->expiry_ms <= now) {
    fresh = Error(Code::kInvalidArgument, "printed a token whose expirationTimestamp has passed");
  }
  if (!fresh.ok()) {
    failure_ = fresh.status();
    failed_ms_ = now;
    if (UnexpiredLocked(now)) return token_;  // the old one still serves
    token_.clear();
    return failure_;
  }
  failure_ = Status::Ok();
  token_ = std::move(fresh->token);
  issued_ms_ = now;
  expiry_ms_ = fresh->expiry_ms.value_or(kNever);
  renew_ms_ = expiry_ms_ == kNever
                  ? kNever
                  : expiry_ms_ - std::min(kExecRefreshBeforeMs, (expiry_ms_ - now) / 2);
  return token_;
}

void ExecPlugin::Invalidate(const std::string& token) {
  std::lock_guard lock(mu_);
  if (token.empty() || token != token_) return;  // already replaced: one new run for many 401s
  token_.clear();
  if (clock_->NowMillis() - issued_ms_ < kExecRetryAfterFailureMs) {
    // Refused as soon as it was issued: an immediate run would most likely
    // get a token the cluster refuses again. Held back as a failed run is.
    failure_ = Error(Code::kUnauthenticated,
                     "the cluster refused the token it had just printed (401); check what "
                     "identity the cluster maps it to");
    failed_ms_ = issued_ms_;
  }
}

Result<ExecCredential> ExecPlugin::Run() const {
  if (stop_.is_set()) return Error(Code::kUnavailable, "given up: the daemon is stopping");
  internal::SubprocessSpec spec;
  spec.command = config_.command;
  spec.argv.push_back(config_.command);
  spec.argv.insert(spec.argv.end(), config_.args.begin(), config_.args.end());
  spec.env = PluginEnvironment(config_);
  spec.deadline = options_.timeout;
  spec.max_stdout = kMaxOutputBytes;
  spec.max_stderr = kMaxStderrBytes;
  spec.stop_fd = stop_.fd();
  Result<internal::SubprocessResult> ran = internal::RunSubprocess(spec);
  if (!ran.ok()) {
    std::string what = ran.status().message();
    if (ran.status().code() == Code::kNotFound && !config_.install_hint.empty()) {
      what += "; " + OneLine(config_.install_hint, kMaxHintBytes);
    }
    return Error(ran.status().code(), what);
  }
  using End = internal::SubprocessResult::End;
  switch (ran->end) {
    case End::kTimedOut:
      return Error(Code::kDeadlineExceeded,
                   fmt::format("still running after {} ms; killed", options_.timeout.count()));
    case End::kStopped:
      return Error(Code::kUnavailable, "given up: the daemon is stopping");
    case End::kStdoutTooLarge:
      return Error(Code::kInvalidArgument,
                   fmt::format("printed more than {} bytes; killed", kMaxOutputBytes));
    case End::kSignaled:
      return Error(Code::kUnavailable,
                   WithStderr(fmt::format("ended by signal {}", ran->code), ran->err));
    case End::kExited:
      if (ran->code != 0) {
        return Error(Code::kUnavailable,
                     WithStderr(fmt::format("exited with code {}", ran->code), ran->err));
      }
      break;
  }
  Result<ExecCredential> credential = ParseExecCredential(ran->out, config_.api_version);
  if (!credential.ok()) return Error(credential.status().code(), credential.status().message());
  return credential;
}

}  // namespace gantry::inventory
