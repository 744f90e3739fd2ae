// ClusterObserver: what every worker cluster shows of gantry's objects, kept
// current by one list+watch per cluster and resource (kube::ListWatch),
// selected by the origin label. The engine reads it per job; every change to
// an object (and every relist) calls on_change with the object's job uid
// (label gantry.dev/job-uid), so the job is reconciled again.
//
// A cluster's view counts only once it is synced: its watches have completed
// a list since they (re)started. Until then (and after a watch fails, until
// the next successful list) the engine must not conclude that an object is
// absent there. For a job, only its Workloads' watch and its own kind's
// count (JobObservation::synced).
//
// Watched resources per cluster: Kueue Workloads (the cluster's configured
// version), batch/v1 Jobs, jobset.x-k8s.io/v1alpha2 JobSets and the generic
// kinds of ObserverOptions, all namespaces. Each resource runs ListWatch on
// its own thread. A JobSet or generic kind a cluster does not serve (404: its
// CRD is not installed there) counts as listed and empty; one it does not
// let gantry list (403) holds the jobs of that kind only (KindRefusals).
//
// Thread-safety: every public method is safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/clock.h"
#include "gantry/common/shared_empty.h"
#include "gantry/inventory/cluster_config.h"
#include "gantry/inventory/kubeconfig.h"

