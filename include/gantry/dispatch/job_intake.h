// JobIntake: how the API tells the dispatch engine about jobs. Wake (from
// JobWaker) is the level-triggered hint "look at this job again"; Created
// also hands over a job the store has just created, so that the engine's
// first pass over it reads nothing back and parses nothing again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gantry/common/job_waker.h"
#include "gantry/job/job_document.h"
#include "gantry/store/job_store.h"

namespace gantry::dispatch {

// What the engine's watches show now of one of a job's objects in a worker
// cluster: Kueue's word on a Workload copy (why it is pending, say), the
// real job's state. For people: `gantry status` prints it beside the row
// the store keeps for the object (RemoteIntent).
struct ObservedObject {
  std::string cluster;
  std::string kind;  // "Workload", or "Job" for the real job whatever its kind (as RemoteIntent::kind)
  std::string name;
  int64_t epoch = 0;  // its gantry.dev/epoch annotation (an older one: a copy being fenced off)
  // A Workload: Pending, QuotaReserved, Admitted, Evicted, Finished or
  // Deactivated; a real job: Suspended, Running, Succeeded, Failed or
  // Deleting.
  std::string state;
  std::string reason;   // the deciding condition's reason ("" when none)
  std::string message;  // and its message, e.g. Kueue's "couldn't assign flavors ..."
  // The cluster's view may be behind (its watch failed since it last
  // listed, as while it is cut off): this is what it last showed.
  bool last_seen = false;
};

// A create (or a delete) the engine is to send again, and why its last try
// failed: an answer that is not a refusal (500, 429, a timeout; for a
// delete, a 403 too), or no connection.
struct ActionError {
  std::string cluster;
  std::string kind;  // as RemoteIntent::kind
  int64_t epoch = 0;
  std::string error;
  int64_t time_ms = 0;   // of the last try
  int64_t since_ms = 0;  // of the first of the tries at this epoch that have failed in a row
  std::string verb = "create";  // or "delete": a withdrawn object's delete, sent again too
};

// Failed tries further apart than this are not one run: a pass whose
// action failed looks again within DecideOptions::retry_ms, and a try
// waits at most a request's deadline. The time between (the owner out of
// reach, the job held at a gate) is no failure.
inline constexpr int64_t kFailingRunGapMs = 60'000;

// Records in e a failed try of its create at epoch, at now_ms.
inline void NoteFailedTry(ActionError& e, int64_t epoch, int64_t now_ms) {
  if (e.since_ms == 0 || e.epoch != epoch || now_ms - e.time_ms > kFailingRunGapMs) e.since_ms = now_ms;
  e.epoch = epoch;
  e.time_ms = now_ms;
}

// How long e's run of failed tries at epoch has lasted, from its first try
// to its last; 0 when the last is not recent (the run is over).
inline int64_t FailingRunMs(const ActionError& e, int64_t epoch, int64_t now_ms) {
  if (e.since_ms == 0 || e.epoch != epoch || now_ms - e.time_ms > kFailingRunGapMs) return 0;
  return e.time_ms - e.since_ms;
}

class JobIntake : public JobWaker {
 public:
  // Called once per new job, right after the store committed it, on the
  // store's writer thread: it must be cheap and must not block. record is
  // the job as stored; spec is the parsed document it was stored from
  // (record.spec_json == SpecToJsonText(*spec)); the callee may move
  // from *spec. The default only wakes the job.
  // spec may be null (see WantsSpec).
  virtual void Created(JobRecord record, std::shared_ptr<JobSpec> spec) {
    (void)spec;
    Wake(record.uid);
  }
  // Whether Created would keep a spec now. When not, the caller keeps it and
  // destroys it on its own thread: a spec destroyed in Created is freed on
  // the store's writer thread, whose time is every submitter's latency.
  virtual bool WantsSpec() const { return false; }
  // A cancel was recorded for the job: a Wake that goes ahead of the jobs
  // waiting for their first pass, so that a cancel is not served after a
  // burst of submissions. The default is a plain Wake. acknowledge (which
  // answers the client) is called once nothing of the job can be sent to a
  // cluster as if it were not cancelled: at once, or by the thread whose
  // send it waits for; never blocking the caller (the store's writer).
  virtual void CancelRequested(const std::string& job_uid, std::function<void()> acknowledge) {
    Wake(job_uid);
    acknowledge();
  }
  // The creates of the job whose last try failed (see ActionError); none by default.
  virtual std::vector<ActionError> ActionErrors(const std::string& job_uid) const {
    (void)job_uid;
    return {};
  }
  // The status message a job submitted now starts with, when the engine
  // already knows what its first pass would say (no cluster is configured):
  // the caller stores it with the job, and Created then has no pass to run.
  // Empty when the job needs its first pass.
  virtual std::string FirstMessage() const { return {}; }
  // Why the engine cannot run this job as users expect (the API refuses it,
  // 422, with this field and message); nullopt when it can. The default
  // takes every job.
  virtual std::optional<FieldError> Refuse(const JobSpec& spec) const {
    (void)spec;
    return std::nullopt;
  }
  // What the watches show of the job's remote objects now (above); empty
  // without watches, or where a cluster shows nothing of the job. Called on
  // the API's thread: it must be cheap and must not block on a cluster.
  virtual std::vector<ObservedObject> RemoteView(const std::string& job_uid) const {
    (void)job_uid;
    return {};
  }
};

}  // namespace gantry::dispatch
