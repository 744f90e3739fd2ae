#include "gantry/dispatch/engine.h"
#include "gantry/common/thread_name.h"

#include <algorithm>
#include <future>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "gantry/dispatch/demand.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/dispatch/remote_view.h"
#include "gantry/placement/place.h"
#include "ladder.h"
#include "stragglers.h"

namespace gantry::dispatch {
namespace {

using nlohmann::json;

// How long after a create a watch that missed the object's appearing has
// been found dead: one resumed just before the create and silent since is
// found SilentWatchFoundAfter past its last byte, and its resume may have
// taken a request's timeout. Absence is not trusted sooner: a run created
// and not seen (Expectations::UnseenRuns), an at-most-once job's run gone
// (JobGone), a refusal after a create that may have landed.
int64_t SilentWatchFoundMs(const ObserverOptions& observer) {
  return (observer.SilentWatchFoundAfter() + observer.request_timeout).count();
}

// The (cluster, kind) of every object of the job observed at epoch.
std::set<Expectations::Key> SeenAtEpoch(const std::map<std::string, ClusterObservation>& observed,
                                              int64_t epoch) {
  std::set<Expectations::Key> seen;
  for (const auto& [cluster, o] : observed) {
    for (const ObservedWorkload& w : o.workloads) {
      if (w.epoch == epoch) seen.emplace(cluster, kWorkload);
    }
    for (const ObservedJob& j : o.jobs) {
      if (j.epoch == epoch) seen.emplace(cluster, kJob);
    }
  }
  return seen;
}

}  // namespace

Engine::Engine(JobStore& store, inventory::Fleet& fleet, const Clock& clock, EngineOptions options,
               EngineMetrics* metrics, ClusterStateStore* cluster_state)
    : store_(store),
      fleet_(fleet),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics),
      cluster_state_(cluster_state),
      specs_(options_.spec_cache_entries),
      fresh_(options_.fresh_jobs_entries),
      known_(options_.known_jobs_entries),
      expected_(options_.expectation_ttl_ms, SilentWatchFoundMs(options_.observer)),
      stragglers_(std::make_unique<Stragglers>()) {
  options_.observer.origin = options_.decide.origin;
  options_.decide.silent_watch_found_ms = SilentWatchFoundMs(options_.observer);
  options_.observer.clock = &clock_;
  // A pass does not sleep on a retry: it holds a worker and a connection in
  // every cluster of its wave, and a throttling cluster's Retry-After would
  // keep them all from the other passes. A failed request fails the action;
  // the job is looked at again after ActionRetryMs, as a controller requeues.
  options_.pool.client.max_attempts = 1;
  options_.pool.client.stop_fd = requests_stop_.fd();
  pools_ = std::make_unique<kube::ClientPools>(
      options_.pool, [this](const std::string& cluster) { return fleet_.Credentials(cluster); });
  observer_ = std::make_unique<ClusterObserver>(
      options_.observer, [this](const ClusterObserver::Observed& what) { Observed(what); });
  reconciler_ = std::make_unique<Reconciler>(
      store_, clock_, [this](const std::string& uid) { return Pass(uid); }, options_.workers);
  reconciler_->SetConcurrency(LeastPasses());  // where the allowance starts
  SetPassAllowance();
}

Engine::~Engine() { Stop(); }

Status Engine::Start() {
  if (cluster_state_) {
    auto refusals = cluster_state_->LoadWatchRefusals();
    if (!refusals.ok()) return refusals.status();
    std::lock_guard lock(fleet_mu_);
    watch_refused_since_ = std::move(*refusals);
  }
  started_ms_ = clock_.NowMillis();
  started_mono_ms_ = clock_.MonotonicMillis();
  {
    std::map<std::string, int> missing = OwnersOutside({});
    for (const auto& [cluster, jobs] : missing) {
      spdlog::warn("dispatch: cluster {} owns {} job(s) but is not in the inventory (its file in clusters.d "
                   "missing?): they are held as they are until it is back, or a reload confirms its removal",
                   cluster, jobs);
    }
    std::lock_guard lock(fleet_mu_);
    missing_at_start_ = std::move(missing);
  }
  SetObservedClusters();
  GANTRY_RETURN_IF_ERROR(reconciler_->Start());
  gc_thread_ = std::thread([this] {
    SetThreadName("dispatch-gc");
    RunGc();
  });
  health_thread_ = std::thread([this] {
    SetThreadName("dispatch-health");
    RunHealthWatch();
  });
  return Status::Ok();
}

void Engine::BeginStop() {
  {
    std::lock_guard lock(gc_mu_);
    stopping_ = true;
  }
  gc_cv_.notify_all();
  reconciler_->Quiesce();
}

