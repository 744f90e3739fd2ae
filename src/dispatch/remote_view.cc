#include "gantry/dispatch/remote_view.h"

#include "gantry/dispatch/remote_objects.h"

namespace gantry::dispatch {
namespace {

const char* WorkloadState(const ObservedWorkload& w) {
  if (w.finished) return "Finished";
  if (w.evicted) return "Evicted";
  if (w.admitted) return "Admitted";
  if (w.quota_reserved) return "QuotaReserved";
  if (!w.active) return "Deactivated";
  return "Pending";
}

const char* JobState(const ObservedJob& j) {
  if (j.deleting) return "Deleting";
  switch (j.state) {
    case RemoteJobState::kRunning:
      return "Running";
    case RemoteJobState::kSucceeded:
      return "Succeeded";
    case RemoteJobState::kFailed:
      return "Failed";
    case RemoteJobState::kSuspended:
      break;
  }
  return "Suspended";
}

}  // namespace

std::vector<ObservedObject> RemoteViewOf(const JobObservation& observation) {
  std::vector<ObservedObject> out;
  for (const auto& [cluster, seen] : observation.clusters) {
    const bool behind = observation.behind->count(cluster) > 0;
    for (const ObservedWorkload& w : seen.workloads) {
      // ObservedWorkload keeps QuotaReserved's reason and message while the
      // copy waits, the deciding condition's once it moved on.
      out.push_back({cluster, kWorkload, w.name, w.epoch, WorkloadState(w), w.reason, w.message, behind});
    }
    for (const ObservedJob& j : seen.jobs) {
      out.push_back({cluster, kJob, j.name, j.epoch, JobState(j), j.reason, j.message, behind});
    }
  }
  return out;
}

}  // namespace gantry::dispatch
