// The simulated Kueue's admission decision: a pure function of the
// ClusterQueue's nominal quota and preemption policy, the Workloads holding
// quota, and the pending Workloads' demands. No clock, no objects, no locks:
// the table tests drive it.
//
// Semantics (Kueue ClusterQueue with queueingStrategy BestEffortFIFO):
// - order: higher priority first, then older creation time, then arrival seq;
// - all-or-nothing: a Workload is admitted only if its whole demand (sum over
//   pod sets of count x requests) fits nominal - reserved for every resource;
// - best effort: a Workload that does not fit does not block smaller ones
//   behind it; a resource the queue has no quota for never fits.
//
// Preemption (withinClusterQueue: LowerPriority; Kueue's classic preemption
// within one ClusterQueue, no cohort): a Workload that does not fit takes as
// victims holders of strictly lower priority, lowest priority first, then
// the most recently reserved first, until its demand fits; then, as Kueue's
// minimalPreemptions does, gives back any victim, from the last but one
// down, without which it still fits. When even every candidate victim would
// not make room, it preempts none and waits. It may preempt only when its
// preemption gates are open (AdmissionCandidate::closed_gates); when they
// are not, it waits and its message says which gates hold it.
//
// Victims' time to stop (ClusterConfig::victim_stop_delay_ms). When victims
// stop at once (ClusterQueueSnapshot::victims_stop_at_once), a preemptor is
// admitted in the same pass as its victims are chosen: the controller evicts
// them first (quota released at once), then admits it. Otherwise, as in
// Kueue, an evicted victim keeps its quota until it has stopped (a holder
// with preempted_for set: its quota counts as used) and the preemptor waits
// for it (PendingReason::kWaitingForPreemptedWorkloads) with the message
// "<flavors message>. Pending the preemption of N workload(s)", N its
// victims, those evicted now and those still stopping for it. A stopping
// victim is a target for its own preemptor only, ahead of all others (as
// Kueue orders evicted candidates first), never for another. While it
// waits, no Workload after it in the pass takes the room it counts on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quota.h"
#include "sim_config.h"

namespace gantry::sim {

struct AdmissionCandidate {
  std::string key;          // "namespace/name"
  int32_t priority = 0;
  int64_t created_ms = 0;
  int64_t seq = 0;          // tie breaker: arrival order
  ResourceList demand;      // whole-Workload usage
  // spec.preemptionGates not Open in status.preemptionGates: it may preempt
  // only when this is empty (PreemptionGatesClosed in preemption_gates.h).
  std::vector<std::string> closed_gates = {};
};

// A Workload holding quota in the ClusterQueue (reserved or admitted, not
// finished): a possible victim of preemption.
struct QuotaHolder {
  std::string key;
  int32_t priority = 0;
  int64_t reserved_seq = 0;  // order in which holders got quota: higher is more recent
  ResourceList usage;
  // "" for a holder; for a victim evicted but not yet stopped (its quota
  // still held), the key of the preemptor it was evicted for.
  std::string preempted_for = {};
};

// The ClusterQueue as admission sees it.
struct ClusterQueueSnapshot {
  ResourceList nominal;
  ResourceList reserved;              // what is held: the holders' usage summed
  std::vector<QuotaHolder> holders;   // read only when policy is LowerPriority
  PreemptionPolicy policy = PreemptionPolicy::kNever;
  std::string flavor;                 // for the messages
  // victimStopDelay 0: an evicted victim's quota is free at once, so its
  // preemptor is admitted in the pass that evicts it.
  bool victims_stop_at_once = true;
};

// Why a Workload stays pending: its QuotaReserved=False reason.
enum class PendingReason {
  kPending,          // it does not fit (and preemption cannot make room)
  kPreemptionGated,  // only a closed preemption gate holds it back (Kueue's KEP-8303)
  kWaitingForPreemptedWorkloads,  // its victims have not released their quota yet
};
// Kueue's words: "Pending", "PreemptionGated", "WaitingForPreemptedWorkloads".
const char* PendingReasonName(PendingReason reason);

struct AdmissionVerdict {
  std::string key;
  bool admitted = false;
  // Why it is pending (empty when admitted), in Kueue's words.
  std::string message;
  PendingReason reason = PendingReason::kPending;  // when pending
  // The holders (keys) to evict now, in the order chosen: before it is
  // admitted, or while it waits for them (kWaitingForPreemptedWorkloads);
  // otherwise empty. A victim is never a victim twice.
  std::vector<std::string> victims = {};
};

// Returns one verdict per candidate, in admission order.
std::vector<AdmissionVerdict> DecideAdmissions(const ClusterQueueSnapshot& cq,
                                               std::vector<AdmissionCandidate> pending);
// The same without preemption (policy Never).
std::vector<AdmissionVerdict> DecideAdmissions(const ResourceList& nominal, const ResourceList& reserved,
                                               std::vector<AdmissionCandidate> pending,
                                               const std::string& flavor);

// The first resource in demand that does not fit in nominal - reserved, or ""
// when it all fits. *missing gets how much more would be needed.
std::string FirstShortfall(const ResourceList& nominal, const ResourceList& reserved,
                           const ResourceList& demand, int64_t* missing);

}  // namespace gantry::sim
