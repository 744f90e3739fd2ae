// JobStore: the seam between gantry and its single source of truth.
//
// The store keeps job records, their event history and (later) leases and
// remote-object intents. It knows nothing of HTTP, clusters or the job
// document format: specs are stored as canonical JSON text chosen by the
// caller.
//
// Writes are asynchronous: the callback runs once the write is durable
// (committed and fsync'd), from the store's writer thread. Implementations
// batch concurrent writes into one transaction ("group commit"), so the
// callback MUST NOT block and must not call back into the store's write
// methods synchronously (post to your own executor instead).
//
// Reads are synchronous and may be called from any thread.
//
// Thread-safety: every method is safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gantry/common/job_phase.h"
#include "gantry/common/status.h"

namespace gantry {

// One job as stored. Fields are plain values so the store stays independent
// of the job document model.
struct JobRecord {
  std::string uid;        // random UUID, assigned by the API before Submit
  std::string ns;         // namespace
  std::string name;
  std::string queue;      // the worker LocalQueue name
  int32_t priority = 0;
  std::string spec_json;    // canonical JSON of the normalized spec (identity for idempotent submit)
  std::string labels_json = "{}";  // metadata.labels as a JSON object
  JobPhase phase = JobPhase::kQueued;
  std::string cluster;    // lease owner, "" when none
  int64_t epoch = 0;      // fencing epoch; 0 until first dispatch
  std::string conditions_json = "[]";  // Kubernetes-style conditions array
  std::string message;    // human-readable reason for the current phase
  int64_t created_ms = 0;  // set by the caller (API) before Submit
  int64_t updated_ms = 0;
  int64_t seq = 0;         // insertion order, assigned by the store; stable sort key
  int64_t nominated_ms = 0;   // when the current epoch's nomination began
  int64_t lease_ms = 0;       // when the owner's lease was taken; 0 = no lease
  std::string remote_status;  // the owner's view of the running job (for display)
  // When the phase became final, set by the store in that write; 0 while
  // unfinished (and for jobs that finished before schema 006).
  int64_t finished_ms = 0;

