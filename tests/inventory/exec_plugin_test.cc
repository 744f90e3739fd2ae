// ExecPlugin with real plugin processes: small /bin/sh scripts written into
// a temporary folder. Caching, renewal and retry times run on a FakeClock;
// only the run deadline is real time (it kills a real process).
#include "gantry/inventory/exec_plugin.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <latch>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "test_pki.h"
#include "test_support.h"

namespace gantry::inventory {
namespace {

using gantry::testing::ReadFile;
using gantry::testing::TempDir;
using gantry::testing::WaitFor;
using gantry::testing::WriteExecutable;
using gantry::testing::WriteFile;

// Counts its runs (file `runs`), waits while the file `hold` exists,
// records what it was given, then fails if
// the file `fail` exists, else prints an ExecCredential whose token names
// the run ("token-1", ...), with $EXPIRY as its expirationTimestamp if set.
// clang-format off
constexpr const char* kPlugin = R"sh(#!/bin/sh
dir=$(dirname "$0")
n=$(($(cat "$dir/runs" 2>/dev/null || echo 0) + 1))
echo "$n" > "$dir/runs"
while [ -e "$dir/hold" ]; do sleep 0.01; done
printf '%s' "$KUBERNETES_EXEC_INFO" > "$dir/info"
printf '%s\n' "$@" > "$dir/args"
printf '%s|%s|%s' "$GANTRY_EXEC_A" "$GANTRY_EXEC_B" "${PATH:+has-path}" > "$dir/env"
if [ -t 0 ]; then tty=terminal; else tty=no-terminal; fi
printf '%s%s' "$tty" "$(cat)" > "$dir/stdin"
if [ -e "$dir/fail" ]; then
  echo "error: the plugin failed on purpose" >&2
  echo "second line" >&2
  exit 3
fi
extra=""
if [ -n "$EXPIRY" ]; then extra=",\"expirationTimestamp\":\"$EXPIRY\""; fi
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"token-%s"%s}}\n' \
  "${API:-client.authentication.k8s.io/v1}" "$n" "$extra"
)sh";
// clang-format on

constexpr int64_t kMinute = 60'000;

// kPlugin in a fresh folder, and what it left there.
struct Plugin {
  TempDir dir;
  Plugin() { WriteExecutable(Path(), kPlugin); }
  std::string Path() const { return dir.File("plugin"); }
  int Runs() const {
    const std::string text = ReadFile(dir.File("runs"));
    return text.empty() ? 0 : std::stoi(text);
  }
  void Fail(bool fail) const {
    if (fail) {
      WriteFile(dir.File("fail"), "");
    } else {
      std::filesystem::remove(dir.File("fail"));
    }
  }
  ExecConfig Config(std::vector<std::pair<std::string, std::string>> env = {}) const {
    ExecConfig config;
    config.api_version = std::string(kExecApiV1);
    config.command = Path();
    config.interactive_mode = "Never";
    config.env = std::move(env);
    return config;
  }
};

// A plugin whose whole body is `body`, run once.
Result<std::string> RunScript(const TempDir& dir, const std::string& body,
                              ExecOptions options = {}) {
  WriteExecutable(dir.File("script"), "#!/bin/sh\n" + body);
  ExecConfig config;
  config.api_version = std::string(kExecApiV1);
  config.command = dir.File("script");
  config.interactive_mode = "Never";
  return ExecPlugin(config, options).Token();
}

int OpenDescriptors() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++count;
  }
  return count;
}

// Whether `pid` is gone: reaped, or (a grandchild handed to init) dead.
bool Gone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

// A plugin whose tokens expire 15 minutes after the fake clock's start.
struct FifteenMinuteTokens {
  Plugin plugin;
  FakeClock clock;
  const int64_t expiry = clock.NowMillis() + 15 * kMinute;
  ExecPlugin exec{plugin.Config({{"EXPIRY", FormatRfc3339(expiry)}}), {.clock = &clock}};
};

