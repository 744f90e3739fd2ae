// Child processes for end-to-end tests: start a real binary with arguments,
// capture its output to files, wait with a deadline, and always clean up
// (the destructor sends SIGKILL to a child that is still running).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace gantry::testing {

class Process {
 public:
  // Starts argv[0] (a path) with argv; stdout/stderr go to files in log_dir.
  // extra_env entries are added to (or override) the inherited environment.
  Process(std::vector<std::string> argv, const std::string& log_dir,
          std::map<std::string, std::string> extra_env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  // Sends sig; returns immediately.
  void Signal(int sig);
  // Waits for exit up to deadline. Returns the exit code, 128+signal for a
  // signal death, or -1 if still running at the deadline.
  int Wait(std::chrono::milliseconds deadline = std::chrono::seconds(10));
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool exited_ = false;
  std::string out_path_, err_path_;
};

// Runs a command to completion (deadline 30 s) and returns exit code and stdout.
struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};
RunResult Run(std::vector<std::string> argv, std::map<std::string, std::string> extra_env = {},
              const std::string& stdin_text = "");

}  // namespace gantry::testing
