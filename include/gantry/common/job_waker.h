// JobWaker: how the API (and later watch handlers) tell the reconciler that a
// job's desired state changed. The reconciler is level-triggered: a wake-up
// is a hint to look soon, never the only way work is found (it also scans
// the store at start).
#pragma once

#include <string>

namespace gantry {

class JobWaker {
 public:
  virtual ~JobWaker() = default;
  // Thread-safe and non-blocking.
  virtual void Wake(const std::string& job_uid) = 0;
};

}  // namespace gantry
