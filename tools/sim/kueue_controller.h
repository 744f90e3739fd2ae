// KueueController: the simulated Kueue and job controllers of one cluster.
// It owns the quota accounting (reserved usage per admitted Workload) and
// the running jobs, and writes what real controllers write: Workload
// conditions, status.admission and status.admissionChecks (when the
// ClusterQueue has checks), ClusterQueue/LocalQueue status, job
// suspend/active/succeeded, and the run journal.
//
// The admission decision itself is the pure DecideAdmissions (admission.h);
// this class gathers its inputs from the store and applies its verdicts,
// evicting the victims of a preemption first (eviction.cc). A victim keeps
// its quota for the cluster's victimStopDelay after its eviction (0: not at
// all), and the controller wakes itself to release it then.
// Time is passed in (now_ms) so tests drive it with a fake clock.
//
// Cost: a tick is meant to run every 10 ms in each of many clusters, so it
// never walks the store. The WorkloadIndex (fed every Workload event) knows
// which Workloads wait and the queue counts; jobs waiting for their prebuilt
// Workload are filed under it and retried only when that Workload changed;
// running jobs' deadlines are kept in order. A tick with nothing due and
// nothing changed (dirty_ false) does nothing. With preemption on
// (withinClusterQueue: LowerPriority), a pass with Workloads waiting also
// reads each quota holder's priority (one lookup per holder).
//
// Thread-safety: none; the owning ClusterState serializes all calls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "admission.h"
#include "gantry/common/status.h"
#include "demand.h"
#include "journal.h"
#include "object_store.h"
#include "quota.h"
#include "sim_config.h"
#include "workload_index.h"

namespace gantry::sim {

inline constexpr const char* kPrebuiltWorkloadKey = "kueue.x-k8s.io/prebuilt-workload-name";
inline constexpr const char* kDurationAnnotation = "sim.gantry.dev/duration";
inline constexpr const char* kOutcomeAnnotation = "sim.gantry.dev/outcome";

class KueueController {
 public:
  KueueController(const ClusterConfig& config, ObjectStore* store, Journal* journal);

  // Creates the ResourceFlavor, ClusterQueue and LocalQueues.
  void Bootstrap(int64_t now_ms);
  // Admission, adoption of waiting jobs, finishing due runs, queue status.
  void Tick(int64_t now_ms);
  // Marks that admission must be reconsidered on the next Tick.
  void MarkDirty() { dirty_ = true; }

  // Hooks called by ClusterState after the store changed.
  // Every Workload event, whoever caused it (the store's event sink).
  void OnWorkloadEvent(const std::string& type, const nlohmann::json& wl);
  void OnWorkloadCreated(const nlohmann::json& wl, int64_t now_ms);
  void OnWorkloadDeleted(const nlohmann::json& wl, int64_t now_ms);
  // A new job: suspended until adopted; adopted at once when its prebuilt
  // Workload is admitted; run unmanaged when it has none and is not suspended.
  void OnJobCreated(const std::string& resource, const nlohmann::json& job, int64_t now_ms);
  void OnJobDeleted(const std::string& resource, const nlohmann::json& job, int64_t now_ms);
  // A job deleted with propagationPolicy Foreground whose run goes on or
  // is still stopping (terminationGrace): the object, marked for deletion
  // by the caller, is deleted once the run has ended. False when no run
  // goes on: the caller deletes it at once.
  bool OnJobDeletingForeground(const std::string& resource, const nlohmann::json& job, int64_t now_ms);
  // A job changed through the API: if it names a prebuilt Workload, it is
  // retried for adoption on the next admission pass.
  void OnJobUpdated(const std::string& resource, const nlohmann::json& job);

  // Preempts an admitted Workload by hand (gantry-sim ctl evict), as
  // EvictHolder does with a message that says so. NotFound /
  // InvalidArgument (holds no quota).
  Status Evict(const std::string& ns, const std::string& name, int64_t now_ms);
  // Sets admission check `check` ("" = every check) of a Workload that holds
  // quota to `state`, as the check's controller would, and does what Kueue
  // does then (admission_checks.cc). A check set so is no longer decided by
  // its configured outcome until the Workload gets quota again.
  // NotFound (no such Workload or check) / InvalidArgument (holds no quota).
  Status SetCheckState(const std::string& ns, const std::string& name, const std::string& check, CheckState state,
                       int64_t now_ms);
  void SetQuota(const ResourceList& quota, int64_t now_ms);
  // Creates LocalQueue ns/name for the cluster's ClusterQueue, as an
  // operator would (gantry-sim ctl local-queue); its Workloads waiting as
  // Inadmissible are looked at again. AlreadyExists when it does.
  Status AddLocalQueue(const std::string& ns, const std::string& name, int64_t now_ms);