void Engine::Stop() {
  {
    std::lock_guard lock(gc_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  BeginStop();  // if the shutdown did not already
  // What is still in flight to the clusters is abandoned, as a crash would:
  // every action's intent is in the store, and the next start lists the
  // clusters again. A cluster that does not answer then holds the stop for
  // no request's deadline (the observer's lists end with its Stop).
  requests_stop_.Set();
  if (gc_thread_.joinable()) gc_thread_.join();
  if (health_thread_.joinable()) health_thread_.join();
  reconciler_->Stop();
  stragglers_->Stop();  // no pass hands one over now
  observer_->Stop();
}

void Engine::Wake(const std::string& job_uid) {
  DropHeld(job_uid);
  reconciler_->Wake(job_uid);
}

void Engine::CancelRequested(const std::string& job_uid, std::function<void()> acknowledge) {
  bool now = true;
  {
    std::lock_guard seen(cancel_seen_mu_);
    cancel_seen_.insert(job_uid);
    if (auto it = sending_.find(job_uid); it != sending_.end()) {
      it->second.push_back(std::move(acknowledge));  // answered once that create went out
      now = false;
    }
  }
  DropHeld(job_uid);
  reconciler_->WakeUrgent(job_uid);
  if (now) acknowledge();
}

void Engine::DropHeld(const std::string& job_uid) {
  fresh_.Drop(job_uid);
  known_.Invalidate(job_uid);
}

std::string Engine::FirstMessage() const {
  return no_clusters_.load() ? std::string(kNoClustersMessage) : std::string();
}

bool Engine::Watches(const nlohmann::json& template_object) const {
  if (HasAdapter(template_object)) return true;
  GenericKind k{template_object.value("apiVersion", ""), template_object.value("kind", "")};
  const std::vector<GenericKind>& watched = options_.observer.generic_kinds;
  return std::find(watched.begin(), watched.end(), k) != watched.end();
}

std::optional<FieldError> Engine::Refuse(const JobSpec& spec) const {
  if (Watches(spec.template_object)) return std::nullopt;
  return FieldError{"spec.template.kind",
                    fmt::format("Unsupported value: \"{}\" of {}: not a Job or JobSet, and not in the daemon's "
                                "genericKinds (gantry must watch a kind to see its jobs run, finish and go)",
                                spec.template_object.value("kind", ""), spec.template_object.value("apiVersion", ""))};
}

std::vector<ObservedObject> Engine::RemoteView(const std::string& job_uid) const {
  JobObservation seen = observer_->ForJob(job_uid);
  // ForJob's behind set counts the Workloads' view alone (the job's kind is
  // not known here): a cluster whose watch of any kind fell behind may show
  // the real job as it last was. So may one whose probe fails: its watches
  // are found behind only when they time out, seconds later.
  auto behind = std::make_shared<std::set<std::string>>();
  for (const auto& [cluster, objects] : seen.clusters) {
    auto view = fleet_.Cluster(cluster);
    const bool answers = view && view->health.state == inventory::HealthState::kReady;
    if (!answers || !observer_->ViewBehind(cluster).resources.empty()) behind->insert(cluster);
  }
  seen.behind = std::move(behind);
  return RemoteViewOf(seen);
}

void Engine::Created(JobRecord record, std::shared_ptr<JobSpec> spec) {
  // Stored with the message its first pass would write, while there is still
  // no cluster. Clusters come only with an inventory reload, and its scan
  // (InventoryChanged) reads the committed job and wakes it; the flag is
  // cleared before that scan, so a job seen here as "no clusters" was
  // committed before the scan began. (The new cluster's first Ready scans
  // the queued jobs again.)
  if (record.message == kNoClustersMessage && no_clusters_.load()) return;
  std::string uid = record.uid;
  const int32_t priority = record.priority;
  const int64_t seq = record.seq;
  if (spec) fresh_.Put(std::move(record), std::move(spec));
  reconciler_->WakeNew(uid, priority, seq);
}

void Engine::Observed(const ClusterObserver::Observed& what) {
  if (!reconciler_) return;
  const std::string& uid = what.job_uid;
  const ClusterObserver::Change change = what.change;
  bool settling = false;
  {
    std::lock_guard lock(settling_mu_);
    settling = settling_.count(uid) > 0;
  }
  // The echo of our own create, as created: it tells nothing the create's
  // answer did not. The expectation it fulfils is dropped now, so that a
  // pass after the object vanished again creates it at once. Not for a
  // finished job: its copies are to be withdrawn, and the pass that would
  // withdraw this one may have run before the watch showed it.
  // Any appearing at its epoch fulfils the create's expectation (a real
  // job's unseen run too), as created or not.
  if (change == ClusterObserver::Change::kAppeared &&
      expected_.Seen(uid, what.cluster, what.kind, what.epoch, clock_.NowMillis()) && what.as_created &&
      !settling) {
    return;
  }
  // What moves a job on is a change: an admission, an eviction, a run, a
  // finish. An object appearing is mostly the echo of our own create, an
  // object leaving the confirmation of our own delete, and anything about a
  // finished job is cleanup: bookkeeping that can wait a moment, so that the
  // copies created or withdrawn together (ten at a nomination, nine after a
  // lease, two after a finish) are looked at in one pass.
  const bool bookkeeping = change != ClusterObserver::Change::kChanged || settling;
  if (bookkeeping) {
    reconciler_->WakeAfter(uid, options_.bookkeeping_delay_ms);
  } else if (what.status_only) {
    // A running job's pod counts: shown, not acted on. A large gang's status
    // changes many times as its pods start and end; its pass records them
    // together a moment later, or at once with the next change that matters
    // (the run's end comes as a state change, with the counts at the end).
    reconciler_->WakeAfter(uid, options_.status_delay_ms);
  } else {
    reconciler_->WakeUrgent(uid);
  }
}

std::string Engine::InventoryChanged(const std::vector<std::string>& removed) {
  // Called by a SIGHUP's thread and by the API's reload: one at a time, so
  // that the observer is not left watching the older of two cluster sets.
  std::lock_guard reload(inventory_mu_);
  // A reload that could not read clusters.d kept every entry as it was: it
  // confirms nothing of what was missing at the start.
  const bool confirms = !inventory_confirmed_.load() && fleet_.DirStatus().ok();
  const std::string confirmed = confirms ? OwnersRemovedNote(removed) : "";
  // Read before the jobs are woken: once they are, their owners are cleared.
  const std::string removed_owners = RemovedOwnersNote(removed);
  {
    std::lock_guard lock(left_mu_);
    left_inventory_.insert(removed.begin(), removed.end());
  }
  SetObservedClusters();
  if (int dropped = pools_->Retain(); dropped > 0) {
    spdlog::info("dispatch: inventory reloaded: {} cluster(s) changed connection or left; their pooled connections "
                 "close as their requests in flight end",
                 dropped);
  }
  {
    std::lock_guard lock(fleet_mu_);
    fleet_read_ms_ = -1;
  }
  // Confirmed only once the facts of before the reload are dropped: a pass
  // reads the flag first, then the facts, so it never judges a cluster
  // removed from facts that do not show it back.
  if (confirms) inventory_confirmed_.store(true);
  if (auto woken = reconciler_->WakeUnfinished(); !woken.ok()) {
    spdlog::warn("dispatch: after the inventory reload: {}", woken.status().ToString());
  } else {
    spdlog::debug("dispatch: inventory reloaded: {} unfinished job(s) to look at again", *woken);
  }
  if (confirmed.empty() || removed_owners.empty()) return confirmed + removed_owners;
  return confirmed + "; " + removed_owners;
}

std::map<std::string, int> Engine::OwnersMissingSinceStart() {
  if (inventory_confirmed_.load()) return {};
  std::lock_guard lock(fleet_mu_);
  return missing_at_start_;
}

std::map<std::string, int> Engine::OwnersOutside(std::set<std::string> known) {
  for (const inventory::ClusterView& view : fleet_.Clusters()) known.insert(view.config.name);
  return OwnedJobs([&](const std::string& cluster) { return !known.count(cluster); });
}

std::string Engine::OwnersRemovedNote(const std::vector<std::string>& removed) {
  // (Those the reload named as removed are told by RemovedOwnersNote.)
  const std::map<std::string, int> owners = OwnersOutside({removed.begin(), removed.end()});
  if (owners.empty()) return "";
  std::vector<std::string> named;
  for (const auto& [cluster, jobs] : owners) named.push_back(fmt::format("{} ({} job(s))", cluster, jobs));
  return fmt::format("confirmed the removal of {}, missing since gantry started: the jobs they own now get their "
                     "onClusterLoss (one being cancelled ends Cancelled)",
                     fmt::join(named, ", "));
}

std::string Engine::RemovedOwnersNote(const std::vector<std::string>& removed) {
  if (removed.empty()) return "";
  const std::set<std::string> gone(removed.begin(), removed.end());
  const std::map<std::string, int> owners = OwnedJobs([&](const std::string& cluster) { return gone.count(cluster); });
  if (owners.empty()) return "";
  std::vector<std::string> named;
  for (const auto& [cluster, jobs] : owners) named.push_back(fmt::format("{} owned {} job(s)", cluster, jobs));
  return fmt::format("{}: each gets its onClusterLoss now (Requeue: dispatched again, while its run there, which "
                     "gantry no longer watches, may go on: it may run twice; Fail: failed); to stop a cluster's jobs "
                     "first, cordon it or set declaredLost instead of removing it",
                     fmt::join(named, ", "));
}

std::map<std::string, int> Engine::OwnedJobs(const std::function<bool(const std::string&)>& counts) {
  std::map<std::string, int> owners;  // owner -> its jobs
  // A job being cancelled keeps its owner too, until the owner confirms.
  for (JobPhase phase : {JobPhase::kAdmitted, JobPhase::kRunning, JobPhase::kCancelling}) {
    ListQuery query;
    query.phase = phase;
    query.limit = 5000;
    for (;;) {
      Result<JobPage> page = store_.List(query);
      if (!page.ok()) {
        spdlog::warn("dispatch: the running jobs of each owner cannot be read: {}", page.status().ToString());
        return {};
      }
      for (const JobRecord& job : page->jobs) {
        if (!job.cluster.empty() && counts(job.cluster)) ++owners[job.cluster];
      }
      if (!page->next_after_seq) break;
      query.after_seq = *page->next_after_seq;
    }
  }
  return owners;
}

void Engine::SetObservedClusters() {
  std::vector<ObservedCluster> clusters;
  const std::vector<inventory::ClusterView> views = fleet_.Clusters();
  no_clusters_.store(views.empty());
  observed_.clear();
  for (const inventory::ClusterView& view : views) {
    // (Not one held: it reaches a cluster another entry watches already.)
    auto creds = view.Usable() ? fleet_.Credentials(view.config.name) : std::nullopt;
    if (!creds) continue;
    observed_.insert(view.config.name);
    clusters.push_back({view.config.name, view.config.kueue_api_version, std::move(*creds)});
  }
  observer_->SetClusters(clusters);
}

void Engine::ObserveUsableClusters(const std::vector<inventory::ClusterView>& views) {
  // (A usable view has credentials: SetObservedClusters watches each.)
  std::set<std::string> usable;
  for (const inventory::ClusterView& view : views) {
    if (view.Usable()) usable.insert(view.config.name);
  }
  std::lock_guard reload(inventory_mu_);
  if (usable == observed_) return;
  SetObservedClusters();
  std::lock_guard lock(fleet_mu_);
  fleet_read_ms_ = -1;
}

void Engine::RefreshFleetLocked(int64_t now_ms) {
  // Read again every fleet_refresh_ms, and at once after a cluster's health
  // changed: a job submitted once `gantry clusters` shows a cluster Ready is
  // placed knowing it (it could otherwise be nominated without it, and an
  // AllAtOnce job whose copy holds quota elsewhere would not widen to it).
  const uint64_t generation = fleet_.Generation();
  if (fleet_read_ms_ >= 0 && now_ms - fleet_read_ms_ < options_.fleet_refresh_ms && now_ms >= fleet_read_ms_ &&
      generation == fleet_generation_) {
    return;
  }
  fleet_generation_ = generation;
  auto facts = std::make_shared<FleetFacts>();
  const std::map<std::string, std::string> watch_refusals = observer_->WatchRefusals();  // one lock for all
  const auto kind_refusals = observer_->KindRefusals();
  for (const inventory::ClusterView& view : fleet_.Clusters()) {
    const std::string& name = view.config.name;
    ClusterFacts f;
    // One gantry cannot reach (no credentials, or held for its refused
    // file) is not ready, and no outage of it counts: no probe could see
    // one end, so the jobs it owns wait (ClusterView::Usable).
    if (view.Usable()) {
      f.ready = view.health.state == inventory::HealthState::kReady;
      f.lost_for_ms = view.health.ShownLostForMs();  // judged on a probe, not on the time since the last one
      f.credentials_refused = view.health.credentials_refused;
    } else {
      f.unusable =
          view.config_error.empty() ? "its credentials do not load" : "its file in clusters.d is refused, or held";
    }
    // Not usable: not watched, so nothing is learnt of its refusals.
    if (auto r = watch_refusals.find(name); r != watch_refusals.end() && view.Usable()) f.watch_refused = r->second;
    if (int64_t since = NoteWatchRefusalLocked(name, !f.watch_refused.empty(), now_ms); since >= 0) {
      f.watch_refused_for_ms = std::max<int64_t>(0, now_ms - since);
    }
    if (const int64_t since = observer_->ViewBehind(name).since_ms; since > 0) {
      f.behind_for_ms = std::max<int64_t>(0, now_ms - since);
    }
    if (auto k = kind_refusals.find(name); k != kind_refusals.end() && view.Usable()) {
      for (const auto& [resource, why] : k->second) {
        const int64_t since = NoteWatchRefusalLocked(RefusalKey(name, resource), true, now_ms);
        f.kind_refused[resource] = {why, std::max<int64_t>(0, now_ms - since)};
      }
    }
    f.config = view.config;
    f.clock_offset_ms = view.clock_offset_ms;
    if (view.capacity) f.queues = view.capacity->queues;
    facts->emplace(name, std::move(f));
  }
  // An optional kind's refusal that has ended; a cluster that left the
  // inventory refuses nothing any more. Nor does one gantry cannot reach
  // (held, or its credentials not loading): once it is usable again, a
  // refusal seen then starts the clock afresh, as its outage does
  // (inventory::Fleet), since nothing was seen meanwhile: kept, a refusal
  // from before would make the jobs it owns lost at once.
  for (auto it = watch_refused_since_.begin(); it != watch_refused_since_.end();) {
    const auto [cluster, resource] = SplitRefusalKey(it->first);
    auto f = facts->find(cluster);
    if (f != facts->end() && f->second.unusable.empty()) {
      const bool ended = !resource.empty() && !f->second.kind_refused.count(resource) &&
                         observer_->Listed(cluster, resource);
      if (!ended) {
        ++it;
        continue;
      }
    }
    SaveWatchRefusal(it->first, std::nullopt);
    it = watch_refused_since_.erase(it);
  }
  std::vector<placement::ClusterSnapshot> snapshots = fleet_.Snapshot(now_ms);
  const std::map<std::string, int64_t> stalled = pools_->Stalled();
  for (placement::ClusterSnapshot& s : snapshots) {
    // A cluster that keeps gantry from following what it runs there takes
    // nothing new: no copy there could take the lease.
    if (watch_refusals.count(s.name) && s.health == placement::ClusterHealth::kReady) {
      s.health = placement::ClusterHealth::kNotReady;
    }
    // Nor one whose requests go unanswered: a copy would not be created,
    // and a lease there would wait for its real job's create.
    if (auto st = stalled.find(s.name); st != stalled.end()) {
      s.stalled = fmt::format("gantry's requests there have gone unanswered for {} s", st->second / 1000);
    }
  }
  facts_ = std::move(facts);
  snapshots_ = std::make_shared<const std::vector<placement::ClusterSnapshot>>(std::move(snapshots));
  fleet_read_ms_ = now_ms;
}

std::shared_ptr<const FleetFacts> Engine::Facts(int64_t now_ms) {
  std::lock_guard lock(fleet_mu_);
  RefreshFleetLocked(now_ms);
  return facts_;
}

std::shared_ptr<const std::vector<placement::ClusterSnapshot>> Engine::Snapshots(int64_t now_ms) {
  std::lock_guard lock(fleet_mu_);
  RefreshFleetLocked(now_ms);
  return snapshots_;
}

int Engine::ConnectionsLimit(const std::string& cluster) { return pools_->Limit(cluster); }

int64_t Engine::RequestsStalledForMs(const std::string& cluster) const { return pools_->StalledForMs(cluster); }

int Engine::LeastPasses() const {
  return options_.min_active_passes > 0 ? std::min(options_.min_active_passes, options_.workers) : options_.workers;
}

void Engine::SetPassAllowance() {
  const int least = LeastPasses();
  if (least >= options_.workers || !options_.pool.adaptive()) {
    // Fixed: the workers configured, all at work (as before the pools adapted).
    reconciler_->SetConcurrency(options_.workers);
    return;
  }
  const auto [answering, congested] = pools_->Load();
  // More passes while jobs wait for one and the clusters answering lately
  // mostly answer within twice their own round trip (passes, not the
  // clusters or the cores, hold dispatch back: distant clusters); fewer
  // while most answer later than that (requests queue in them, or the cores
  // here are full and answers are read late), and while fewer than half of
  // those allowed are at work (a burst is over). Between least and workers.
  int allowed = std::max(reconciler_->concurrency(), least);
  if (answering > 0 && 2 * congested > answering) {
    allowed = allowed * 3 / 4;
  } else if (answering > 0 && reconciler_->gated() > 0) {
    allowed += std::max(4, allowed / 2);
  } else if (2 * reconciler_->active() < allowed) {
    allowed = allowed * 3 / 4;
  }
  reconciler_->SetConcurrency(std::clamp(allowed, least, options_.workers));
}

void Engine::TakeObservation(DecideInput& in, JobObservation observation) {
  in.observed = std::move(observation.clusters);
  in.synced = std::move(observation.synced);
  in.behind = std::move(observation.behind);
  in.resource = std::move(observation.resource);
  in.finished_gone = std::move(observation.finished_gone);
}

std::set<Expectations::Key> Engine::Observe(DecideInput& in, const std::string& uid, int64_t epoch,
                                            const JobKind& kind, int64_t now, bool settle) {
  // Expectations are read before the observation. A watch event updates the
  // observer first and fulfils its expectation after (Engine::Observed), so
  // every expectation gone from this read is in the observation below. Read
  // the other way round, an event arriving between the two reads would leave
  // its object in neither, and the pass would create it again (a 409 and a
  // GET).
  const std::set<Expectations::Key> expected_before =
      settle ? expected_.Pending(uid, epoch, {}, now) : expected_.Peek(uid, epoch, {}, now);
  // Read before the observation too, for the same reason: a run seen in
  // between is in the observation, and dropped from these below.
  const std::set<Expectations::Run> unseen_before = expected_.UnseenRuns(uid, {}, now, false);
  const std::set<Expectations::Run> unseen_copies_before = expected_.UnseenCreates(uid, kWorkload, {}, now, false);
  TakeObservation(in, observer_->ForJob(uid, kind));
  const std::set<Expectations::Key> seen = SeenAtEpoch(in.observed, epoch);
  if (settle) (void)expected_.Pending(uid, epoch, seen, now);  // drops what is seen now
  for (const Expectations::Key& key : expected_before) {
    if (!seen.count(key)) in.expected.insert(key);
  }
  // A create whose answer a straggler awaits may land as well.
  for (const Expectations::Key& key : LateCreates(uid, epoch)) {
    if (!seen.count(key)) in.expected.insert(key);
  }
  // The creates read as unseen before the observation that it does not show
  // either (by cluster and epoch), kept in *out; with settle, those it shows
  // are dropped from the expectations. epochs_of lists what it shows.
  using Shown = std::set<Expectations::Run>;
  auto still_unseen = [&](const std::set<Expectations::Run>& before, const char* create_kind, auto epochs_of,
                          std::set<std::pair<std::string, int64_t>>* out) {
    if (before.empty()) return;
    Shown shown;
    for (const auto& [cluster, o] : in.observed) epochs_of(cluster, o, shown);
    if (settle) (void)expected_.UnseenCreates(uid, create_kind, shown, now, true);
    for (const Expectations::Run& r : before) {
      if (!shown.count(r)) out->insert(r);
    }
  };
  still_unseen(
      unseen_copies_before, kWorkload,
      [](const std::string& cluster, const ClusterObservation& o, Shown& shown) {
        for (const ObservedWorkload& w : o.workloads) shown.emplace(cluster, w.epoch);
      },
      &in.unseen_copies);
  // A kind not watched there (in.resource empty: genericKinds) is never
  // seen: its rows are not held for want of a sight that cannot come.
  if (!in.resource.empty()) {
    still_unseen(
        unseen_before, kJob,
        [](const std::string& cluster, const ClusterObservation& o, Shown& shown) {
          for (const ObservedJob& j : o.jobs) shown.emplace(cluster, j.epoch);
        },
        &in.unseen_runs);
  }
  if (!in.unseen_copies.empty() || !in.unseen_runs.empty()) in.created_lately = expected_.Young(uid, now);
  return seen;
}

Reconciler::PassResult Engine::Pass(const std::string& uid) {
  // A job created a moment ago comes as the API parsed and the store
  // committed it (see fresh_jobs.h); it has no remote intents yet.
  std::optional<FreshJobs::Entry> fresh = fresh_.Take(uid);
  // Any other job the engine wrote last comes as it wrote it (known_jobs.h).
  std::optional<KnownJobs::Entry> known = fresh ? std::nullopt : known_.Take(uid);
  Result<JobRecord> job = fresh   ? Result<JobRecord>(std::move(fresh->record))
                          : known ? Result<JobRecord>(std::move(known->record))
                                  : store_.GetByUid(uid);
  if (!job.ok()) {
    if (job.status().code() == Code::kNotFound) {  // purged; the collector takes what is left
      ForgetJob(uid);
      return -1;
    }
    spdlog::warn("dispatch: reading job {}: {}", uid, job.status().ToString());
    return options_.decide.retry_ms;
  }
  auto parsed = fresh ? Result<std::shared_ptr<const ParsedSpec>>(specs_.Put(uid, std::move(*fresh->spec)))
                      : specs_.Get(*job);
  if (!parsed.ok()) {
    // Written by a gantry that read it (a newer release, say, before a
    // rollback): nothing is decided for the job, neither a failure, whose
    // cleanup would stop a run this release cannot follow, nor anything
    // else; it says so, and is looked at again now and then (the release
    // that reads it may be back).
    const std::string why = fmt::format("this gantry cannot read the job's stored spec ({}); the job is left as "
                                        "it is until a gantry that reads it runs",
                                        parsed.status().message());
    spdlog::error("dispatch: job {}/{} uid={}: {}", job->ns, job->name, uid, why);
    if (!IsFinal(job->phase) && job->message != why) {
      DispatchUpdate u = ladder::Guarded(*job);
      u.message = why;
      known_.Drop(uid);
      (void)WriteSync(std::move(u));  // only a message: the next look writes it again
    }
    return options_.decide.lost_recheck_ms;
  }
  const JobSpec* spec = &(*parsed)->spec;
  auto intents = fresh   ? Result<std::vector<RemoteIntent>>(std::vector<RemoteIntent>{})
                 : known ? Result<std::vector<RemoteIntent>>(std::move(known->intents))
                         : store_.Intents(uid);
  if (!intents.ok()) {
    spdlog::warn("dispatch: reading intents of {}: {}", uid, intents.status().ToString());
    return options_.decide.retry_ms;
  }
  const int64_t now = clock_.NowMillis();
  DecideInput in;
  in.job = &*job;
  in.spec = spec;
  in.intents = std::move(*intents);
  in.read_gone = ReadGone(uid, in.intents);
  const std::set<Expectations::Key> seen = Observe(in, uid, job->epoch, (*parsed)->kind, now);
  if (!job->cluster.empty()) {
    in.job_create_failing_ms = CreateFailingMs(uid, job->cluster, job->epoch,
                                               seen.count({job->cluster, std::string(kJob)}) > 0,
                                               &in.job_create_error);
  }
  in.inventory_confirmed = inventory_confirmed_.load();  // before the facts (InventoryChanged)
  in.started_ms = started_ms_;
  in.since_start_ms = SinceStartMs();
  in.clusters = Facts(now);
  in.now_ms = now;
  in.options = options_.decide;
  // Stretched over the jobs that wait on it now (their timers, marked by
  // the reconciler from Plan::backstop).
  in.options.backstop_ms =
      BackstopMs(options_.decide.resync_ms, reconciler_->backstop_timers(), options_.resync_passes_per_s);
  // Not while the start's wait holds the job: Decide would not read it (a
  // placement per queued job at every retry, for nothing).
  if ((job->phase == JobPhase::kQueued || job->phase == JobPhase::kNominating ||
       job->phase == JobPhase::kUnschedulable) &&
      UnlistedAtStart(in).empty()) {
    placement::JobDemand demand = (*parsed)->demand;
    if (job->phase == JobPhase::kNominating && spec->dispatch.round_seconds > 0) {
      demand.rounds_elapsed =
          static_cast<int32_t>((now - job->nominated_ms) / (int64_t{spec->dispatch.round_seconds} * 1000));
    }
    const auto snapshots = Snapshots(now);
    in.placement = placement::Place(demand, *snapshots, options_.placement);
    in.max_copies = static_cast<size_t>(std::max(0, options_.placement.max_copies));
  }
  Plan plan = Decide(in);
  if (metrics_) metrics_->Pass(plan.step);
  TellStartWait(plan, job->phase);
  if (in.placement && in.placement->candidates.empty() && spdlog::should_log(spdlog::level::debug)) {
    std::string why;
    for (const auto& x : in.placement->excluded) why += fmt::format(" {}: {};", x.cluster, x.exclusion.message);
    spdlog::debug("job {}/{}: no cluster can take it now:{}", job->ns, job->name, why);
  }

  JobPhase phase_after = job->phase;
  const JobRecord* stored = &*job;  // the job as stored after this pass's write
  std::optional<JobRecord> written_job;
  if (plan.write) {
    std::optional<JobPhase> to = plan.write->phase;
    DispatchUpdate intent_changes;  // what the write does to the intents, for known_
    intent_changes.uid = uid;
    intent_changes.upsert_intents = plan.write->upsert_intents;
    intent_changes.drop_intents = plan.write->drop_intents;
    plan.write->durable =
        !MayBeLost(plan, in.intents, in.spec != nullptr && AtMostOnce(*in.spec));
    auto written = WriteSync(std::move(*plan.write));
    if (!written.ok()) {
      if (written.status().code() == Code::kConflict) {
        if (metrics_) metrics_->WriteConflict();
        return 0;  // the job moved meanwhile: decide again from what is stored now
      }
      if (written.status().code() == Code::kNotFound) {  // purged
        ForgetJob(uid);
        return -1;
      }
      WarnStoreWriteFailed(job->ns, job->name, written.status());
      return options_.decide.retry_ms;
    }
    in.intents = IntentsAfter(std::move(in.intents), intent_changes, written->updated_ms);
    known_.Put({*written, in.intents});
    written_job = std::move(*written);
    stored = &*written_job;
    if (to) phase_after = *to;
    if (to && *to != job->phase) {
      if (metrics_) {
        metrics_->Transition(job->phase, *to, plan.step);
        if (*to == JobPhase::kAdmitted) metrics_->Admitted(static_cast<double>(now - job->created_ms) / 1000.0);
        if (plan.step == "lease") {
          metrics_->Lease(stored->cluster, true);
          for (const std::string& loser : plan.lease_losers) metrics_->Lease(loser, false);
        }
      }
      spdlog::info("job {}/{} {} -> {} epoch={} cluster={} ({}): {}", job->ns, job->name, JobPhaseName(job->phase),
                   JobPhaseName(*to), stored->epoch, stored->cluster.empty() ? "-" : stored->cluster, plan.step,
                   stored->message);
    }
  } else {
    known_.Put({*job, in.intents});
  }
  if (IsFinal(phase_after)) {
    // Before this pass's deletes run: what they cause is bookkeeping.
    std::lock_guard lock(settling_mu_);
    settling_.insert(uid);
  }
  const bool creates_job = std::any_of(plan.actions.begin(), plan.actions.end(),
                                      [](const Action& a) { return a.verb == Verb::kCreate && a.kind == kJob; });
  if (creates_job && !Watches(spec->template_object)) {
    // Stored before its kind left genericKinds (or before they existed):
    // unwatched, it is created again at every lapse and left behind at the end.
    spdlog::warn("job {}/{}: kind {} of {} is not in genericKinds: gantry cannot see it run or finish, sends its "
                 "create again, and will not delete it; list the kind in gantry.yaml and restart",
                 job->ns, job->name, spec->template_object.value("kind", ""),
                 spec->template_object.value("apiVersion", ""));
  }
  ActionsOutcome acted = RunActions(*job, plan.actions);
  if (!acted.told.empty()) RecordTold(*stored, acted.told);
  if (!acted.refusal.message.empty()) {
    // Someone else's object holds the real job's name, or the owner refuses
    // it: fail the job instead of adopting or retrying.
    const std::string& taken = acted.refusal.message;
    known_.Drop(uid);  // written below, outside the entry's bookkeeping
    auto current = store_.GetByUid(uid);
    // Not read, or not written (below): looked at again after the usual
    // backoff, not at once (each pass sends the refused create again).
    const int64_t later = ActionRetryMs(NoteFailure(uid), options_.decide.retry_ms, acted.retry_after_ms);
    if (!current.ok()) return current.status().code() == Code::kNotFound ? 0 : later;
    if (!IsFinal(current->phase) && current->phase != JobPhase::kCancelling) {
      const std::string& where = acted.refused->cluster;
      const JobRefusalJudgement judged = JudgeRefusal(*current, *spec, in, acted);
      if (judged.verdict == JobRefusalVerdict::kWait) {
        return WaitOnRefusal(*current, taken, where, std::max(later, judged.wait_ms));
      }
      DispatchUpdate u;
      if (judged.verdict == JobRefusalVerdict::kMove) {
        // Only this cluster forbids the real job (RBAC, a policy, its kind
        // or namespace missing there): this try created nothing, so the
        // job is dispatched again, without that cluster for a while (the
        // row of its real job keeps the answer: Ladder::JobRefusalIn).
        u = ladder::Requeued(*current, in.intents,
                             fmt::format("{}; to be dispatched again without {} (left out of the job's dispatches "
                                         "for {})",
                                         taken, where, ladder::DurationText(options_.decide.job_refusal_hold_ms)),
                             clock_.NowMillis());
        // Whether another cluster can take it is the next pass's to judge
        // (step 4: with none now or later, the job fails as Refused; with one
        // held back or not Ready, it waits), not promised here.
        u.events.push_back(ladder::Event(
            "JobRefused",
            *u.message + fmt::format("; its next dispatch, at epoch {}, goes to another cluster if one can take it, "
                                     "else the job waits or fails (its message says which)",
                                     current->epoch + 1),
            where, "Warning"));
        RemoteIntent row = ladder::IntentFor(*acted.refused);
        row.present = false;
        // Unless an earlier try of this create went unanswered and may have
        // landed: then something of the job's may be there after all (the
        // refusal may even be because of it), and the row is a hold, an
        // ordinary withdrawn row to every other reader, as CreateKeepsFailing
        // writes it. The next epoch's run waits until the view shows none
        // there; refused, the row would let it start beside that one.
        if (in.unseen_runs.count({row.cluster, row.epoch})) {
          row.hold = taken;
        } else {
          row.refusal = taken;
        }
        std::erase_if(u.upsert_intents,
                      [&](const RemoteIntent& i) { return i.cluster == row.cluster && i.kind == row.kind; });
        u.upsert_intents.push_back(std::move(row));
      } else {
        u = ladder::Guarded(*current);
        u.phase = JobPhase::kFailed;
        u.message = taken;
        u.events.push_back(ladder::Event(acted.refusal.reason, taken, where, "Warning"));
        MarkIntentsAbsent(u, in.intents);
      }
      auto written = WriteSync(std::move(u));
      if (!Settled(written)) {
        WarnStoreWriteFailed(job->ns, job->name, written.status());
        return later;
      }
      spdlog::warn("job {}/{}: {}", job->ns, job->name, taken);
    }
    ClearFailures(uid);
    return 0;
  }
  if (acted.job_created && AtMostOnce(*spec) &&
      !RecordJobCreated(*stored, in.intents, *acted.job_created)) {
    // Created, and not on record: known to this run of the daemon at least.
    NoteUnanswered(uid, *acted.job_created);
    return options_.decide.retry_ms;
  }
  if (!acted.copy_refusals.empty()) {
    // Decide again now: another candidate, or none left.
    return RecordCopyRefusals(uid, acted.copy_refusals) ? 0 : options_.decide.retry_ms;
  }
  if (!acted.all_ok) {
    const int64_t retry = ActionRetryMs(NoteFailure(uid), options_.decide.retry_ms, acted.retry_after_ms);
    // Not a backstop: an action is still to be sent.
    return plan.requeue_ms < 0 || plan.requeue_ms > retry ? retry : plan.requeue_ms;
  }
  ClearFailures(uid);
  if (plan.requeue_ms < 0) ForgetJob(uid);  // nothing left to do for this job
  return {plan.requeue_ms, plan.backstop};
}

int64_t Engine::WaitOnRefusal(const JobRecord& job, const std::string& refusal, const std::string& cluster,
                              int64_t wait_ms) {
  // Said once: the cluster's answer may differ from one try to the next (a
  // webhook's request id), the start does not.
  const std::string said = fmt::format(
      "waiting: {} refuses the job's create now, but an earlier create there went unanswered and may have landed",
      cluster);
  if (job.message.starts_with(said)) return wait_ms;
  const std::string message = fmt::format(
      "{}: it is dispatched elsewhere only once {}'s view shows no such job, {} after that create ({})", said,
      cluster,
      ladder::DurationText(options_.decide.AbsenceConfirmedAfterMs()),
      refusal);
  DispatchUpdate u = ladder::Guarded(job);
  u.message = message;
  u.events.push_back(ladder::Event("JobRefusedWaiting", message, cluster, "Warning"));
  auto written = WriteSync(std::move(u));
  if (!Settled(written)) {
    WarnStoreWriteFailed(job.ns, job.name, written.status());
  } else {
    spdlog::warn("job {}/{}: {}", job.ns, job.name, message);
  }
  return wait_ms;
}

JobRefusalJudgement Engine::JudgeRefusal(const JobRecord& job, const JobSpec& spec, const DecideInput& in,
                                         const ActionsOutcome& acted) {
  const Action* a = acted.refused;
  if (!acted.refusal.this_cluster_only || !a || a->verb != Verb::kCreate || a->kind != kJob) return {};
  if (job.cluster != a->cluster || job.epoch != a->epoch) return {};
  JobRefusalFacts f;
  f.phase = job.phase;
  f.at_most_once = AtMostOnce(spec);
  f.now_ms = in.now_ms;  // the moment of the view below, not later
  if (const RemoteIntent* row = ladder::JobRowIn(in.intents, a->cluster, a->epoch)) f.created_ms = row->created_ms;
  {
    std::lock_guard lock(unanswered_mu_);
    auto u = unanswered_.find(job.uid);
    if (u != unanswered_.end() && u->second.cluster == a->cluster && u->second.epoch == a->epoch) {
      f.unanswered_since_ms = u->second.since_ms;
    }
  }
  // Leased before this daemon started: a create sent before it stopped may
  // have gone unanswered.
  if (f.unanswered_since_ms == 0 && job.lease_ms < started_ms_) f.unanswered_since_ms = started_ms_;
  // The pass planned the create: its view showed no real job there.
  f.view_confirms_absence = ladder::ConfirmsAbsence(in, a->cluster);
  f.kind_watched = !in.resource.empty();
  return JudgeJobRefusal(f, options_.decide);
}

Result<JobRecord> Engine::WriteSync(DispatchUpdate update) {
  std::promise<Result<JobRecord>> done;
  store_.ApplyDispatch(std::move(update), [&done](Result<JobRecord> r) { done.set_value(std::move(r)); });
  Result<JobRecord> written = done.get_future().get();
  // Writes succeed again, with no failure for an interval: the next failure
  // is told at once, and what was held back since the last line is told now.
  if (const int64_t held = written.ok() ? store_write_failed_log_.Reset(clock_.MonotonicMillis()) : 0; held > 0) {
    spdlog::info("dispatch: job store writes succeed again ({} failed write(s) not logged since the last such line)",
                 held);
  }
  return written;
}

int Engine::NoteFailure(const std::string& uid) {
  std::lock_guard lock(failures_mu_);
  const int n = ++failures_[uid];
  failing_.store(failures_.size(), std::memory_order_relaxed);
  return n;
}

void Engine::ClearFailures(const std::string& uid) {
  if (failing_.load(std::memory_order_relaxed) == 0) return;  // the usual case: no lock on every pass
  std::lock_guard lock(failures_mu_);
  failures_.erase(uid);
  failing_.store(failures_.size(), std::memory_order_relaxed);
}

void Engine::ForgetJob(const std::string& uid) {
  {
    std::lock_guard seen(cancel_seen_mu_);
    cancel_seen_.erase(uid);
  }
  {
    std::lock_guard lock(action_errors_mu_);
    action_errors_.erase(uid);
  }
  {
    std::lock_guard lock(unanswered_mu_);
    unanswered_.erase(uid);
  }
  {
    // A refusal a straggler read for an action no later pass planned (the
    // job leased elsewhere, moved on, ended): nothing takes it now.
    std::lock_guard lock(late_mu_);
    LateAction first;
    first.uid = uid;  // (the other fields' defaults come first)
    auto it = late_refused_.lower_bound(first);
    while (it != late_refused_.end() && it->first.uid == uid) it = late_refused_.erase(it);
  }
  SendingDone(uid);  // none should wait, but a cancel is never left unanswered
  ClearFailures(uid);
  known_.Drop(uid);
  specs_.Forget(uid);
  expected_.Forget(uid);
  std::lock_guard lock(settling_mu_);
  settling_.erase(uid);
}

void Engine::LeaveUnknown(const std::string& uid, const JobObservation& observation) {
  // Once per uid and run of the daemon; the set is bounded (a store
  // replaced under a large fleet would name many).
  constexpr std::size_t kMaxTold = 10'000;
  if (gc_told_.size() >= kMaxTold || !gc_told_.insert(uid).second) return;
  std::vector<std::string> where;
  for (const auto& [cluster, o] : observation.clusters) {
    if (!o.workloads.empty() || !o.jobs.empty()) where.push_back(cluster);
  }
  if (where.empty()) return;
  spdlog::warn("dispatch: objects labelled with origin {} for job uid {} in {}: this daemon never had that job "
               "(another gantry with the same origin, or its database was replaced), so they are left alone; "
               "delete them by their gantry.dev/job-uid label if nothing should run them",
               options_.decide.origin, uid, fmt::join(where, ", "));
}

void Engine::RunGc() {
  std::unique_lock lock(gc_mu_);
  while (!stopping_) {
    gc_cv_.wait_for(lock, std::chrono::milliseconds(options_.gc_interval_ms));
    if (stopping_) return;
    lock.unlock();
    ExpireRecords();
    const std::shared_ptr<const FleetFacts> facts = Facts(clock_.NowMillis());
    for (const std::string& uid : observer_->AllJobUids()) {
      // Each delete may wait out its client's deadline (a cluster cut off
      // since its view synced): a shutdown does not wait for the round.
      if (stopping_) return;
      auto job = store_.GetByUid(uid);
      if (job.ok() || job.status().code() != Code::kNotFound) continue;
      auto purged = store_.WasPurged(uid);
      if (!purged.ok()) continue;  // asked again at the next round
      const JobObservation observation = observer_->ForJob(uid);
      if (!*purged) {
        LeaveUnknown(uid, observation);
        continue;
      }
      for (const auto& [cluster, o] : observation.clusters) {
        // Only where the cluster answers: a view stays synced through a
        // partition, and each delete there would wait out its deadline.
        auto f = facts->find(cluster);
        if (!observation.synced->count(cluster) || f == facts->end() || !f->second.ready) continue;
        JobRecord ghost;
        ghost.uid = uid;
        std::vector<Action> deletes;
        for (const ObservedWorkload& w : o.workloads) deletes.push_back(DeleteWorkloadAction(cluster, KueueVersionOf(*facts, cluster), w));
        for (const ObservedJob& j : o.jobs) deletes.push_back(DeleteJobAction(cluster, j));
        int deleted = 0;
        for (const Action& a : deletes) {
          Refusal ignored;
          deleted += Execute(ghost, a, &ignored);
        }
        if (deleted > 0) spdlog::info("dispatch: deleted {} object(s) of purged job uid {} in {}", deleted, uid, cluster);
      }
    }
    lock.lock();
  }
}

}  // namespace gantry::dispatch
