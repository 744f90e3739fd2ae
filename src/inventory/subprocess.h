// RunSubprocess: runs one short-lived helper program (a credential plugin)
// to completion under a deadline and returns what it printed.
//
// Made for a multithreaded daemon: the child is started with posix_spawn
// (nothing but async-signal-safe work happens between fork and exec), with
// stdin from /dev/null, stdout and stderr on pipes, every other descriptor
// closed, the signal mask emptied and every signal at its default (the
// daemon blocks SIGTERM and SIGHUP in all its threads; a child must not
// inherit that). The child leads a new process group, so a deadline or an
// oversized answer kills the helper and anything it started in one
// kill(-pgid). The child is always reaped before this returns, and every
// descriptor opened here is closed: no zombie, no leaked fd.
//
// Thread-safety: a plain function; any number of threads may run helpers at
// once. It waits for its own child only (never waitpid(-1)).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "gantry/common/status.h"

namespace gantry::inventory::internal {

struct SubprocessSpec {
  // A path (anything with a '/') run as is, or a bare name looked up in PATH.
  std::string command;
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=value", the child's whole environment
  std::chrono::milliseconds deadline{30'000};
  std::size_t max_stdout = 1 << 20;  // more kills the child: End::kStdoutTooLarge
  std::size_t max_stderr = 4 << 10;  // more is read and dropped
  // Readable (a StopSignal's fd): the run is given up, the helper killed
  // (End::kStopped); one readable already starts none. -1: none.
  int stop_fd = -1;
};

struct SubprocessResult {
  enum class End {
    kExited,          // code = exit status
    kSignaled,        // code = the signal that ended it
    kTimedOut,        // still running at the deadline: killed
    kStdoutTooLarge,  // printed more than max_stdout: killed
    kStopped,         // stop_fd became readable: killed (or never started)
  };
  End end = End::kExited;
  int code = 0;
  std::string out;  // at most max_stdout bytes
  std::string err;  // the first max_stderr bytes
};

// kNotFound when the command does not exist (or is not in PATH), kIo for any
// other failure to start it; the message ("not found in PATH", "cannot be
// started: Permission denied") leaves naming the command to the caller.
// Once started, every ending is a SubprocessResult.
Result<SubprocessResult> RunSubprocess(const SubprocessSpec& spec);

}  // namespace gantry::inventory::internal
