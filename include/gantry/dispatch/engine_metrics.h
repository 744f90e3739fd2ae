// EngineMetrics: what the dispatch engine reports, as a seam so the engine
// does not depend on a metrics library (the daemon's ApiMetrics implements
// it with prometheus-cpp).
//
// Thread-safety: implementations must accept calls from any thread.
#pragma once

#include <string>

#include "gantry/common/job_phase.h"

namespace gantry::dispatch {

class EngineMetrics {
 public:
  virtual ~EngineMetrics() = default;
  // One Kubernetes API call; code is the HTTP status, 0 for a transport failure.
  virtual void RemoteCall(const std::string& cluster, const char* verb, int code) = 0;
  // A committed phase change and the ladder step that made it (nominate,
  // lease, owner-lost, evicted, finish, cancel, ...).
  virtual void Transition(JobPhase from, JobPhase to, const std::string& step) = 0;
  // A lease taken: won by the cluster that holds it, lost by each other
  // cluster whose copy had also won admission by then (Plan::lease_losers).
  virtual void Lease(const std::string& cluster, bool won) = 0;
  // Submission to lease, in seconds.
  virtual void Admitted(double seconds) = 0;
  // A guarded write that found the job changed (a lost lease race, or a
  // cancel that arrived meanwhile).
  virtual void WriteConflict() = 0;
  // One reconciler pass over a job that reached Decide, by the ladder step
  // that decided it.
  virtual void Pass(const std::string& step) = 0;
  // Records of finished jobs deleted for their age (jobRecordRetentionSeconds).
  virtual void RecordsExpired(int count) = 0;
};

}  // namespace gantry::dispatch
