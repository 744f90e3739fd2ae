// Engine: the dispatch protocol running against real clusters. It wires the
// pure Decide() to the store (guarded writes), the fleet (health, capacity,
// credentials), the observer (what each cluster shows) and one bounded pool
// of Kubernetes clients per cluster, and runs it from the reconciler's
// workers. One pass over a job:
//
//   read job + intents + observations + fleet  ->  Decide()
//   -> apply the plan's write (durable, guarded) -> run its actions -> requeue
//
// A create answered 409 AlreadyExists is checked: an object with our origin
// label and job uid is ours (success; an older epoch is fenced next pass);
// anything else means the name is taken by someone else's object, and the
// job fails with that message rather than adopting it.
//
// A garbage collector runs every gc_interval: objects with our origin label
// of a job the store purged are deleted. Those of a job uid the store never
// had (another gantry with the same origin, or a store that was replaced)
// are left alone, and logged once: gantry deletes only what it made.
//
// Thread-safety: Start/Stop from one thread; InventoryChanged from any (a
// SIGHUP's reload, the API's), one at a time; passes run on
// the reconciler's workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "gantry/common/clock.h"
#include "gantry/common/log_limiter.h"
#include "gantry/common/stop_signal.h"
#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/expectations.h"
#include "gantry/dispatch/engine_metrics.h"
#include "gantry/dispatch/fresh_jobs.h"
#include "gantry/dispatch/job_intake.h"
#include "gantry/dispatch/known_jobs.h"
#include "gantry/dispatch/observer.h"
#include "gantry/dispatch/reconciler.h"
#include "gantry/dispatch/spec_cache.h"
#include "gantry/dispatch/unseen_asks.h"
#include "gantry/inventory/fleet.h"
#include "gantry/kube/client_pools.h"
#include "gantry/placement/placement_options.h"
#include "gantry/store/cluster_state_store.h"
#include "gantry/store/job_store.h"

namespace gantry::dispatch {

class Stragglers;  // stragglers.h

struct EngineOptions {
  DecideOptions decide;
  int workers = 4;                 // reconciler threads (passes block on cluster calls)
  // Passes at work at once: at least this many (0 = workers), up to
  // `workers` while jobs wait for a pass and the clusters answer within
  // twice their own round trip (with pool.min_size below pool.size; else
  // always `workers`). Nearby clusters answer in well under a millisecond,
  // and more passes at once there only share the cores; distant ones need
  // a pass waiting on each round trip.
  int min_active_passes = 0;
  kube::ClientPoolOptions pool;    // per cluster (its client makes one attempt: see Engine::Engine)
  ObserverOptions observer;
  placement::PlacementOptions placement;
  int64_t fleet_refresh_ms = 200;  // how stale the cached fleet view may be
  int64_t gc_interval_ms = 60'000;
  // Each garbage collection round also deletes the records (and events) of
  // jobs finished longer ago than this whose every object is seen deleted
  // (JobStore::ExpireFinished); 0 keeps them for ever.
  int64_t job_record_retention_ms = 0;
  int64_t health_poll_ms = 500;
  size_t spec_cache_entries = 8192;  // parsed specs kept for the jobs in flight
  size_t fresh_jobs_entries = 4096;  // new jobs held for their first pass (fresh_jobs.h)
  size_t known_jobs_entries = 8192;  // jobs in flight as the engine last wrote them (known_jobs.h)
  int64_t bookkeeping_delay_ms = 200;  // see Engine::Observed
  // How late a running job's new pod counts may show in `gantry status`
  // (Engine::Observed): its pass waits this long for other changes.
  int64_t status_delay_ms = 1'000;
  int64_t expectation_ttl_ms = 10'000;  // how long a call waits for its watch event (expectations.h)
  // The backstop's budget (BackstopMs): past decide.resync_ms x this many
  // jobs on it, each is looked at less often than every resync_ms.
  int resync_passes_per_s = 100;
};

class Engine final : public JobIntake {
 public:
  // metrics may be null; so may cluster_state, where the engine keeps since
  // when each cluster refuses it a watch (without it, a restart starts that
  // clock again).
  Engine(JobStore& store, inventory::Fleet& fleet, const Clock& clock, EngineOptions options,
         EngineMetrics* metrics = nullptr, ClusterStateStore* cluster_state = nullptr);
  ~Engine() override;  // Stop()s