  const ResourceList& quota() const { return quota_; }
  // What admitted Workloads hold: the total admission decides with, so the
  // tests and the status page see the same figure.
  const ResourceList& Reserved() const { return reserved_total_; }
  std::size_t running_jobs() const { return running_.size(); }

 private:
  // The LocalQueue object ns/name, for the ClusterQueue.
  Status CreateLocalQueue(const std::string& ns, const std::string& name, int64_t now_ms);

  struct Arrival {
    int64_t created_ms = 0;
    int64_t seq = 0;
  };
  struct RunningJob {
    std::string resource, ns, name;
    std::string workload_key;  // "" for an unmanaged job
    int64_t finish_ms = 0;
    bool fail = false;
    std::size_t journal_id = 0;
    std::string uid;  // the job object's metadata.uid
  };
  // A suspended job that names a prebuilt Workload not yet adoptable.
  struct WaitingJob {
    std::string resource, ns, name;
    std::string workload_key;  // the Workload it waits for
  };
  // The admission checks of a Workload that holds quota and is not admitted
  // yet: when it got quota (each check's delay counts from then), and the
  // checks set by hand, which their configured outcome no longer decides.
  struct CheckClock {
    int64_t reserved_ms = 0;
    std::set<std::string> by_hand;
  };
  // The quota a Workload holds, and when it got it (QuotaHolder::reserved_seq).
  struct Reservation {
    ResourceList usage;
    int64_t seq = 0;
    // A victim evicted but not yet stopped: the preemptor it was evicted
    // for (QuotaHolder::preempted_for) and when its quota is released.
    std::string preempted_for = {};
    int64_t release_ms = 0;
    // When its spec.maximumExecutionTimeSeconds runs out (0: none); see
    // DeactivateOverdue.
    int64_t exec_deadline_ms = 0;
  };
  // Why a Workload loses its quota (EvictHolder).
  struct EvictionCause {
    std::string message;  // of its Evicted, QuotaReserved and Admitted conditions
    // "" by hand; else the preemptor's key (a preemption within the
    // ClusterQueue by the scheduler): Kueue's Preempted condition too, and
    // the quota held for victimStopDelay.
    std::string preemptor = {};
    // The reason of those conditions; and whether Kueue deactivates the
    // Workload for good (spec.active false), as for an expired
    // maximumExecutionTimeSeconds.
    std::string reason = "Preempted";
    bool deactivate = false;
  };
  // What the ClusterQueue and LocalQueue status were last written from.
  struct QueueStatusInputs {
    ResourceList used, quota;
    QueueCounts total;
    std::vector<QueueCounts> local_queues;  // in config_.local_queues order
    bool operator==(const QueueStatusInputs&) const = default;
  };

  void Admit(const nlohmann::json& wl, const WorkloadDemand& demand, int64_t now_ms);
  void RunAdmission(int64_t now_ms);
  // Preemption (eviction.cc).
  // The Workloads holding quota, as DecideAdmissions sees possible victims.
  std::vector<QuotaHolder> QuotaHolders() const;
  // Evicts these holders (keys) to make room for preemptor, in Kueue's words.
  void Preempt(const std::vector<std::string>& victims, const nlohmann::json& preemptor, int64_t now_ms);
  // Takes a Workload's quota back: its run stops (journal end reason
  // Evicted), its job is suspended, Evicted=True and QuotaReserved=False and
  // Admitted=False (reason Preempted), status.admission cleared, quota
  // released: at once, or for a preemption's victim victimStopDelay later
  // (ReleaseStoppedVictims), as Kueue counts it until its pods are gone.
  // It is not requeued: it waits no more (WorkloadIndex).
  // REQUIRES: it holds quota.
  void EvictHolder(const std::string& key, const EvictionCause& cause, int64_t now_ms);
  // Releases the quota of the victims whose victimStopDelay is up (a
  // release marks the controller dirty: admission runs on this tick).
  void ReleaseStoppedVictims(int64_t now_ms);
  // Evicts and deactivates the Workloads whose maximumExecutionTimeSeconds
  // ran out, as Kueue does (reason DeactivatedDueToMaximumExecutionTimeExceeded;
  // counted here from the quota reservation, where Kueue counts the time
  // admitted).
  void DeactivateOverdue(int64_t now_ms);
  // Writes condition `type` unless the Workload already has it as given.
  void SetWorkloadCondition(const nlohmann::json& wl, const std::string& type, bool status,
                            const std::string& reason, const std::string& message, int64_t now_ms);
  // Admission checks (admission_checks.cc).
  // status.admissionChecks of a Workload that has just got quota: every
  // configured check Pending.
  nlohmann::json PendingChecks(const nlohmann::json& wl, int64_t now_ms) const;
  void StartCheckClock(const std::string& wl_key, int64_t now_ms);
  // Gives the checks whose delay is up their configured outcome.
  void DecideDueChecks(int64_t now_ms);
  // Sets these checks of a Workload (key) to these states, in one write with
  // what follows: Admitted when all are Ready, evicted and requeued on a
  // Retry, deactivated on a Rejected.
  void ApplyCheckStates(const std::string& key, const std::map<std::string, CheckState>& states, int64_t now_ms);
  void AdoptWaitingJobs(int64_t now_ms);
  bool TryAdopt(const std::string& resource, const nlohmann::json& job, int64_t now_ms);
  void AddWaitingJob(const std::string& resource, const std::string& ns, const std::string& name,
                     const std::string& workload_key);
  void RemoveWaitingJob(const std::string& run_key);
  void StartRun(const std::string& resource, nlohmann::json job, const std::string& wl_key, int64_t now_ms);
  void FinishDueRuns(int64_t now_ms);
  void FinishRun(const std::string& run_key, int64_t now_ms);
  // Stops a running job: journal stop (terminationGrace later), job
  // suspended (unless deleted).
  void StopRun(const std::string& run_key, const std::string& reason, bool suspend_job, int64_t now_ms);
  // Runs stopped (suspended, deleted) while their pods stop, over the
  // cluster's terminationGrace: each ends then, in EndTerminatingRuns, and
  // a job deleted in the foreground goes with it.
  void EndTerminatingRuns(int64_t now_ms);
  // Removes a run from running_ and its indexes; returns it.
  RunningJob EraseRun(std::map<std::string, RunningJob>::iterator it);
  void Release(const std::string& wl_key);
  void UpdateQueueStatus(int64_t now_ms);
  void WriteStatus(const std::string& resource, const std::string& ns, const std::string& name,
                   const nlohmann::json& fields);
  void UpdateClusterQueueSpec();
  std::string RunKeyForWorkload(const std::string& wl_key) const;

