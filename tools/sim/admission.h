// The simulated Kueue's admission decision: a pure function of the
// ClusterQueue's nominal quota, what is already reserved, and the pending
// Workloads' demands. No clock, no objects, no locks: the table tests drive it.
//
// Semantics (Kueue ClusterQueue with queueingStrategy BestEffortFIFO):
// - order: higher priority first, then older creation time, then arrival seq;
// - all-or-nothing: a Workload is admitted only if its whole demand (sum over
//   pod sets of count x requests) fits nominal - reserved for every resource;
// - best effort: a Workload that does not fit does not block smaller ones
//   behind it; a resource the queue has no quota for never fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quota.h"

namespace gantry::sim {

struct AdmissionCandidate {
  std::string key;          // "namespace/name"
  int32_t priority = 0;
  int64_t created_ms = 0;
  int64_t seq = 0;          // tie breaker: arrival order
  ResourceList demand;      // whole-Workload usage
};

struct AdmissionVerdict {
  std::string key;
  bool admitted = false;
  // Why it is pending (empty when admitted), in Kueue's words.
  std::string message;
};

// Returns one verdict per candidate, in admission order.
std::vector<AdmissionVerdict> DecideAdmissions(const ResourceList& nominal, const ResourceList& reserved,
                                               std::vector<AdmissionCandidate> pending,
                                               const std::string& flavor);

// The first resource in demand that does not fit in nominal - reserved, or ""
// when it all fits. *missing gets how much more would be needed.
std::string FirstShortfall(const ResourceList& nominal, const ResourceList& reserved,
                           const ResourceList& demand, int64_t* missing);

}  // namespace gantry::sim
