// Decide(): the dispatch protocol (DESIGN.md) as a pure function. Given one
// job as stored, its recorded intents, what every cluster shows of it and
// the state of the fleet, it returns a Plan: at most one guarded store write,
// then the remote actions that write allows, then when to look again.
//
// The engine applies the write first and runs the actions only once it is
// durable, so every create is preceded by its recorded intent. Deletes of
// stale objects (an older epoch, a job outside the lease owner, anything of
// a finished job) need no new intent: they are re-derived from the same
// state after a crash, and a repeated delete is harmless.
//
// The ladder (each step returns early; the step's name is in Plan::step):
//     start-listing after the daemon's start (start_listing_ms at most),
//                until every cluster gantry can reach and list is listed: wait
//   0 store-behind a real job of the job's not being deleted, of an epoch
//                the store has not reached (or leased where the store has no
//                lease): the store went back in time (a restored backup);
//                that run takes the lease, with a StoreBehind warning
//   1 earlier-run Queued or Nominating (no lease), and its run of an
//                earlier dispatch seen succeeded (out of sight when the
//                job was sent back): Succeeded, not run again
//     fence      objects of an older epoch, or a job outside the owner: delete
//   2 finished   final phase: withdraw everything, drop confirmed intents
//   3 cancel     Cancelling: withdraw everything, then Cancelled
//                (withdraw: delete what the views show; in a cluster that
//                answers but refuses gantry the list, by name: kDeleteUnseen)
//   4 nominate   Queued: place, then Nominating at epoch+1 (past any epoch
//                its objects carry) with a Workload
//                intent per candidate (or Unschedulable, or wait)
//   5 lease      Nominating and a copy admitted at this epoch (leaseOn
//                QuotaReserved: holding quota) and not deactivated, evicted
//                or failing an admission check: take the lease
//   6 timeout    Nominating past dispatch.timeoutSeconds: Failed
//   7 widen      Incremental: add the next round's candidates, and a
//                cluster in place of each deactivated copy; AllAtOnce: a
//                copy in each feasible cluster without one, up to
//                maxCopies (one that became feasible after the
//                nomination), unless a copy holds quota; either mode: a
//                feasible cluster not asked yet in place of each that
//                refused its copy (RemoteIntent::refusal); at maxCopies
//                with no copy holding quota, a copy in a cluster placement
//                finds full now moves to a feasible one with room, no
//                workload pending and no copy
//                (unless its preemption gate is open)
//   8 deactivated Nominating and every copy deactivated (an admission check
//                Rejected it): requeue, dispatch again at epoch+1 (the
//                epoch at least redispatch_after_rejection_ms old, doubled
//                per epoch)
//   9 copies     Nominating: create missing copies; withdraw those in a
//                cluster removed, declared lost or cordoned (and requeue when no
//                other copy is left); when every cluster asked refused its
//                copy: Failed with their answers, or wait while a cluster
//                that cannot take the job only for now may later; while no
//                copy holds quota, open one more copy's preemption gate
//                each preemption_gate_ms (best-ranked cluster first)
//  10 owner-lost owner unreachable: wait, then apply onClusterLoss; an
//                owner that answers but refuses gantry's credentials
//                waits longer (credentials_refused_timeout_ms), with a
//                condition saying so, as does an owner that refuses
//                gantry a list of the watched objects (RBAC); an owner
//                declared lost by an operator waits only
//                declared_lost_grace_ms
//  11 evicted    the owner's Workload was evicted or deactivated (or
//                vanished): requeue, or Failed for an at-most-once job
//                (onClusterLoss Fail or Wait)
//  12 finish     the owner's job finished: Succeeded/Failed
//  13 run        create the real job if missing (unless its owner was
//                declared lost: requeued, or Failed if at-most-once);
//                Admitted -> Running
//
// Thread-safety: pure.
#pragma once

#include <algorithm>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/shared_empty.h"
#include "gantry/dispatch/observer.h"
#include "gantry/inventory/cluster_config.h"
#include "gantry/job/job_document.h"
#include "gantry/placement/cluster_queues.h"
#include "gantry/placement/decision.h"
#include "gantry/store/job_store.h"