namespace gantry::dispatch {

// A Kueue Workload copy as observed.
struct ObservedWorkload {
  std::string ns;
  std::string name;
  std::string k8s_uid;        // metadata.uid (for delete preconditions)
  std::string resource_version;  // metadata.resourceVersion (the gate patch's precondition)
  std::string job_uid;        // label gantry.dev/job-uid
  int64_t epoch = 0;          // annotation gantry.dev/epoch (0 when missing/unparsable)
  bool quota_reserved = false;  // condition QuotaReserved=True
  bool admitted = false;        // condition Admitted=True
  int64_t admitted_ms = 0;      // its lastTransitionTime (0: not admitted, or none given)
  bool evicted = false;         // condition Evicted=True
  // lastTransitionTime of condition Evicted, whatever its status (0: none).
  // Kueue sets Evicted back to False (reason QuotaReserved) when it admits
  // an evicted Workload again: this time is what tells, afterwards, that
  // the job was stopped and started over in place.
  int64_t evicted_changed_ms = 0;
  bool finished = false;        // condition Finished=True
  bool active = true;           // spec.active (false: deactivated, e.g. an admission check Rejected)
  bool check_failed = false;    // an admission check in status.admissionChecks is Retry or Rejected
  bool gated = false;           // spec.preemptionGates names kPreemptionGate
  bool gate_open = false;       // status.preemptionGates shows kPreemptionGate Open
  // The other entries of status.preemptionGates (other controllers' gates),
  // which the gate patch, replacing the list, must keep; null when none.
  nlohmann::json other_gate_states;
  // Pending, and Kueue says a closed preemption gate holds it back: it would
  // preempt (QuotaReserved reason PreemptionGated, KEP-8303).
  bool held_by_gate = false;
  // Pending while the workloads it preempted stop (QuotaReserved reason
  // WaitingForPreemptedWorkloads where Kueue sets it, else its message
  // "... Pending the preemption of N workload(s)").
  bool preempting = false;
  // Why Kueue itself deactivated the copy, for good: "MaximumExecutionTimeExceeded"
  // (its spec.maximumExecutionTimeSeconds ran out) or "RequeuingLimitExceeded"
  // (waitForPodsReady's backoff limit), read from Evicted's reason
  // DeactivatedDueTo<cause>, or from a DeactivationTarget condition; "" for
  // any other eviction or deactivation.
  std::string deactivated_for;
  std::string reason;         // reason of Evicted (if evicted) or Finished (if finished), else of QuotaReserved
  std::string message;        // message of the same condition
};

enum class RemoteJobState { kSuspended, kRunning, kSucceeded, kFailed };

// A real job (batch/v1 Job, JobSet, or a watched generic kind) as observed.
struct ObservedJob {
  std::string kind;           // "Job" | "JobSet" | a generic kind
  std::string api_version;    // its group/version ("" = batch/v1 for a Job, jobset.x-k8s.io/v1alpha2 for a JobSet)
  std::string ns;
  std::string name;
  std::string k8s_uid;
  std::string job_uid;
  int64_t epoch = 0;
  int64_t created_ms = 0;     // metadata.creationTimestamp (whole seconds; 0 when missing)
  RemoteJobState state = RemoteJobState::kSuspended;
  // Complete/Completed=True -> kSucceeded, Failed=True -> kFailed, else
  // spec.suspend false -> kRunning, else kSuspended.
  std::string reason;         // the deciding condition's reason, if any
  std::string message;
  std::string summary;        // e.g. "active 2, succeeded 0, failed 0" (Job status counts); "" for generic kinds
  // Ended: when, by the cluster's clock (the deciding condition's
  // lastTransitionTime; 0 when none is given).
  int64_t ended_ms = 0;
  // metadata.deletionTimestamp set: being deleted, its pods stopping (a
  // foreground delete keeps it until they are gone).
  bool deleting = false;
};

// A kind run by the generic adapter (any kind with spec.suspend, its pod
// sets given in the job document) that the observer watches like Jobs.
struct GenericKind {
  std::string api_version;  // group/version, e.g. trainer.kubeflow.org/v1alpha1
  std::string kind;         // e.g. TrainJob
  bool operator==(const GenericKind&) const = default;
};

// What one cluster shows of one job.
struct ClusterObservation {
  std::vector<ObservedWorkload> workloads;
  std::vector<ObservedJob> jobs;
};

// The kind of a job's real object (its template's apiVersion and kind):
// which of a cluster's watched resources must have listed before the
// absence of the job's objects there means something.
struct JobKind {
  std::string api_version;
  std::string kind;
};

// What the watches show of one job.
struct JobObservation {
  // Its objects, by cluster: only the clusters that show some.
  std::map<std::string, ClusterObservation> clusters;
  // The watched clusters whose view is synced for this job (see the header
  // comment): their Workloads and the resource of the job's kind have
  // listed. Only there, and only when not behind (below), does the absence
  // of an object mean something. Another kind's view does not count: a
  // cluster whose JobSets cannot be listed is synced for its Jobs. Shared
  // by every reader and replaced when a cluster's state changes; never null.
  std::shared_ptr<const std::set<std::string>> synced = SharedEmpty<std::set<std::string>>();
  // The watched clusters whose view may be behind for this job (its
  // Workloads or its kind's): a watch or relist there failed since the last
  // list, so an object created meanwhile may not show. Their view still
  // shows what it held, but absence there proves nothing.
  std::shared_ptr<const std::set<std::string>> behind = SharedEmpty<std::set<std::string>>();
  // The watched resource of the job's kind ("jobs", "jobsets", a generic
  // kind's "Kind.group/version"), or "" when its kind is not watched (only
  // its Workloads count then).
  std::string resource;
  // Finished Workload copies of the job that their clusters deleted, as
  // their last watch event showed them, by cluster (the latest last): the
  // observer's memory of the last 15 minutes, lost at a restart.
  std::map<std::string, std::vector<ObservedWorkload>> finished_gone;
};

struct ObservedCluster {
  std::string name;
  inventory::KueueApiVersion kueue_version = inventory::KueueApiVersion::kV1beta2;
  inventory::ClusterCredentials credentials;
};

struct ObserverOptions {
  std::string origin = "gantry";  // label selector: kueue.x-k8s.io/multikueue-origin=<origin>
  int watch_timeout_seconds = 10;  // server-side end of each watch, then resumed
  // A watch stream silent this much longer than watch_timeout_seconds is
  // declared dead, and the view behind until the next list.
  static constexpr std::chrono::seconds kIdleMargin{30};
  std::chrono::milliseconds SilentWatchFoundAfter() const {
    return std::chrono::seconds(watch_timeout_seconds) + kIdleMargin;
  }
  std::chrono::milliseconds request_timeout{10'000};
  std::chrono::milliseconds max_backoff{10'000};
  // Watched as well as Jobs and JobSets: their jobs go Running, finish and
  // are withdrawn as a Job does. A generic kind not listed here is not seen:
  // its job finishes when its Workload does, and its object stays behind.
  std::vector<GenericKind> generic_kinds;
  // How long a resource's lists may answer errors other than 401 and 403
  // (and 404, for an optional kind), none succeeding, before the cluster
  // reports it as a refusal (WatchRefusals for Workloads or Jobs,
  // KindRefusals for an optional kind): a blip is not the jobs' news, a
  // broken conversion webhook is.
  std::chrono::milliseconds list_errors_told_after{60'000};
  // How often a JobSet or generic kind that a cluster does not serve (404:
  // its CRD may be installed later) or does not let gantry list (403: it
  // may be granted later) is asked again.
  std::chrono::milliseconds unserved_recheck{60'000};
  // Stamps when a view fell behind (ViewBehind) and times list errors; must
  // outlive the observer. nullptr: the system clock.
  const Clock* clock = nullptr;
};

class ClusterObserver {
 public:
  // What happened to the job's object: it appeared (an ADDED event), it
  // changed (MODIFIED, or anything a relist found), or it left the view (a
  // DELETED event, or the labels that select it were removed).
  enum class Change { kAppeared, kChanged, kGone };
  struct Observed {
    std::string job_uid;
    std::string cluster;
    const char* kind = "";  // kWorkload, or kJob for the real job (Job or JobSet): remote_objects.h
    Change change = Change::kChanged;
    // kAppeared only: the object's epoch, and whether it appeared as created
    // (a Workload with no condition set, a suspended job), so that seeing it
    // tells nothing a create's answer did not.
    int64_t epoch = 0;
    bool as_created = false;
    // kChanged only: the real job's status summary alone changed (its pod
    // counts, which `gantry status` shows and nothing is decided on).
    bool status_only = false;
  };
  using OnChange = std::function<void(const Observed& what)>;

  ClusterObserver(ObserverOptions options, OnChange on_change);
  ~ClusterObserver();  // Stop()s

  // How many resources it watches in each cluster under these options (a
  // thread, and a list's and a watch's connection, each).
  static std::size_t WatchedKinds(const ObserverOptions& options);

  // Makes the watched set equal `clusters`: starts watches for new names,
  // stops and forgets removed ones, restarts those whose credentials or
  // Kueue version changed. Call at start and after every inventory reload.
  void SetClusters(const std::vector<ObservedCluster>& clusters);
  void Stop();

  // What the watched clusters show of job_uid, whose real object is of
  // `kind` (which selects JobObservation::synced and behind; the default,
  // a kind not watched, counts the Workloads only). Costs what the job has,
  // not what the fleet has: asks only the views that hold its objects.
  JobObservation ForJob(const std::string& job_uid, const JobKind& kind = {}) const;
  // Every watched resource of the cluster has listed.
  bool Synced(const std::string& cluster) const;
  // The watched resources of the cluster that have not listed (by name:
  // "jobsets"); empty for a cluster not watched.
  std::set<std::string> Unlisted(const std::string& cluster) const;
  // Changes each time the set of the cluster's resources that have listed
  // changes (0: never listed anything, or not watched); never repeats a
  // value, even for a cluster removed and added again: a reader that
  // compares two looks learns of a change it missed (listed and refused
  // again between them).
  uint64_t ListedChanges(const std::string& cluster) const;
  // Its Workloads and Jobs have listed (the resources every cluster must
  // let gantry list; an optional kind's do not count).
  bool SyncedForJobs(const std::string& cluster) const;
  // The resource (by name: "jobsets") has listed there; true for a
  // resource not watched (a generic kind since removed): nothing to list.
  bool Listed(const std::string& cluster, const std::string& resource) const;
  bool Behind(const std::string& cluster) const;  // see JobObservation::behind
  // Which of the cluster's watched resources are behind (their names, e.g.
  // "workloads"), and since when (ObserverOptions::clock ms, the earliest): empty when
  // the view is current. For operators: gantry clusters and /metrics.
  struct BehindView {
    std::vector<std::string> resources;
    int64_t since_ms = 0;
  };
  BehindView ViewBehind(const std::string& cluster) const;
  // Marks the cluster's view behind and has each of its watches list again:
  // at once if waiting out a backoff, else at the watch's next clean end
  // (watch_timeout_seconds). For a cluster that answers again after an
  // outage, whose streams may have died silently or be backing off. With
  // listed_since_ms > 0 (ObserverOptions::clock's MonotonicMillis), a resource whose view
  // listed at or after it and is current is left alone (its stream began
  // since: nothing there for a relist to replace), as is a kind not served
  // there. Returns how many resources were asked to list again.
  std::size_t Relist(const std::string& cluster, int64_t listed_since_ms = 0);
  // Every cluster that keeps gantry from listing its Workloads or Jobs,
  // and why (its last list answered 403; or the lists have answered errors
  // for list_errors_told_after: a 500 or a 404 for Workloads, say; the
  // cluster is not synced meanwhile). Until then such errors leave the view
  // behind (or not listed yet).
  std::map<std::string, std::string> WatchRefusals() const;
  // An optional kind (JobSets, a generic kind) whose last list answered
  // 403, or whose lists have answered other errors (not 401 or 404) for
  // list_errors_told_after, none succeeding: told to the jobs of that kind only (a JobSet webhook broken
  // in one cluster holds its JobSets, not its Jobs). By cluster, then
  // resource name ("jobsets"), why.
  std::map<std::string, std::map<std::string, std::string>> KindRefusals() const;
  // The resource gantry lists a job of this kind by when it is an optional
  // one ("jobsets", a generic kind's plural); "" for a Job or an unknown kind.
  std::string OptionalResourceOf(const JobKind& kind) const;
  // Every job uid with at least one object in some cluster (start-up garbage collection).
  std::vector<std::string> AllJobUids() const;
  // Every job uid with an object in the cluster's view: the jobs to look at
  // again when it becomes reachable, whether or not a row of theirs names
  // it (a finished job's rows for a cluster removed from the inventory are
  // gone, while what it ran there was left running).
  // Sorted, each once; copied out under the observer's lock, sorted after.
  std::vector<std::string> JobUidsIn(const std::string& cluster) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Exposed for tests: decode one object. ParseJob's summary counts a Job's or
// a JobSet's pods; other kinds have none (their conditions decide the state).
std::optional<ObservedWorkload> ParseWorkload(const nlohmann::json& object);
std::optional<ObservedJob> ParseJob(const std::string& kind, const nlohmann::json& object);

}  // namespace gantry::dispatch
