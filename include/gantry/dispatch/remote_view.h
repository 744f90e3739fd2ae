// RemoteViewOf: what the watches show of a job's objects (observer.h), as
// the API shows it beside the store's rows (job_intake.h ObservedObject).
// Pure: no I/O, no clock.
//
// Thread-safety: a pure function.
#pragma once

#include <vector>

#include "gantry/dispatch/job_intake.h"
#include "gantry/dispatch/observer.h"

namespace gantry::dispatch {

// One entry per Workload and per real job the observation holds, by
// cluster. A Workload's state is the furthest of its conditions
// (Finished, then Evicted, Admitted, QuotaReserved; Deactivated when
// spec.active is false; else Pending, with Kueue's reason and message for
// why); a real job's is its RemoteJobState, or Deleting once its
// deletionTimestamp is set. Each is marked last_seen where the observation
// says the cluster's view may be behind.
std::vector<ObservedObject> RemoteViewOf(const JobObservation& observation);

}  // namespace gantry::dispatch