  // Starts watching every cluster, then the reconciler (its start-up scan
  // wakes every unfinished job) and the garbage collector.
  Status Start();
  // A shutdown's first step: no new pass starts (nor a garbage collection
  // round); the passes in hand go on, and their requests' answers are read,
  // while the API drains. Stop then joins them.
  void BeginStop();
  void Stop();
  // After the fleet reloaded its inventory: re-aim the watches and pools,
  // and look at every unfinished job again. The first reload that could
  // read clusters.d confirms the inventory (DecideInput::inventory_confirmed):
  // the owners missing since the start are then removed, and returned is
  // what that does ("" when nothing): a reload's summary (InventoryChange)
  // compares it with the inventory before, where they were missing already.
  // removed: the clusters this reload removed, which were not missing
  // since the start (the reload's own summary names them).
  std::string InventoryChanged(const std::vector<std::string>& removed = {});
  // Why the cluster keeps gantry from listing what it watches there (its
  // Workloads or Jobs, else an optional kind), for the API's view of the
  // cluster: read from the facts the passes read, so that what an operator
  // sees there, the next pass acts on.
  std::string WatchRefused(const std::string& cluster);
  // The resource of the job's kind ("jobsets") when the cluster keeps gantry
  // from listing it (the passes then leave the cluster out of the job's
  // dispatches), else "": for gantry explain, from the same facts.
  std::string KindRefused(const std::string& cluster, const JobKind& kind);
  // The clusters where an earlier run of the job may still be (seen, or its
  // delete not confirmed): the passes send no copy there meanwhile
  // (EarlierRunsHoldingCopies); for gantry explain, from what a pass reads
  // but the creates this engine awaits the sight of.
  // intents: the job's rows, as the caller read them.
  std::vector<std::string> EarlierRunsHolding(const JobRecord& job, std::vector<RemoteIntent> intents);
  // ClusterObserver::ViewBehind, for the API's view of the cluster and its gauge.
  ClusterObserver::BehindView ViewBehind(const std::string& cluster) const { return observer_->ViewBehind(cluster); }
  // The requests the engine allows in flight to the cluster now (its pool's
  // limit; 0 before its first request), for its gauge.
  int ConnectionsLimit(const std::string& cluster);
  // For how long its requests have gone unanswered (kube::ClientPool's
  // stall; -1 while they are answered).
  int64_t RequestsStalledForMs(const std::string& cluster) const;
  // The fleet as the passes' placement sees it (the inventory's snapshots,
  // a cluster that refuses a watch or whose requests stall marked so), at
  // most fleet_refresh_ms old: the passes', and gantry explain's.
  std::shared_ptr<const std::vector<placement::ClusterSnapshot>> Snapshots(int64_t now_ms);
  // Since when (ms) the cluster refuses gantry a watch, as the engine counts
  // it (kept across restarts, noted within a health poll); 0 when not noted.
  int64_t WatchRefusedSince(const std::string& cluster);
  // The owners of Admitted, Running or Cancelling jobs that the inventory the daemon
  // started with lacks, and how many jobs each owned then (counted at
  // Start); {} once a reload confirmed the inventory (their jobs then got
  // their onClusterLoss). One back in the inventory since is the caller's
  // to leave out. Their jobs are held (OwnerHeld): gantry clusters lists
  // them, so that an operator sees what the jobs wait for.
  std::map<std::string, int> OwnersMissingSinceStart();