namespace gantry::dispatch {

// A queued job's message while the inventory holds no cluster at all.
inline constexpr std::string_view kNoClustersMessage = "no clusters known yet";

// What the engine knows of one cluster of the inventory.
struct ClusterFacts {
  bool ready = false;           // health Ready (Decide also requires the observer to have synced it)
  // Length of the current outage, as far as a failed probe has shown it
  // (inventory::ClusterHealth::ShownLostForMs): 0 when none, and 0 until a
  // probe since the daemon started confirms an outage restored from the
  // store. A cluster back since its last probe is not lost on time alone.
  int64_t lost_for_ms = 0;
  // The outage is a refusal: the cluster answers but refuses gantry's
  // credentials (cluster_health.h), so credentials_refused_timeout_ms
  // applies instead of cluster_lost_timeout_ms.
  bool credentials_refused = false;
  // The cluster answers, but refuses gantry a list of its Workloads or Jobs
  // (ClusterObserver::WatchRefusals): not synced, and why.
  std::string watch_refused;
  int64_t watch_refused_for_ms = 0;  // for how long (credentials_refused_timeout_ms applies)
  // The same for an optional kind's lists (ClusterObserver::KindRefusals),
  // by resource name ("jobsets"): only the jobs of that kind are out of
  // reach (DecideInput::resource).
  struct KindRefusal {
    std::string why;
    int64_t for_ms = 0;
  };
  std::map<std::string, KindRefusal> kind_refused;
  // For how long its view has been behind (ClusterObserver::ViewBehind; 0:
  // it is not), as of the facts' last refresh.
  int64_t behind_for_ms = 0;
  // Why gantry does not try to reach it at all ("" when it does): its file
  // in clusters.d is refused, or its credentials do not load
  // (inventory::ClusterView::Usable). Not ready then, with no loss clock.
  std::string unusable;
  inventory::ClusterConfig config;
  // How far its clock is ahead of gantry's, in ms (ClusterView::clock_offset_ms;
  // unset until a probe since the daemon's start told it): a time it wrote,
  // less this, is on gantry's clock.
  std::optional<int64_t> clock_offset_ms;
  // Its Kueue's queues and WorkloadPriorityClasses as the last probe read
  // them (null: never read): the value a copy of a job that names a class
  // carries there (PriorityClassValue).
  std::shared_ptr<const placement::ClusterQueues> queues;
};

// The inventory as the engine last read it, by cluster name. Read often (by
// every pass) and changed seldom (a refresh), so a pass shares the engine's
// copy instead of copying it: at 100 clusters the copy was most of a pass.
using FleetFacts = std::map<std::string, ClusterFacts>;

struct DecideOptions {
  std::string origin = "gantry";
  int64_t cluster_lost_timeout_ms = 15 * 60'000;
  // The same for an owner that answers but refuses gantry's credentials
  // (credentialsRefusedTimeoutSeconds): its jobs most likely run on, so an
  // expired login waits longer before they are dispatched again; 0 = never.
  int64_t credentials_refused_timeout_ms = 24 * 3600'000;
  // The same for an owner declared lost by an operator (declaredLost):
  // declaredLostGraceSeconds.
  int64_t declared_lost_grace_ms = 60'000;
  // How often a job whose only business left is with clusters declared lost
  // and silent looks again. The health watch wakes it when one answers; this
  // is the backstop (a wake missed, an entry since removed).
  int64_t lost_recheck_ms = 300'000;
  bool lease_on_quota_reserved = false;  // take the lease at QuotaReserved instead of Admitted
  int64_t resync_ms = 30'000;            // look again this often while nothing happens
  // The same for a job whose only business is with its clusters: copies
  // pending admission with no timer of its own due sooner, or a real job
  // running. The changes it waits for then wake it (a watch event, a health
  // change), so this is a backstop, and the engine stretches it for a large
  // backlog (BackstopMs); only an AllAtOnce widening to a cluster whose
  // quota was freed elsewhere waits for it.
  int64_t backstop_ms = 30'000;
  int64_t retry_ms = 2'000;              // after an unreachable cluster or a failed action
  // The shortest epoch whose every copy was deactivated (an admission check
  // Rejected it everywhere) before the job is dispatched again: a check that
  // rejects at once would otherwise start a new epoch on every pass. It
  // doubles with each epoch of the job, up to the max: a job that every
  // cluster keeps rejecting is dispatched less and less often, instead of
  // adding copies and events every 10 s for as long as it is queued.
  // gantry.yaml: rejectionBackoffSeconds, rejectionBackoffMaxSeconds.
  int64_t redispatch_after_rejection_ms = 10'000;
  int64_t redispatch_after_rejection_max_ms = 600'000;
  // How long a cluster that refused a job's real job (403 or 404: RBAC, a
  // policy webhook, its kind or namespace missing there) is left out of
  // that job's dispatches: long enough for the job to run elsewhere, short
  // enough that a fix there is taken up.
  int64_t job_refusal_hold_ms = 600'000;
  // How long a job that finished in its owner (Succeeded or Failed there)
  // keeps its Workload and real job in that cluster, from the job's
  // finished_ms, so that users can look at them (pods, logs) with kubectl.
  // 0: deleted at once. Cancelled jobs and objects elsewhere never wait.
  // A job's own spec.finishedRetentionSeconds takes the place of this.
  int64_t finished_retention_ms = 0;
  // Preemption gates (preemptionGateSeconds). > 0: Workload copies in
  // v1beta2 clusters carry the gate kPreemptionGate, closed, so Kueue admits
  // them only where they fit without preempting; while no copy holds quota,
  // one gate opens a period after the nomination and each next a period
  // after the one before, or later while the cluster whose gate opened says
  // it waits for its victims to stop (at most four periods; Ladder::Gates),
  // so that one preemption finishes before another cluster may start one
  // (MultiKueue lets every candidate preempt at once). 0: no gates.
  int64_t preemption_gate_ms = 60'000;
  // Where a cluster answers but refuses gantry the list of a kind, a
  // withdrawn row's object is read by name (kDeleteUnseen). A NotFound that
  // names it confirms it gone, and the row is dropped, only once the row
  // has been withdrawn this long (notFoundConfirmsAfterSeconds): by then no
  // create of it that gantry sent can still be at work in the API server
  // (whose own request timeout is a minute by default) and land after.
  int64_t not_found_confirms_after_ms = 120'000;
  // How long a watch stream may stay silent before it is found dead and its
  // view behind (ObserverOptions::SilentWatchFoundAfter): until then a
  // stalled stream's view still counts as current. An absence the view
  // "confirms" is trusted only once a create is older than this as well.
  int64_t silent_watch_found_ms = 40'000;
  // How old a create must be before the view's not showing its object
  // confirms it is not there: the later of the two above.
  int64_t AbsenceConfirmedAfterMs() const { return std::max(not_found_confirms_after_ms, silent_watch_found_ms); }
  // A real job still suspended this long after its lease, under a copy its
  // cluster admitted: Kueue unsuspends such a job within seconds, so it
  // most likely never will (its kind's integration is off there, or its
  // webhook refused the prebuilt Workload). The job's message and a
  // NotStarted event say so; nothing else changes.
  int64_t not_started_warn_ms = 300'000;
  // How long a verdict that would end a job holding no lease (its dispatch
  // timeout, Unschedulable) waits for a view behind to list again, while the
  // job's own earlier run there, not seen ended, may have succeeded
  // (Ladder::WaitForRelist): a relist comes within seconds of the cluster
  // answering again, and one that keeps failing must not hold it for good.
  int64_t relist_wait_ms = 120'000;
  // After the daemon's start, how long at most a pass waits for every
  // cluster gantry can reach to be listed (Ladder::AwaitFirstListing): the
  // store may be behind the clusters (a database restored from a backup),
  // and a run of the history it lost, in a cluster not listed yet, would be
  // missed by what the pass decides (a lease elsewhere, a run taken for
  // vanished). Whatever its probe says: a slow cluster's probe may time out
  // while its lists are on their way.
  int64_t start_listing_ms = 15'000;
};

struct DecideInput {
  const JobRecord* job = nullptr;
  const JobSpec* spec = nullptr;
  std::vector<RemoteIntent> intents;
  std::map<std::string, ClusterObservation> observed;  // the clusters that show objects of the job
  // The watched clusters whose view is synced for the job's kind
  // (JobObservation::synced); never null.
  std::shared_ptr<const std::set<std::string>> synced = SharedEmpty<std::set<std::string>>();
  // The clusters whose view may be behind (JobObservation::behind): an
  // object's absence there confirms nothing; never null.
  std::shared_ptr<const std::set<std::string>> behind = SharedEmpty<std::set<std::string>>();
  // The watched resource of the job's kind (JobObservation::resource): the
  // one of ClusterFacts::kind_refused that concerns it; "" for none.
  std::string resource;
  // Finished Workload copies of the job deleted in their cluster, as last
  // seen (JobObservation::finished_gone): a job whose Workload and real job
  // its owner deleted once it ended still gets its result.
  std::map<std::string, std::vector<ObservedWorkload>> finished_gone;
  std::shared_ptr<const FleetFacts> clusters = SharedEmpty<FleetFacts>();  // the inventory; never null
  // Only for Queued and Nominating jobs (the engine calls Place() then).
  std::optional<placement::Decision> placement;
  // Placement's maxCopies: the most Workload copies an AllAtOnce job keeps
  // out at once (step 7 tops them up to it as clusters become feasible).
  size_t max_copies = 8;
  // (cluster, kind) objects of the current epoch this engine created and has
  // not seen yet (expectations.h): not created again.
  std::set<std::pair<std::string, std::string>> expected;
  // (cluster, epoch) of real jobs this engine created at any epoch, less than
  // silent_watch_found_ms ago, and has not seen since (Expectations::
  // UnseenRuns): their withdrawn rows are not confirmed gone by a view that
  // does not show them, which may come from a watch gone silent.
  std::set<std::pair<std::string, int64_t>> unseen_runs;
  // The same for the job's Workload copies (Expectations::UnseenCreates):
  // a loser's copy such a view hides holds its withdrawn row, and is read
  // and deleted by name once its expectation has lapsed (Ladder::CreatedUnseen).
  std::set<std::pair<std::string, int64_t>> unseen_copies;
  // (cluster, kind) of creates this engine made less than the expectations'
  // ttl ago, at any epoch, and when each stops being so (Expectations::Young;
  // read only when one of the sets above is not empty): not read and deleted
  // by name yet, and the job is looked at again then.
  std::map<std::pair<std::string, std::string>, int64_t> created_lately;
  // (cluster, kind) of withdrawn rows whose last lookup by name
  // (kDeleteUnseen) found the object not there, and when (UnseenAsks, the
  // engine's memory: after a restart it is read again).
  std::map<std::pair<std::string, std::string>, int64_t> read_gone;
  // For how long the tries to create the real job in its owner at the
  // job's epoch have failed in a row (ActionError: a 5xx, a 429, no answer,
  // not sent for want of a connection), from the first of them to the
  // latest; 0 when the last try did not fail, was refused, or is not
  // recent, or the job is seen there. An owner whose probes and watches
  // answer while its writes do not (etcd without quorum, a webhook that
  // times out) counts as reachable, so its outage clock never runs: this
  // one does, and cluster_lost_timeout_ms applies to it
  // (Ladder::CreateKeepsFailing). The engine's memory: a restart starts it
  // over.
  int64_t job_create_failing_ms = 0;
  std::string job_create_error;  // the last of those tries' answers (or why none came)
  int64_t now_ms = 0;
  // When the daemon started (wall clock): a Queued job's wait for a cluster
  // that may take it counts from then at the earliest, so that a job that
  // waited while the daemon was down (or whose clusters are not probed yet)
  // is not failed at once by its dispatch timeout.
  int64_t started_ms = 0;
  // How long ago the daemon started, on the monotonic clock: what the
  // start's waits measure (a wall clock stepped back an hour would hold
  // every job that long). Long ago unless set.
  int64_t since_start_ms = int64_t{1} << 50;
  // False from the daemon's start until the first reload of the inventory:
  // an owner missing from it then may only be a file missing a moment (a
  // clusters.d not mounted yet), not a removal, so its jobs are held, not
  // lost; a reload is the operator's word that the inventory is as meant.
  bool inventory_confirmed = true;
  DecideOptions options;
};

// kOpenGate: a merge patch of a Workload copy's status that opens its
// preemption gate (OpenGatePatch).
// kDeleteUnseen: a delete for an object the job's view cannot show (its
// cluster answers, but has refused gantry the list of that kind, or its
// lists have kept failing: Ladder::AnswersUnseen). The engine GETs it by name and deletes it,
// with its uid as the precondition, only if it carries the job's uid label
// and gantry's origin label at an epoch no newer than Action::epoch.
enum class Verb { kCreate, kDelete, kOpenGate, kDeleteUnseen };

struct Action {
  Verb verb = Verb::kCreate;
  std::string cluster;
  std::string kind;        // "Workload" | "Job"
  std::string ns;
  std::string name;
  int64_t epoch = 0;        // kDeleteUnseen: the newest epoch of the job's object it may delete
  std::string path;        // collection path for create, object path for the deletes, status path for kOpenGate
  nlohmann::json body;     // the object, for create; the patch, for kOpenGate
  std::string precondition_uid;  // delete only this incarnation ("" = any)
  // The deletes: propagationPolicy Foreground instead of Background. For a
  // real job's run that the job moves on from while it is to run again
  // (requeued, or an older epoch's fenced; not once it is over or
  // cancelled): its object stays, marked for deletion, until its pods are
  // gone, so that a view that shows it gone shows its run stopped (step
  // 13's gate waits for that).
  bool foreground = false;
  // A delete of an earlier epoch's run while the job's new run holds the
  // lease (fencing): once the cluster carries it out, the object its answer
  // holds, as it was then, is read, and a run that ended there is told on
  // the job (EarlierRunEnded: the job ran twice). The answer, not the view:
  // a view behind at the cluster's return may still show the run running.
  bool tell_end_when_deleted = false;
};

struct Plan {
  std::string step;                       // the ladder step that decided
  std::optional<DispatchUpdate> write;    // applied first; actions run only if it commits
  std::vector<Action> actions;
  int64_t requeue_ms = -1;                // -1 = only when something changes
  bool backstop = false;                  // requeue_ms is DecideOptions::backstop_ms: nothing else is due
  // Step "lease": the other clusters whose copy had also won admission when
  // the lease went to write->cluster (their copies are withdrawn).
  std::vector<std::string> lease_losers;
  // Step "start-listing": the clusters waited for (for the engine's log).
  std::vector<std::string> waiting_for;
};

Plan Decide(const DecideInput& in);

// The clusters a job that is neither finished nor cancelling waits for
// just after the daemon's start (step start-listing): every one gantry can
// list that is not listed yet, while since_start_ms is below
// start_listing_ms. Empty: no wait. The engine places no job meanwhile
// (Decide would not read the placement).
std::vector<std::string> UnlistedAtStart(const DecideInput& in);

// The event's message for Action::tell_end_when_deleted: job's earlier run
// j in cluster, seen ended, deleted while the job's run at its epoch goes
// on in its owner.
std::string EarlierRunEndedText(const JobRecord& job, const std::string& cluster, const ObservedJob& j);

// The clusters of in.clusters where an earlier run of the job may still be
// (seen there, or its delete not confirmed): no Workload copy of the job
// goes there meanwhile, as Decide's passes see it (for gantry explain).
std::vector<std::string> EarlierRunsHoldingCopies(const DecideInput& in);

// The backstop for a pass (DecideOptions::backstop_ms): resync_ms, or
// longer when the `waiting` jobs on it, each looked at once per period,
// would take more than `passes_per_s` passes a second between them; never
// longer than kMaxBackstopMs (nor shorter than resync_ms). A backlog of
// 100,000 jobs at rest then costs 100 passes a second, not 3,300, and a
// wake-up missed there is repaired within 1,000 s instead of 30.
inline constexpr int64_t kMaxBackstopMs = 3'600'000;
int64_t BackstopMs(int64_t resync_ms, size_t waiting, int passes_per_s);

// When a job whose pass had an action fail (a cluster's 429 or 5xx, no
// answer, or an action held back) is looked at again: after its
// `failures`-th failure in a row, kFirstActionRetryMs doubled per failure
// up to retry_ms, and not before the cluster's Retry-After, up to
// retry_ms (one cluster's long Retry-After must not hold back the job's
// actions in the others). A transient error costs a quarter of a second,
// not retry_ms; a cluster that keeps failing is asked every retry_ms. (A
// watch event may still wake the job sooner.)
inline constexpr int64_t kFirstActionRetryMs = 250;
int64_t ActionRetryMs(int failures, int64_t retry_ms, int64_t retry_after_ms);

// Whether plan's write may be lost in a power failure (DispatchUpdate::
// durable false: no fsync of its own). True only when nothing remote depends
// on it and a pass after the loss writes it again from what it observes:
// no action follows it, it moves no epoch, owner, lease or nomination, its
// one phase change is Admitted -> Running (the running job is observed
// again), it records no intent, and it drops only intents already marked
// absent (their objects confirmed gone: after a loss they are looked for,
// not found, and dropped again). For an at-most-once job Running is kept
// durably too: it is what says the job ran (step 11: a job seen running and
// then gone is not created again), and a job deleted in its cluster after
// the loss would otherwise be created, and run, a second time.
bool MayBeLost(const Plan& plan, const std::vector<RemoteIntent>& intents, bool at_most_once = false);

// What becomes of a job whose owner refused the create of its real job
// for that cluster alone (a 403 from RBAC or a policy webhook, a 404 for a
// kind or namespace missing there): dispatched again elsewhere at the next
// epoch (kMove), failed (kFail), or left as it is while the owner's view
// catches up (kWait).
enum class JobRefusalVerdict { kMove, kFail, kWait };
struct JobRefusalFacts {
  JobPhase phase = JobPhase::kAdmitted;
  bool at_most_once = false;
  // The row of the real job there: when its create was confirmed (0: not).
  int64_t created_ms = 0;
  // Since when an earlier create of it there, at this epoch, may have landed
  // unseen: its answer was never read (a timeout, a connection lost) or was
  // a 5xx, or it was leased before the daemon last started (a create sent
  // before a crash). 0: every earlier try was answered "not created".
  int64_t unanswered_since_ms = 0;
  // The owner's view is current (reachable, its watch not behind) and shows
  // no real job of this one there.
  bool view_confirms_absence = false;
  // The job's kind is watched there: a job that landed can show at all.
  bool kind_watched = true;
  int64_t now_ms = 0;
};
struct JobRefusalJudgement {
  JobRefusalVerdict verdict = JobRefusalVerdict::kFail;
  int64_t wait_ms = 0;  // kWait: look again after this
};
// A job that runs at least once (onClusterLoss Requeue) moves: a create that
// landed unseen is another epoch's object, fenced once seen. An at-most-once
// job moves only while nothing of it can have started: Admitted, no create
// confirmed, and no create that may have landed unseen, unless the owner's
// view has confirmed its absence after the later of notFoundConfirmsAfter
// and DecideOptions::silent_watch_found_ms from the latest such create (by then a landed
// one would show, or its watch would have been found dead); until then it
// waits. Of a kind not watched there nothing would ever show: it fails.
// Else it fails.
JobRefusalJudgement JudgeJobRefusal(const JobRefusalFacts& f, const DecideOptions& opt);

// Whether a real job's row keeps its cluster out of the job's dispatches
// now: withdrawn, with a refusal (the cluster refused the create) or a hold
// (it failed every create: RemoteIntent::hold), less than hold_ms after the
// row's updated_ms, while the job is still to be dispatched or running.
// The engine's passes (Ladder::JobRefusalIn) and the placement route use it.
bool HoldsClusterOut(const RemoteIntent& i, JobPhase phase, int64_t now_ms, int64_t hold_ms);
// Why such a row holds its cluster out: its hold, else its refusal.
inline const std::string& HeldOutWhy(const RemoteIntent& i) { return i.hold.empty() ? i.refusal : i.hold; }

// Adds to u every present intent, marked absent (the write withdraws the
// objects), except those of the (cluster, kind) pairs in keep.
void MarkIntentsAbsent(DispatchUpdate& u, const std::vector<RemoteIntent>& intents,
                       const std::set<std::pair<std::string, std::string>>& keep = {});

// The job's Workload copy or real job as an action, for the engine's
// "already exists" check and for tests.
Action CreateWorkloadAction(const DecideInput& in, const std::string& cluster, int64_t epoch);
// The value in `cluster` of the WorkloadPriorityClass the job names, as its
// copy there carries it; nullopt when the job names none, or the cluster's
// classes are unknown or lack it (Ladder::ClassValueMissing: no copy goes).
std::optional<int32_t> PriorityClassValue(const DecideInput& in, const std::string& cluster);
// The same for the class `name` the job's template names, read already.
std::optional<int32_t> PriorityClassValue(const DecideInput& in, const std::string& cluster,
                                          const std::string& name);
Action CreateJobAction(const DecideInput& in, const std::string& cluster, int64_t epoch);
// Opening the preemption gate of copy w (this incarnation's path).
Action OpenGateAction(const std::string& cluster, inventory::KueueApiVersion version, const ObservedWorkload& w,
                      int64_t epoch, int64_t now_ms);
// Deleting an observed object (this incarnation only); also the garbage
// collector's actions.
Action DeleteWorkloadAction(const std::string& cluster, inventory::KueueApiVersion version,
                            const ObservedWorkload& w);
Action DeleteJobAction(const std::string& cluster, const ObservedJob& j);
// The kDeleteUnseen of the object of row i (its path from the cluster's
// Kueue version, or from the job's template for the real job; "" when the
// template's kind names no path).
Action DeleteUnseenAction(const DecideInput& in, const RemoteIntent& i);
// The observed job's group/version (tests may leave it unset for a Job or a JobSet).
std::string ApiVersionOf(const ObservedJob& j);
// The Kueue API version the inventory names for cluster; v1beta2 when the
// cluster is not (or no longer) in it.
inventory::KueueApiVersion KueueVersionOf(const FleetFacts& clusters,
                                          const std::string& cluster);

}  // namespace gantry::dispatch