  // The bytes of its texts of any length (spec, labels, conditions,
  // message, remote status): most of what it weighs, and of its JSON.
  std::size_t TextBytes() const {
    return spec_json.size() + labels_json.size() + conditions_json.size() + message.size() + remote_status.size();
  }
};

struct JobEvent {
  int64_t id = 0;
  std::string job_uid;
  int64_t time_ms = 0;
  std::string type = "Normal";  // Normal | Warning
  std::string reason;           // CamelCase: Submitted, CancelRequested, Cancelled, ...
  std::string message;
  std::string cluster;          // "" when not about one cluster
};

// The most recent events of a job, oldest first, and how many it has in all.
struct EventTail {
  std::vector<JobEvent> events;
  int64_t total = 0;
};

// The desired state of one object gantry keeps in a worker cluster, recorded
// before the object is created or deleted there (DESIGN.md, "Crash anywhere").
struct RemoteIntent {
  std::string job_uid;
  std::string cluster;
  std::string kind;     // "Workload" | "Job"
  std::string ns;
  std::string name;
  int64_t epoch = 0;
  bool present = true;  // true: should exist at `epoch`; false: should be deleted
  // Non-empty: the cluster refused to create this Workload copy at `epoch`
  // (its answer, e.g. a 403 or 422, or a same-named object gantry did not
  // make); present is false and nothing of the job's is there. The row keeps
  // the candidate from being asked again at this epoch (schema 007).
  std::string refusal;
  // A Workload copy's preemption gate (kPreemptionGate; schema 009): when
  // the engine decided to open it, so that the copy may preempt
  // lower-priority work in its cluster (0: closed). Recorded before the
  // status patch that opens it.
  int64_t gate_opened_ms = 0;
  // The cluster's answer when it refused that patch (e.g. a 403: gantry may
  // not patch workloads/status there): not sent again at this epoch.
  std::string gate_refusal;
  // A real job's row: when its cluster confirmed the create at this epoch
  // (201, or 409 for the job's own object; 0: not confirmed). Kept by later
  // writes of the row at the same epoch (schema 012). Written for
  // at-most-once jobs, which must not create again a job that was there.
  int64_t created_ms = 0;
  // A real job's withdrawn row: why its cluster is left out of the job's
  // dispatches for a while (DecideOptions::job_refusal_hold_ms from
  // updated_ms), although what gantry sent there may be present (schema
  // 014). Unlike refusal, every other reader takes the row as an ordinary
  // withdrawn one; once the cluster shows the object gone, the row becomes
  // a refusal row (nothing there) for the rest of the hold.
  std::string hold;
  int64_t updated_ms = 0;
};

// One guarded change to a job and its intents, applied in one transaction
// only if the job still has the expected phase, epoch and owner (a
// compare-and-set: the lease is one of these).
struct DispatchUpdate {
  std::string uid;
  JobPhase expected_phase = JobPhase::kQueued;
  int64_t expected_epoch = 0;
  std::string expected_cluster;
  std::optional<JobPhase> phase;            // unset = unchanged
  std::optional<int64_t> epoch;
  std::optional<std::string> cluster;
  std::optional<std::string> message;
  std::optional<std::string> conditions_json;
  std::optional<int64_t> nominated_ms;
  std::optional<int64_t> lease_ms;
  std::optional<std::string> remote_status;
  std::vector<RemoteIntent> upsert_intents;  // keyed by (job_uid = uid, cluster, kind)
  std::vector<std::pair<std::string, std::string>> drop_intents;  // (cluster, kind)
  std::vector<JobEvent> events;              // job_uid set to uid; time_ms 0 = now
  // false: the write needs no fsync of its own (group_commit.h). It is seen
  // at once and survives a crash of the daemon, but a power failure or an
  // OS crash before the next durable write may undo it. Only for writes that
  // no remote action depends on and that the engine makes again from what
  // it observes (dispatch::MayBeLost in decide.h).
  bool durable = true;
};

enum class SubmitOutcome {
  kCreated,   // a new record was written
  kExisting,  // same namespace/name and SameSubmission: the stored record is returned
};

// Whether a submission whose canonical spec is spec_json is the stored job
// again (an idempotent re-submission) rather than a different job under its
// name: the same canonical spec text.
inline bool SameSubmission(const JobRecord& stored, const std::string& spec_json) {
  return stored.spec_json == spec_json;
}

struct SubmitResult {
  SubmitOutcome outcome = SubmitOutcome::kCreated;
  JobRecord job;  // the stored record (the new one, or the existing one)
};

struct ListQuery {
  std::optional<std::string> ns;          // exact namespace, or all
  std::vector<std::string> allowed_namespaces;  // when non-empty, restrict to these
  std::optional<std::string> queue;
  std::optional<JobPhase> phase;
  // The lease owner (JobRecord::cluster; non-empty), by the index
  // jobs_by_cluster (016).
  std::optional<std::string> cluster;
  int64_t after_seq = 0;                  // continue from here (exclusive)
  int limit = 500;                        // 1..5000
  // When set, a page also ends (with at least one job) once its jobs'
  // texts (JobRecord::TextBytes) reach this many bytes,
  // so that a page of the largest documents stays a few megabytes.
  int64_t max_bytes = 0;
};

struct JobPage {
  std::vector<JobRecord> jobs;     // ordered by seq ascending
  std::optional<int64_t> next_after_seq;  // set when more rows may follow
};

// A job as the store's scans hand it out: enough to wake it in its order.
struct JobKey {
  std::string uid;
  int32_t priority = 0;
  int64_t seq = 0;
};

template <typename T>
using StoreCallback = std::function<void(Result<T>)>;

// One batch of JobStore::ExpireFinished.
struct ExpiredJobs {
  int count = 0;
  int64_t last_finished_ms = 0;  // of the last job purged (0: none)
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Inserts job unless (ns, name) exists. Existing with identical spec_json ->
  // kExisting with the stored record; existing with a different spec ->
  // Code::kConflict. Records a "Submitted" event in the same transaction.
  virtual void Submit(JobRecord job, StoreCallback<SubmitResult> done) = 0;