  // JobIntake, for the API. Wake drops a held new job and invalidates the
  // engine's last write of it (known_jobs.h) before it queues the job:
  // whatever woke it may have changed it in the store.
  void Wake(const std::string& job_uid) override;
  // The same, served ahead of new jobs (job_intake.h).
  void CancelRequested(const std::string& job_uid, std::function<void()> acknowledge) override;
  std::vector<ActionError> ActionErrors(const std::string& job_uid) const override;
  void Created(JobRecord record, std::shared_ptr<JobSpec> spec) override;
  bool WantsSpec() const override { return !fresh_.full() && !no_clusters_.load(); }
  // kNoClustersMessage while the inventory is empty: a job submitted then
  // needs no pass until a cluster appears, and the inventory reload that
  // adds one looks at every queued job.
  std::string FirstMessage() const override;
  // A template of a kind with no adapter (not a Job or JobSet) that
  // ObserverOptions::generic_kinds does not list: unwatched, such a job would
  // never show Running, and its object would stay in its cluster.
  std::optional<FieldError> Refuse(const JobSpec& spec) const override;
  // What the watches show of the job's objects now (remote_view.h).
  std::vector<ObservedObject> RemoteView(const std::string& job_uid) const override;

 private:
  // Whether the observer sees jobs of this template's kind: a Job, a JobSet,
  // or a kind of ObserverOptions::generic_kinds.
  bool Watches(const nlohmann::json& template_object) const;
  Reconciler::PassResult Pass(const std::string& uid);
  // The job changed outside the passes: its held new-job entry and the
  // engine's last write of it no longer stand (fresh_jobs.h, known_jobs.h).
  void DropHeld(const std::string& job_uid);
  // The observer's call: wakes the job at once, or a moment later for
  // bookkeeping.
  void Observed(const ClusterObserver::Observed& what);
  // Drops what the engine holds in memory for a job that needs nothing more
  // (finished and withdrawn, or purged).
  void ForgetJob(const std::string& uid);
  // Why an action can never succeed, so the job must fail instead of
  // retrying: an object gantry did not make holds the name (NameTaken), or
  // the cluster refuses the object itself (Refused).
  struct Refusal {
    std::string reason;   // event reason: NameTaken | Refused
    std::string message;  // "" = none
    // The cluster forbids the object (403: RBAC, a policy webhook) or lacks
    // its kind or namespace (404): another cluster may take it. A 400 or 422
    // (the object itself is invalid) would be refused anywhere.
    bool this_cluster_only = false;
    // Not a refusal: why a create that is to be sent again failed (its
    // answer, or no answer), for ActionErrors.
    std::string failed{};
    // That create may have been carried out: its answer was never read, or
    // was a 5xx (unanswered_).
    bool maybe_landed = false;
    // A delete carried out whose Action::tell_end_when_deleted found the
    // run ended in its answer: the event's message.
    std::string told{};
  };
  // Runs one action; false when it failed and the job should be looked at again soon.
  bool Execute(const JobRecord& job, const Action& action, Refusal* refusal);
  // Execute in two halves (engine_actions.cc): the request goes out on a
  // leased connection (none when the cluster cannot be reached now), then
  // its answer is read and judged. A real job's create for a job whose
  // cancel was acknowledged meanwhile is not sent (CancelRequested): none.
  std::optional<kube::ClientPool::Lease> StartAction(const JobRecord& job, const Action& action);
  // *retry_after_ms (when given) is raised to the cluster's Retry-After, if its answer had one.
  bool FinishAction(const JobRecord& job, const Action& action, std::optional<kube::ClientPool::Lease>& lease,
                    Refusal* refusal, int64_t* retry_after_ms = nullptr);
  // A kDeleteUnseen (engine_unseen.cc): GET by name, then a delete with the
  // uid as precondition if the object is the job's; true when it is gone
  // or not the job's to delete. Records the row's ask (UnseenAsks) unless
  // the cluster gave no answer, or a 429 or 5xx.
  bool DeleteUnseen(const JobRecord& job, const Action& action, kube::KubeClient& client);
  // Moves what the watches show of the job into a pass's input (its
  // observed, synced, behind, resource and finished_gone).
  static void TakeObservation(DecideInput& in, JobObservation observation);
  // The job's observation (TakeObservation), and the creates at its epoch
  // still awaited, not seen yet (in.expected): what a pass, and explain,
  // read of the clusters. Returns the objects seen at the epoch. A pass
  // settles the expectations (drops those seen, or of another epoch);
  // explain, whose job may be a moment older, only reads them.
  std::set<Expectations::Key> Observe(DecideInput& in, const std::string& uid, int64_t epoch, const JobKind& kind,
                                      int64_t now, bool settle = true);
  // What its lookups by name found of the job's withdrawn rows
  // (DecideInput::read_gone).
  std::map<std::pair<std::string, std::string>, int64_t> ReadGone(const std::string& uid,
                                                                  const std::vector<RemoteIntent>& intents);
  // Runs a plan's actions in waves of at most one per cluster (see
  // engine_actions.cc). all_ok is false when any failed or was held back;
  // refusal is set when an object gantry did not make holds the real job's
  // name, or the owner refuses the real job: the job must fail. A candidate
  // that refuses a Workload copy is only one candidate less: its refusal is
  // in copy_refusals, and the job goes on with the others. So is a cluster
  // that refuses to open a copy's preemption gate: the copy stays, gated.
  struct CopyRefusal {
    const Action* action = nullptr;  // the create or kOpenGate, in the plan's actions
    Refusal refusal;
  };
  // A wave waits this long after its requests went out for each answer;
  // one not come by then is read by stragglers_ (a Workload copy's create,
  // a delete, a gate's opening), and the pass goes on without it: one
  // cluster slow to answer holds neither the pass nor the other clusters'
  // connections for its request deadline. A real job's create and a
  // look-up (kDeleteUnseen) are waited for: what follows them is the pass's.
  static constexpr std::chrono::milliseconds kStragglerGrace{1'000};
  static bool MayHandOver(const Action& action);
  // Hands the action's answer, and lease, to stragglers_, noting it in
  // late_ until read; false when stopping (lease is left to the caller).
  bool HandOver(const JobRecord& job, const Action& action, std::optional<kube::ClientPool::Lease>& lease);
  // What RunActions and a straggler note of an action's answer: the create's
  // error for ActionErrors (a create not sent, had_lease false, says so),
  // and the expectation a create or delete that was done leaves.
  void NoteAnswer(const std::string& uid, const Action& action, bool done, const Refusal& refusal, bool had_lease);
  // Whether the action's answer is awaited by stragglers_ (in late_).
  bool Late(const std::string& uid, const Action& action);
  // A refusal a straggler read for this action (a copy's create, a gate's
  // opening), taken once: the pass that would send it again records it.
  std::optional<Refusal> TakeLateRefusal(const std::string& uid, const Action& action);
  // The job's creates at this epoch whose answers are awaited, as
  // Expectations keys: they may land, as a create answered 201 and not
  // yet seen (DecideInput::expected).
  std::set<Expectations::Key> LateCreates(const std::string& uid, int64_t epoch);
  // An action of a job, as late_ knows it.
  struct LateAction {
    std::string uid;
    std::string cluster;
    std::string kind;
    Verb verb = Verb::kCreate;
    int64_t epoch = 0;
    std::string precondition_uid;  // a delete's: one incarnation of the object
    static LateAction Of(const std::string& uid, const Action& action);
    auto operator<=>(const LateAction&) const = default;
  };
  std::mutex late_mu_;
  std::set<LateAction> late_;  // actions whose answers stragglers_ waits for; guarded by late_mu_
  std::map<LateAction, Refusal> late_refused_;  // guarded by late_mu_
  struct ActionsOutcome {
    bool all_ok = true;
    int64_t retry_after_ms = 0;  // the longest Retry-After of the answers (0: none)
    Refusal refusal;
    const Action* refused = nullptr;  // the action that met `refusal` (set with it)
    std::vector<CopyRefusal> copy_refusals;
    const Action* job_created = nullptr;  // the real job's create, when its cluster confirmed it
    // Deletes carried out whose answer showed an earlier run ended
    // (Refusal::told): cluster, message.
    std::vector<std::pair<std::string, std::string>> told;
  };
  // Records the events of acted.told on the job, if it is still as stored
  // (a conflict drops them: the pass after sees what changed).
  void RecordTold(const JobRecord& stored, const std::vector<std::pair<std::string, std::string>>& told);
  // Records the candidates that refused the job's Workload copies (their
  // rows absent, with the answer), or the opening of a copy's preemption
  // gate (RemoteIntent::gate_refusal, not sent again), and an event for
  // each, if the job is still nominating at their epoch. False when the store could not be read or
  // written: the job is looked at again after a while, not at once.
  bool RecordCopyRefusals(const std::string& uid, const std::vector<CopyRefusal>& refusals);
  // What becomes of a job whose real job its owner refused (acted.refusal):
  // dispatched again elsewhere, failed, or left waiting (JudgeJobRefusal).
  // It fails unless the owner alone forbids it (Refusal::this_cluster_only);
  // in reads the owner's view.
  JobRefusalJudgement JudgeRefusal(const JobRecord& job, const JobSpec& spec, const DecideInput& in,
                                   const ActionsOutcome& acted);
  // kWait: the job's message and an event say why it waits (once); returns
  // wait_ms, when to look again.
  int64_t WaitOnRefusal(const JobRecord& job, const std::string& refusal, const std::string& cluster,
                        int64_t wait_ms);
  // The real job's creates whose answers were not read or were a 5xx, by
  // job: since when one may have landed unseen, at which (cluster, epoch).
  // Forgotten with the job; a restart forgets them all, and every job
  // leased before it counts as such from started_ms_ (JudgeRefusal).
  struct Unanswered {
    std::string cluster;
    int64_t epoch = 0;
    int64_t since_ms = 0;
  };
  void NoteUnanswered(const std::string& uid, const Action& create);
  std::mutex unanswered_mu_;
  std::unordered_map<std::string, Unanswered> unanswered_;
  int64_t started_ms_ = 0;  // wall clock, set by Start
  int64_t started_mono_ms_ = 0;  // the clock's monotonic reading then
  // How long ago Start was, on the monotonic clock (DecideInput::since_start_ms).
  int64_t SinceStartMs() const { return clock_.MonotonicMillis() - started_mono_ms_; }
  // The start's wait for every cluster to be listed (step start-listing),
  // as told in the log: 0 not seen, 1 told, 2 its end told.
  std::atomic<int> start_wait_told_{0};
  // An at-most-once job's real job was created (its cluster answered 201,
  // or 409 for the job's own object): its row's created_ms is written, and
  // fsync'd, so that a job seen gone afterwards, even after a restart, is
  // never created again (Ladder::Owned, JobGone). False when the store
  // could not be written.
  bool RecordJobCreated(const JobRecord& job, const std::vector<RemoteIntent>& intents, const Action& create);
  // The store's guarded write, waited for.
  Result<JobRecord> WriteSync(DispatchUpdate update);
  // The write was made, or needs no retry: the job moved on meanwhile (a
  // conflict on its guard) or was purged.
  static bool Settled(const Result<JobRecord>& written);
  ActionsOutcome RunActions(const JobRecord& job, const std::vector<Action>& actions);
  // The fleet as last read (at most fleet_refresh_ms ago), shared, not copied.
  std::shared_ptr<const FleetFacts> Facts(int64_t now_ms);
  void RefreshFleetLocked(int64_t now_ms);
  // Watches the usable clusters of the inventory (ClusterView::Usable):
  // REQUIRES inventory_mu_ held, or no other thread running yet.
  void SetObservedClusters();
  // The health watch's look: a cluster that became usable or not without a
  // reload (an entry held at a probe for reaching a cluster another entry
  // reaches) is watched, or no more, at once.
  void ObserveUsableClusters(const std::vector<inventory::ClusterView>& views);
  // InventoryChanged's note of the owners a first reload removes.
  std::string OwnersRemovedNote(const std::vector<std::string>& removed);
  // InventoryChanged's note of the jobs the clusters a reload removed own
  // ("" when none): what their removal does to them.
  std::string RemovedOwnersNote(const std::vector<std::string>& removed);
  // The Admitted, Running and Cancelling jobs of each owner `counts` takes ({} when the
  // store cannot be read, which is logged).
  std::map<std::string, int> OwnedJobs(const std::function<bool(const std::string&)>& counts);
  // OwnedJobs of the owners neither in the inventory nor in `known`.
  std::map<std::string, int> OwnersOutside(std::set<std::string> known);
  void RunGc();
  // Deletes the records of jobs finished longer ago than
  // job_record_retention_ms, a batch per commit (engine_records.cc).
  void ExpireRecords();
  // Logs, once per uid, the objects of a job uid the store never had.
  void LeaveUnknown(const std::string& uid, const JobObservation& observation);
  // Every health_poll: wakes the jobs with intents in a cluster whose
  // readiness changed (a partition or a recovery needs no watch event).
  void RunHealthWatch();
  // Logs the start's wait for the clusters to be listed (step
  // start-listing) when a pass first meets it, and its end (engine_health.cc).
  void TellStartWait(const Plan& plan, JobPhase phase);

  JobStore& store_;
  inventory::Fleet& fleet_;
  const Clock& clock_;
  // Set by Stop: every request to the clusters still waiting ends at once
  // (kube::KubeClientOptions::stop_fd). Before the pools that watch it.
  StopSignal requests_stop_;
  EngineOptions options_;
  EngineMetrics* metrics_;
  ClusterStateStore* cluster_state_;
  SpecCache specs_;
  FreshJobs fresh_;
  KnownJobs known_;
  Expectations expected_;
  UnseenAsks unseen_{10'000, 300'000};  // kDeleteUnseen: 10 s after the first ask, doubling up to 5 min
  // Jobs whose cancel the API acknowledged since this engine started, until
  // the job is forgotten: a pass that read the job before the cancel
  // committed must not create its real job after the answer (202) went
  // out. StartAction checks the set before it sends a real job's create,
  // and marks the job as sending (sending_) until the create's answer is
  // read (SendingDone: the HTTP client may send it again on a new
  // connection until then); CancelRequested adds the job, and has the
  // cancel answered at once, or, while a create of the job is in flight, by
  // its sender once the answer is in: such a create goes out before the
  // cancel's answer, or not at all, and the store's writer thread
  // (CancelRequested's caller) never waits for a request.
  void SendingDone(const std::string& uid);
  // SendingDone(uid) when it goes out of scope, however the scope ends.
  struct SendingRelease {
    Engine* engine;
    const std::string& uid;
    ~SendingRelease() { engine->SendingDone(uid); }
  };
  bool CancelSeen(const std::string& uid);
  // The creates of each job that failed at their last try and are to be
  // sent again, by (cluster, kind): what `gantry status` shows of a job that
  // seems stuck Nominating. Cleared when one succeeds and when the job is
  // forgotten.
  void NoteActionError(const std::string& uid, const Action& action, const std::string& error);
  // DecideInput::job_create_failing_ms of the job's real job in cluster at
  // epoch (seen: the watch shows it there, which ends the run).
  // *error: the last try's answer.
  int64_t CreateFailingMs(const std::string& uid, const std::string& cluster, int64_t epoch, bool seen,
                          std::string* error);
  mutable std::mutex action_errors_mu_;
  // By job uid, then (cluster, kind, verb).
  std::unordered_map<std::string, std::map<std::tuple<std::string, std::string, std::string>, ActionError>>
      action_errors_;
  // A job's store write that failed, logged at most every 10 s with how
  // many more failed meanwhile: with the disk full, every pass of every
  // job fails its write.
  void WarnStoreWriteFailed(const std::string& ns, const std::string& name, const Status& error);
  LogLimiter store_write_failed_log_;
  // A request not sent for want of a connection is told once per cluster
  // every 10 s, with how many more were not (a stalling cluster refuses one
  // for every action of every pass).
  void WarnNotSent(const Action& action, const std::string& why);
  std::mutex not_sent_mu_;
  std::map<std::string, LogLimiter> not_sent_log_;  // by cluster; the map guarded by not_sent_mu_
  std::mutex cancel_seen_mu_;
  std::unordered_set<std::string> cancel_seen_;  // guarded by cancel_seen_mu_
  // Jobs whose real job's create is being sent, with the cancels' answers
  // that wait for it; guarded by cancel_seen_mu_.
  std::unordered_map<std::string, std::vector<std::function<void()>>> sending_;
  std::mutex settling_mu_;
  std::set<std::string> settling_;  // finished jobs with remote objects left to withdraw
  // Passes in a row whose actions did not all go through, by job (only
  // jobs with one): the delay before the next is ActionRetryMs of it.
  std::mutex failures_mu_;
  std::unordered_map<std::string, int> failures_;
  std::atomic<size_t> failing_{0};  // failures_.size(), read without the lock
  // Counts a failed pass of the job; returns how many in a row. Forgotten
  // by a pass whose actions all went through, and by ForgetJob.
  int NoteFailure(const std::string& uid);
  void ClearFailures(const std::string& uid);
  std::unique_ptr<ClusterObserver> observer_;
  std::unique_ptr<Reconciler> reconciler_;

  // Set by SetObservedClusters, before the scan that follows every reload.
  std::atomic<bool> no_clusters_{false};
  // Set by the first InventoryChanged (DecideInput::inventory_confirmed).
  std::atomic<bool> inventory_confirmed_{false};
  // OwnersMissingSinceStart's count at Start; guarded by fleet_mu_.
  std::map<std::string, int> missing_at_start_;
  std::mutex fleet_mu_;
  int64_t fleet_read_ms_ = -1;
  uint64_t fleet_generation_ = 0;  // fleet_.Generation() when last read
  // When each cluster was first seen refusing gantry a watch (guarded by
  // fleet_mu_), as kept in cluster_state_: an entry stays until the cluster
  // has listed again without a refusal, or leaves the inventory. Keyed by
  // cluster name for its Workloads and Jobs (WatchRefusals), and by
  // "<cluster>/<resource>" for an optional kind (KindRefusals; a cluster's
  // name, DNS-1123, has no slash).
  std::map<std::string, int64_t> watch_refused_since_;
  // Notes in watch_refused_since_ (and the store) whether the key (above)
  // refuses a watch now; returns since when, or -1.
  int64_t NoteWatchRefusalLocked(const std::string& key, bool refused, int64_t now_ms);
  // watch_refused_since_'s key for an optional kind's refusal in a cluster,
  // and back: (cluster, resource), resource "" for a cluster's own.
  static std::string RefusalKey(const std::string& cluster, const std::string& resource);
  static std::pair<std::string, std::string> SplitRefusalKey(const std::string& key);
  // Writes it to cluster_state_ (if any), logging a failure.
  void SaveWatchRefusal(const std::string& cluster, std::optional<int64_t> since_ms);
  // Whether a cluster refuses a watch now, or did when last noted.
  bool WatchRefusalsToNote();
  // Replaced, never changed in place: passes may still hold the last ones.
  std::shared_ptr<const FleetFacts> facts_ = SharedEmpty<FleetFacts>();
  std::shared_ptr<const std::vector<placement::ClusterSnapshot>> snapshots_ =
      SharedEmpty<std::vector<placement::ClusterSnapshot>>();

  std::unique_ptr<kube::ClientPools> pools_;  // kept across reloads for clusters whose connection is unchanged
  // Tells the reconciler how many passes may be at work at once
  // (EngineOptions::min_active_passes), from how the clusters answer; at
  // the start and at each look of the health watch (its thread only).
  void SetPassAllowance();
  int LeastPasses() const;  // EngineOptions::min_active_passes, within 1..workers

  std::mutex gc_mu_;
  std::condition_variable gc_cv_;
  std::set<std::string> gc_told_;  // uids LeaveUnknown logged; the GC thread's own
  // Set under gc_mu_ (the waits on gc_cv_ read it there); read without it
  // between the steps of a garbage-collection round.
  std::atomic<bool> stopping_ = false;
  bool stopped_ = false;  // Stop ran; guarded by gc_mu_
  std::mutex inventory_mu_;  // one InventoryChanged at a time
  std::set<std::string> observed_;  // the clusters SetObservedClusters gave the observer; guarded by inventory_mu_
  // Clusters a reload removed since the health watch's last look: one added
  // back before that look is new to it all the same (its first Ready wakes
  // the jobs its view shows objects of). Guarded by left_mu_.
  std::mutex left_mu_;
  std::set<std::string> left_inventory_;
  std::thread gc_thread_;
  std::thread health_thread_;
  // Last: gone first, its tasks done, before what they use.
  std::unique_ptr<Stragglers> stragglers_;
};

}  // namespace gantry::dispatch
