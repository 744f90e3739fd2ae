// Helpers shared by the test suites: temporary directories that clean up,
// waiting on a condition with a deadline (never a bare sleep), free ports.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace gantry::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Polls cond every few milliseconds until it is true or the deadline passes.
// Returns cond's last value. Polling with a deadline is how tests wait for
// another process; the poll interval is not a correctness assumption.
bool WaitFor(const std::function<bool()>& cond,
             std::chrono::milliseconds deadline = std::chrono::seconds(10));

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
// WriteFile, then mode 0755: a script a test runs (e.g. a credential plugin).
void WriteExecutable(const std::string& path, const std::string& content);

}  // namespace gantry::testing