  // Marks a job for cancellation: a non-final phase becomes Cancelling (with
  // a CancelRequested event); a final phase is returned unchanged. NotFound
  // when absent.
  virtual void RequestCancel(std::string ns, std::string name, StoreCallback<JobRecord> done) = 0;

  // Removes a finished job and its events, and records its uid as purged
  // (WasPurged); done gets the removed job's uid. kConflict when the job is
  // not in a final phase; kNotFound when absent.
  virtual void Purge(std::string ns, std::string name, StoreCallback<std::string> done) = 0;
  // Purges (as Purge does) the finished jobs whose final phase came in
  // [finished_from_ms, finished_before_ms) and that have no intent left
  // (every object gantry made for them seen deleted), oldest first, at most
  // limit of them in one transaction; done gets how many, and the finish
  // time of the last (the next batch's finished_from_ms). A job that
  // finished before migration 006 (no finish time) is never taken.
  virtual void ExpireFinished(int64_t finished_before_ms, int64_t finished_from_ms, int limit,
                              StoreCallback<ExpiredJobs> done) = 0;

  // Sets phase/message (and optionally appends an event) if the job is still
  // at expected_phase. kConflict when the phase moved on; kNotFound when absent.
  virtual void Transition(std::string uid, JobPhase expected_phase, JobPhase new_phase,
                          std::string message, std::optional<JobEvent> event,
                          StoreCallback<JobRecord> done) = 0;

  // Applies update if the job is still at (expected_phase, expected_epoch,
  // expected_cluster); kConflict (naming what moved) otherwise, with nothing
  // written. kNotFound when absent.
  virtual void ApplyDispatch(DispatchUpdate update, StoreCallback<JobRecord> done) = 0;
  // The job's intents, by cluster then kind.
  virtual Result<std::vector<RemoteIntent>> Intents(const std::string& uid) = 0;
  // Jobs that still have intents, by uid, from after_uid (exclusive; "" =
  // from the start), at most limit: one page of the start-up scan, which
  // finds finished jobs with cleanup left. job_scan.h reads every page.
  virtual Result<std::vector<std::string>> UidsWithIntents(const std::string& after_uid, int limit) = 0;
  // The same for the jobs with an intent in one cluster (its health changed:
  // look at them now).
  virtual Result<std::vector<std::string>> UidsWithIntentsIn(const std::string& cluster,
                                                             const std::string& after_uid, int limit) = 0;

  virtual Result<JobRecord> Get(const std::string& ns, const std::string& name) = 0;
  virtual Result<JobRecord> GetByUid(const std::string& uid) = 0;
  // Whether this store purged a job of that uid (so that objects of it left
  // in a cluster are gantry's to delete; a uid it never had is not).
  virtual Result<bool> WasPurged(const std::string& uid) = 0;
  virtual Result<JobPage> List(const ListQuery& query) = 0;
  virtual Result<std::vector<JobEvent>> Events(const std::string& uid) = 0;
  // The last `limit` of them (0 or less: all), oldest first, and the count
  // of all: what a status page shows of a job whose events have grown long.
  virtual Result<EventTail> LastEvents(const std::string& uid, int limit) = 0;
  // Every phase with its count (phases with no job are 0).
  virtual Result<std::map<JobPhase, int64_t>> CountByPhase() = 0;
  // Jobs in a phase by seq, from after_seq (exclusive), at most limit: one
  // page of the reconciler's scans (start-up, a cluster back, an inventory
  // reload). The reconciler orders Queued jobs by priority itself.
  virtual Result<std::vector<JobKey>> JobsInPhase(JobPhase phase, int64_t after_seq, int limit) = 0;
};

}  // namespace gantry