TEST_CASE_METHOD(FifteenMinuteTokens, "Exec plugin: the token is reused until it is due for renewal", "[inventory][exec]") {
  CHECK(*exec.Token() == "token-1");
  CHECK(*exec.Token() == "token-1");
  clock.Set(expiry - kExecRefreshBeforeMs - 1'000);
  CHECK(*exec.Token() == "token-1");
  CHECK(plugin.Runs() == 1);

  clock.Set(expiry - kExecRefreshBeforeMs + 1'000);  // due: renewed before it expires
  CHECK(*exec.Token() == "token-2");
  CHECK(plugin.Runs() == 2);
  CHECK(exec.runs() == 2);

  // The plugin keeps printing the same time, now past: refused, token unquoted.
  clock.Set(expiry + 1'000);
  Result<std::string> expired = exec.Token();
  REQUIRE_FALSE(expired.ok());
  CHECK_THAT(expired.status().message(),
             Catch::Matchers::Contains("expirationTimestamp has passed"));
  CHECK_THAT(expired.status().message(), !Catch::Matchers::Contains("token-3"));
}

TEST_CASE_METHOD(FifteenMinuteTokens, "Exec plugin: while a renewal runs, other callers go on with the unexpired token",
          "[inventory][exec]") {
  REQUIRE(*exec.Token() == "token-1");
  clock.Set(expiry - kExecRefreshBeforeMs + 1'000);  // due for renewal, not expired

  WriteFile(plugin.dir.File("hold"), "");
  std::string renewed;
  std::thread renewer([&] {
    Result<std::string> token = exec.Token();
    renewed = token.ok() ? *token : token.status().message();
  });
  REQUIRE(WaitFor([&] { return plugin.Runs() == 2; }, std::chrono::seconds(10)));  // the run holds
  CHECK(*exec.Token() == "token-1");  // not held up by the run
  std::filesystem::remove(plugin.dir.File("hold"));
  renewer.join();
  CHECK(renewed == "token-2");
  CHECK(*exec.Token() == "token-2");
  CHECK(plugin.Runs() == 2);
}

TEST_CASE("Exec plugin: a short-lived token is renewed at half its life", "[inventory][exec]") {
  Plugin plugin;
  FakeClock clock;
  const int64_t expiry =
      clock.NowMillis() + kExecRefreshBeforeMs;  // lives less than twice the margin
  ExecPlugin exec(plugin.Config({{"EXPIRY", FormatRfc3339(expiry)}}), {.clock = &clock});
  CHECK(*exec.Token() == "token-1");
  clock.Advance(kExecRefreshBeforeMs / 2 - 1'000);
  CHECK(*exec.Token() == "token-1");
  clock.Advance(2'000);
  CHECK(*exec.Token() == "token-2");
}

TEST_CASE("Exec plugin: a token without expiry is kept until the cluster refuses it",
          "[inventory][exec]") {
  Plugin plugin;
  FakeClock clock;
  ExecPlugin exec(plugin.Config(), {.clock = &clock});
  CHECK(*exec.Token() == "token-1");
  clock.Advance(24 * 60 * kMinute);
  CHECK(*exec.Token() == "token-1");
  exec.Invalidate("token-0");  // not the current token: ignored
  CHECK(*exec.Token() == "token-1");
  CHECK(plugin.Runs() == 1);

  exec.Invalidate("token-1");  // a 401
  CHECK(*exec.Token() == "token-2");
  CHECK(plugin.Runs() == 2);
}

TEST_CASE("Exec plugin: concurrent 401s with the same token cause one run", "[inventory][exec]") {
  Plugin plugin;
  FakeClock clock;
  ExecPlugin exec(plugin.Config(), {.clock = &clock});
  REQUIRE(*exec.Token() == "token-1");
  clock.Advance(kExecRetryAfterFailureMs);  // not refused as soon as it was issued

  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      exec.Invalidate("token-1");
      Result<std::string> token = exec.Token();
      got[i] = token.ok() ? *token : token.status().message();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& token : got) CHECK(token == "token-2");
  CHECK(plugin.Runs() == 2);
}

TEST_CASE("Exec plugin: a token refused as soon as it is issued holds the plugin back",
          "[inventory][exec]") {
  Plugin plugin;
  FakeClock clock;
  ExecPlugin exec(plugin.Config(), {.clock = &clock});
  REQUIRE(*exec.Token() == "token-1");
  exec.Invalidate("token-1");
  Result<std::string> held = exec.Token();
  REQUIRE_FALSE(held.ok());
  CHECK(held.status().code() == Code::kUnauthenticated);
  CHECK_THAT(held.status().message(),
             Catch::Matchers::StartsWith("exec plugin " + plugin.Path() +
                                         ": the cluster refused the token it had just printed"));
  CHECK_THAT(held.status().message(), !Catch::Matchers::Contains("token-1"));
  CHECK(plugin.Runs() == 1);

  clock.Advance(kExecRetryAfterFailureMs);
  CHECK(*exec.Token() == "token-2");
}

TEST_CASE(
    "Exec plugin: a failed run reports its exit code and first stderr line, once per interval",
    "[inventory][exec]") {
  Plugin plugin;
  plugin.Fail(true);
  FakeClock clock;
  ExecPlugin exec(plugin.Config(), {.clock = &clock});
  const std::string expected =
      "exec plugin " + plugin.Path() + ": exited with code 3: error: the plugin failed on purpose";
  Result<std::string> failed = exec.Token();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == Code::kUnavailable);
  CHECK(failed.status().message() == expected);

  clock.Advance(kExecRetryAfterFailureMs - 1);
  Result<std::string> again = exec.Token();  // the same error, without a run
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message() == expected);
  CHECK(plugin.Runs() == 1);

  clock.Advance(1);
  CHECK_FALSE(exec.Token().ok());
  CHECK(plugin.Runs() == 2);

  plugin.Fail(false);
  clock.Advance(kExecRetryAfterFailureMs);
  CHECK(*exec.Token() == "token-3");
}

TEST_CASE("Exec plugin: a stderr line keeps its words and loses what looks like a credential", "[inventory][exec]") {
  using exec_internal::StderrLine;
  CHECK(StderrLine("\n  error: could not refresh SSO session for profile ml-prod\nsecond line") ==
        "error: could not refresh SSO session for profile ml-prod");
  CHECK(StderrLine("refresh failed; token=eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9 rejected") ==
        "refresh failed; token=[redacted] rejected");
  CHECK(StderrLine("bad key AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG") == "bad key [redacted]");
  // Long, but a path, a URL or all one case: kept, they are what an operator needs.
  CHECK(StderrLine("open /etc/gantry/credentials/provider-config-2024.json: denied") ==
        "open /etc/gantry/credentials/provider-config-2024.json: denied");
  CHECK(StderrLine("GET https://sts.eu-central-1.amazonaws.com/Token2024: 403") ==
        "GET https://sts.eu-central-1.amazonaws.com/Token2024: 403");
  // A URL loses its user information and its query's values.
  CHECK(StderrLine("POST https://admin:hunter2@idp.example.com/oauth/token?grant=x&X-Amz-Security-Token=abc: 400") ==
        "POST https://[redacted]@idp.example.com/oauth/token?grant=[redacted]&X-Amz-Security-Token=[redacted] 400");
  // key=value: the value alone; hex secrets too.
  CHECK(StderrLine("--secret=0123456789abcdef0123456789abcdef0123 refused") == "--secret=[redacted] refused");
  // Whatever the value looks like: short passwords, kubeadm's bootstrap tokens.
  CHECK(StderrLine("login failed: password=hunter2") == "login failed: password=[redacted]");
  CHECK(StderrLine("join token=abcdef.0123456789abcdef refused") == "join token=[redacted] refused");
  // Redacted before the line is cut: a secret across the cut leaves nothing of itself.
  const std::string secret = "Zq8" + std::string(40, 'x') + "Kp9vQ";
  const std::string cut = StderrLine(std::string(190, 'a') + " " + secret);
  CHECK(cut.find("Zq8") == std::string::npos);
  CHECK(cut.size() <= 200);
  CHECK(StderrLine("read ~/Config/Profile2024/credentials.yaml failed") ==
        "read ~/Config/Profile2024/credentials.yaml failed");
  CHECK(StderrLine("   \n\t") == "");
  // After what names a credential, whatever it looks like; API keys in one case, OpenShift's tokens.
  CHECK(StderrLine("sent Authorization: Bearer abc123 and was refused") ==
        "sent Authorization: [redacted] [redacted] and was refused");
  CHECK(StderrLine("curl -H bearer hunter2 failed") == "curl -H bearer [redacted] failed");
  CHECK(StderrLine("secret: s3cr3t password: pw") == "secret: [redacted] password: [redacted]");
  CHECK(StderrLine("get token: exit status 1") == "get token: exit status 1");
  CHECK(StderrLine("key sk-proj-abcdef0123456789abcdef0123456789abcdef0123456789 expired") == "key [redacted] expired");
  CHECK(StderrLine("request 123e4567-e89b-12d3-a456-426614174000 failed") ==
        "request 123e4567-e89b-12d3-a456-426614174000 failed");
  CHECK(StderrLine("login sha256~AbC_dEf refused") == "login [redacted] refused");
  // A long word in one case that names a file or a host is kept.
  CHECK(StderrLine("read provider-config-2024-final-version-two.json failed") ==
        "read provider-config-2024-final-version-two.json failed");
  CHECK(StderrLine("refresh token for profile ml-prod failed") == "refresh token for profile ml-prod failed");
}

TEST_CASE_METHOD(FifteenMinuteTokens, "Exec plugin: a failed renewal keeps handing out the token until it expires",
          "[inventory][exec]") {
  REQUIRE(*exec.Token() == "token-1");
  plugin.Fail(true);
  clock.Set(expiry - kExecRefreshBeforeMs / 2);  // due for renewal
  CHECK(*exec.Token() == "token-1");             // the run failed; the token still serves
  CHECK(*exec.Token() == "token-1");
  CHECK(plugin.Runs() == 2);

  clock.Set(expiry);  // expired, and past the retry interval
  Result<std::string> failed = exec.Token();
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.status().message(), Catch::Matchers::Contains("exited with code 3"));
  CHECK(plugin.Runs() == 3);
}

TEST_CASE("Exec plugin: it gets KUBERNETES_EXEC_INFO, its args and env, and no terminal",
          "[inventory][exec]") {
  Plugin plugin;
  ExecConfig config = plugin.Config({{"GANTRY_EXEC_A", "one"},
                                     {"GANTRY_EXEC_B", "first"},
                                     {"GANTRY_EXEC_B", "second"},
                                     {"API", std::string(kExecApiV1beta1)}});
  config.api_version = std::string(kExecApiV1beta1);
  config.args = {"eks", "get-token", "--cluster-name", "gpu eu 1", ""};
  const std::string ca = testing::MakeSelfSigned("cluster-ca").cert_pem;
  config.cluster = ExecClusterInfo{"https://10.0.0.1:6443", "api.internal", ca, false};
  ExecPlugin exec(config);
  REQUIRE(*exec.Token() == "token-1");

  const nlohmann::json info = nlohmann::json::parse(ReadFile(plugin.dir.File("info")));
  CHECK(info["apiVersion"] == kExecApiV1beta1);
  CHECK(info["kind"] == "ExecCredential");
  CHECK(info["spec"]["interactive"] == false);
  CHECK(info["spec"]["cluster"]["server"] == "https://10.0.0.1:6443");
  CHECK(info["spec"]["cluster"]["tls-server-name"] == "api.internal");
  CHECK(info["spec"]["cluster"]["certificate-authority-data"] == testing::Base64(ca));
  CHECK(ReadFile(plugin.dir.File("args")) == "eks\nget-token\n--cluster-name\ngpu eu 1\n\n");
  CHECK(ReadFile(plugin.dir.File("env")) == "one|second|has-path");  // the daemon's PATH too
  CHECK(ReadFile(plugin.dir.File("stdin")) == "no-terminal");        // stdin is /dev/null
}

TEST_CASE("Exec plugin: a command not found names its installHint", "[inventory][exec]") {
  FakeClock clock;
  ExecConfig config;
  config.api_version = std::string(kExecApiV1);
  config.command = "gantry-test-no-such-plugin";
  config.interactive_mode = "Never";
  config.install_hint = "Install it with:\n    apt-get install gantry-test-plugin\n";
  ExecPlugin in_path(config, {.clock = &clock});
  Result<std::string> missing = in_path.Token();
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK(missing.status().message() ==
        "exec plugin gantry-test-no-such-plugin: not found in PATH; Install it with: apt-get "
        "install gantry-test-plugin");
  CHECK_FALSE(in_path.Token().ok());
  CHECK(in_path.runs() == 1);  // held back, not tried again at once

  TempDir tmp;
  config.command = tmp.File("absent");
  config.install_hint.clear();
  Result<std::string> absent = ExecPlugin(config).Token();
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.status().message() == "exec plugin " + tmp.File("absent") + ": not found");
}

TEST_CASE("Exec plugin: a hanging plugin is killed at the deadline and reaped",
          "[inventory][exec]") {
  TempDir tmp;
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> hung = RunScript(tmp,
                                       "echo $$ > \"$(dirname \"$0\")/pid\"\n"
                                       "sleep 60 &\n"
                                       "echo $! > \"$(dirname \"$0\")/child\"\n"
                                       "exec sleep 60\n",
                                       {.timeout = std::chrono::milliseconds(200)});
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(hung.ok());
  CHECK(hung.status().code() == Code::kDeadlineExceeded);
  CHECK_THAT(hung.status().message(),
             Catch::Matchers::EndsWith(": still running after 200 ms; killed"));
  CHECK(took < std::chrono::seconds(5));

  const pid_t pid = std::stoi(ReadFile(tmp.File("pid")));
  CHECK(kill(pid, 0) == -1);  // reaped: not even a zombie
  CHECK(waitpid(pid, nullptr, WNOHANG) == -1);
  // What it started in its process group was killed with it.
  const pid_t child = std::stoi(ReadFile(tmp.File("child")));
  CHECK(WaitFor([&] { return Gone(child); }, std::chrono::seconds(5)));
}

// The daemon stops while a plugin hangs on the network: the request that
// waits for its token, and the stop, are not held for the run's 30 s.
TEST_CASE("Exec plugin: a run in progress is killed when the daemon stops, and none starts after",
          "[inventory][exec]") {
  TempDir tmp;
  WriteExecutable(tmp.File("script"), "#!/bin/sh\necho $$ > \"$(dirname \"$0\")/pid\"\nexec sleep 60\n");
  ExecConfig config;
  config.api_version = std::string(kExecApiV1);
  config.command = tmp.File("script");
  config.interactive_mode = "Never";
  FakeClock clock;
  ExecPlugin exec(config, {.timeout = std::chrono::seconds(30), .clock = &clock});
  Result<std::string> token = Status::Unavailable("not run");
  std::thread caller([&] { token = exec.Token(); });
  REQUIRE(WaitFor([&] { return !ReadFile(tmp.File("pid")).empty(); }, std::chrono::seconds(10)));
  const auto stopped_at = std::chrono::steady_clock::now();
  exec.Stop();
  caller.join();
  CHECK(std::chrono::steady_clock::now() - stopped_at < std::chrono::seconds(5));
  REQUIRE_FALSE(token.ok());
  CHECK(token.status().code() == Code::kUnavailable);
  CHECK_THAT(token.status().message(), Catch::Contains("the daemon is stopping"));
  const pid_t pid = std::stoi(ReadFile(tmp.File("pid")));
  CHECK(kill(pid, 0) == -1);  // killed and reaped

  // Past the hold after a failed run, a caller gets no new run.
  std::filesystem::remove(tmp.File("pid"));
  clock.Advance(kExecRetryAfterFailureMs + 1);
  Result<std::string> later = exec.Token();
  REQUIRE_FALSE(later.ok());
  CHECK_THAT(later.status().message(), Catch::Contains("the daemon is stopping"));
  CHECK_FALSE(std::filesystem::exists(tmp.File("pid")));
}

TEST_CASE("Exec plugin: it inherits no descriptor and none is left behind", "[inventory][exec]") {
  TempDir tmp;
  const int inheritable = open("/dev/null", O_RDONLY);  // no O_CLOEXEC, as a careless library's
  REQUIRE(inheritable >= 3);
  REQUIRE(inheritable < 10);  // dash keeps its script on 10 and up
  const int before = OpenDescriptors();
  CHECK_FALSE(RunScript(tmp, "ls /proc/$$/fd > \"$(dirname \"$0\")/fds\"\nexit 1\n").ok());
  CHECK_FALSE(RunScript(tmp, "exec sleep 60\n", {.timeout = std::chrono::milliseconds(100)}).ok());
  CHECK_FALSE(RunScript(tmp, "head -c 2000000 /dev/zero\n").ok());
  CHECK(OpenDescriptors() == before);
  // The shell's own: 0, 1, 2 and its script (which it keeps on 10 and up).
  std::set<int> fds;
  std::istringstream listing(ReadFile(tmp.File("fds")));
  for (std::string line; std::getline(listing, line);) fds.insert(std::stoi(line));
  CHECK(fds.count(0) + fds.count(1) + fds.count(2) == 3);
  CHECK(std::none_of(fds.begin(), fds.end(), [](int fd) { return fd > 2 && fd < 10; }));
  close(inheritable);
}

TEST_CASE("Exec plugin: what a failed run printed on stdout is never in its error",
          "[inventory][exec]") {
  const std::string secret = "SECRET-exec-token-5a7e";
  TempDir tmp;
  const std::string credential =
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":")" +
      secret + "\"";
  struct Case {
    std::string body, message;
  } cases[] = {
      {"echo '" + secret + "'\n", "its output is not a JSON object"},
      {"echo '" + credential + "}}'\nexit 1\n", "exited with code 1"},
      {"echo '" + credential + R"(,"expirationTimestamp":"2001-01-01T00:00:00Z"}}')" + "\n",
       "expirationTimestamp has passed"},
      {"echo '" + credential + "}}'\nhead -c 2000000 /dev/zero\n",
       "printed more than 1048576 bytes; killed"},
      {"echo '" + credential + "}}'\nkill -TERM $$\n", "ended by signal 15"},
  };
  // The daemon blocks SIGTERM in every thread; the plugin must not inherit that.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  for (const Case& c : cases) {
    INFO(c.body);
    Result<std::string> r = RunScript(tmp, c.body);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Matchers::Contains(c.message));
    CHECK_THAT(r.status().message(), !Catch::Matchers::Contains(secret));
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace
}  // namespace gantry::inventory
