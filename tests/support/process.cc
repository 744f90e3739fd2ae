#include "process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "test_support.h"

extern char** environ;

namespace gantry::testing {
namespace {

std::atomic<int> g_counter{0};

std::vector<std::string> MergedEnv(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (!extra.count(key)) env.push_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

Process::Process(std::vector<std::string> argv, const std::string& log_dir,
                 std::map<std::string, std::string> extra_env) {
  int n = g_counter++;
  out_path_ = log_dir + "/proc" + std::to_string(n) + ".out";
  err_path_ = log_dir + "/proc" + std::to_string(n) + ".err";
  std::vector<std::string> env = MergedEnv(extra_env);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    // Dies with the test process: one that aborts (a crash, or Catch's own
    // assertion while it prints a failure) leaves no daemon or simulator
    // running. Every Process is started from the test's main thread, whose
    // end is the process's.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the test ended before prctl
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> args, envp;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0 && Running()) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(5));
  }
}

bool Process::Running() {
  if (exited_) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    status_ = st;
    return false;
  }
  return true;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

int Process::Wait(std::chrono::milliseconds deadline) {
  WaitFor([&] { return !Running(); }, deadline);
  if (!exited_) return -1;
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

std::string Process::Stdout() const { return ReadFile(out_path_); }
std::string Process::Stderr() const { return ReadFile(err_path_); }

RunResult Run(std::vector<std::string> argv, std::map<std::string, std::string> extra_env,
              const std::string& stdin_text) {
  TempDir dir;
  std::string in_path = dir.File("stdin");
  WriteFile(in_path, stdin_text);
  RunResult result;
  {
    // Reuse Process for the plumbing, but with stdin from a file.
    std::vector<std::string> sh = {"/bin/sh", "-c", "exec \"$@\" < \"$GANTRY_TEST_STDIN\"", "sh"};
    sh.insert(sh.end(), argv.begin(), argv.end());
    extra_env["GANTRY_TEST_STDIN"] = in_path;
    Process p(sh, dir.path(), extra_env);
    result.code = p.Wait(std::chrono::seconds(30));
    result.out = p.Stdout();
    result.err = p.Stderr();
  }
  return result;
}

}  // namespace gantry::testing