  const ClusterConfig& config_;
  ObjectStore* store_;
  Journal* journal_;
  ResourceList quota_;
  bool dirty_ = true;
  int64_t next_wake_ms_ = 0;
  int64_t next_seq_ = 0;
  int64_t next_reservation_seq_ = 0;
  WorkloadIndex index_;
  std::map<std::string, Arrival> arrivals_;        // workload key -> arrival
  std::map<std::string, Reservation> reserved_;    // workload key -> what it holds
  ResourceList reserved_total_;                    // the sum of reserved_
  std::map<std::string, RunningJob> running_;      // resource/ns/name -> run
  std::map<std::string, std::string> run_of_workload_;   // workload key -> run key
  std::set<std::pair<int64_t, std::string>> deadlines_;  // (finish_ms, run key) of running_
  struct Terminating {
    int64_t end_ms = 0;
    std::string reason;  // the journal's end reason
    std::string run_key;
    std::string uid;           // the job object's, which may be re-created under the same name
    std::string workload_key;  // looked at again once the run ended (TryAdopt waits for it)
    bool remove_object = false;  // deleted in the foreground: the job goes at end_ms
  };
  // Whether a run of the job object with this uid is still stopping.
  bool Stopping(const std::string& uid) const;
  std::map<std::size_t, Terminating> terminating_;  // journal id -> run stopping
  // A stopping victim deleted: its quota stays held until it has stopped.
  void KeepStoppingVictim(const std::string& key, int64_t now_ms);
  // (release_ms, workload key) of the victims in reserved_ still stopping.
  std::set<std::pair<int64_t, std::string>> victim_releases_;
  // (exec_deadline_ms, workload key) of the holders in reserved_ with one.
  std::set<std::pair<int64_t, std::string>> exec_deadlines_;
  std::map<std::string, WaitingJob> waiting_jobs_;        // run key -> job
  std::map<std::string, std::set<std::string>> jobs_waiting_on_;  // workload key -> run keys
  // Workloads that changed since the last pass and have jobs waiting on them.
  std::set<std::string> touched_;
  std::optional<QueueStatusInputs> last_queue_status_;
  std::map<std::string, CheckClock> check_clocks_;  // workload key -> its checks' clock
};

// Sets condition `type` on obj's status; lastTransitionTime changes only when
// the status flips. Returns true when anything changed.
bool SetCondition(nlohmann::json* obj, const std::string& type, bool status, const std::string& reason,
                  const std::string& message, int64_t now_ms);
// True when obj has condition type with status "True".
bool HasCondition(const nlohmann::json& obj, const std::string& type);
// The message of obj's condition `type` ("" when it has none).
std::string ConditionMessage(const nlohmann::json& obj, const std::string& type);
// A Workload that holds quota (QuotaReserved=True).
inline bool IsReserved(const nlohmann::json& wl) { return HasCondition(wl, "QuotaReserved"); }
// A Workload done with (Finished or Evicted).
inline bool IsDone(const nlohmann::json& wl) { return HasCondition(wl, "Finished") || HasCondition(wl, "Evicted"); }

}  // namespace gantry::sim
