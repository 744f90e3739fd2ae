// Engine::RunHealthWatch: turns changes of cluster readiness into wake-ups.
// Watches report object changes, but a partition changes no object: without
// this, a job whose owner went away would wait for its next resync before
// its cluster-lost clock was looked at. Likewise a cluster whose quota can
// be read again, or whose LocalQueues changed: a job queued for it has
// nothing else to wake it.
#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "gantry/dispatch/engine.h"
#include "gantry/store/job_scan.h"

namespace gantry::dispatch {

// A cluster's readiness as the health watch compares it: Ready (answering,
// its Workloads and Jobs listed) since when (a NotReady blip between two
// looks changes the time), or not ready; when ready, the watched kinds
// that have not listed (a JobSet view that lists again concerns the JobSets
// there, whatever other optional kind still fails); and the stamp of the
// last change in what has listed there (ClusterObserver::ListedChanges): a cluster whose
// watches listed and were refused again between two looks was ready, and
// may have been given jobs, though neither look saw it.
struct Readiness {
  bool ready = false;
  int64_t since_ms = 0;
  std::set<std::string> unlisted;
  uint64_t listed_changes = 0;
  // Its quota can be read (no capacityError). A cluster whose ClusterQueues
  // gantry may not list stays Ready; placement weighs it by its last
  // reading, and with none sends it no new job until it can be read.
  bool capacity_readable = false;
  // Where its LocalQueues lead, and its WorkloadPriorityClasses
  // (ClusterQueues::stamp; 0 when unknown): a LocalQueue or a class created,
  // or a ClusterQueue turned Active, may let a queued job go there, and
  // nothing else wakes it.
  uint64_t queues = 0;
  friend bool operator==(const Readiness&, const Readiness&) = default;
  // A kind this one shows listed that `before` did not.
  bool KindListedSince(const Readiness& before) const {
    return std::any_of(before.unlisted.begin(), before.unlisted.end(),
                       [&](const std::string& r) { return !unlisted.count(r); });
  }
};

void Engine::RunHealthWatch() {
  std::map<std::string, Readiness> last;  // cluster -> at the previous look
  // cluster -> what the prober showed at the previous look that said
  // anything (absent: Unknown so far): the start of its Ready period (-1
  // when NotReady), and whether its watches were asked to relist in it.
  struct Answering {
    int64_t period = -1;
    bool relisted = false;
  };
  std::map<std::string, Answering> answering;
  // cluster -> its view's resources behind at the previous look, while its
  // last probe failed: one of them listing again since says the cluster
  // answers, and is probed at once rather than at its backed-off probe.
  std::map<std::string, std::vector<std::string>> behind_out;
  // The scans of the waiting jobs that clusters becoming Ready ask for: at
  // most one per kWakeWaitingEvery, the first at once, so that a cluster
  // flapping every second does not walk 100,000 queued or Unschedulable
  // jobs every second. One asked for meanwhile is done when its time comes.
  constexpr auto kWakeWaitingEvery = std::chrono::seconds(5);
  std::optional<std::chrono::steady_clock::time_point> waiting_woken;
  bool waiting_due = false;
  // The clusters Ready at some look since they entered the inventory (or
  // the daemon started): a cluster's first Ready also wakes the jobs its
  // view shows objects of with no row naming it (what was left there while
  // it was out of the inventory), once, not at every blip.
  std::set<std::string> ready_once;
  // The clusters answering whose view was behind at the previous look. One
  // whose view is current again at this look wakes the jobs with rows
  // there: a pass that could not take the view's word for an object's
  // absence (ConfirmedGone) waits for nothing else, and a relist that
  // finds nothing changed notifies no job (else its backstop, 30 s).
  std::set<std::string> answering_behind;
  std::unique_lock lock(gc_mu_);
  // The first look is at once: what it sees is what later looks compare
  // with, and jobs dispatched before it to a cluster it then finds not
  // ready could be missed.
  for (bool first = true; !stopping_; first = false) {
    if (!first) gc_cv_.wait_for(lock, std::chrono::milliseconds(options_.health_poll_ms));
    if (stopping_) return;
    lock.unlock();
    // Removed by a reload since the last look, and maybe added back since:
    // new again (a removal and a re-add between two looks would otherwise
    // leave it Ready once already, and the jobs whose runs it kept while
    // it was out would never be woken to delete them).
    std::set<std::string> left;
    {
      std::lock_guard left_lock(left_mu_);
      left.swap(left_inventory_);
    }
    for (const std::string& name : left) {
      ready_once.erase(name);
      last.erase(name);
      answering.erase(name);
      behind_out.erase(name);
    }
    SetPassAllowance();
    // Connections no request took for a while (most of them ended by the
    // server meanwhile) are closed even while nothing goes to their cluster.
    pools_->CloseIdle();
    const std::vector<inventory::ClusterView> views = fleet_.Clusters();
    ObserveUsableClusters(views);
    // While a cluster refuses a watch, keeps the fleet view, and with it the
    // refusal's clock and its row in the store, current when no pass runs.
    if (WatchRefusalsToNote()) (void)Facts(clock_.NowMillis());
    std::map<std::string, Readiness> now;
    std::map<std::string, Answering> answering_now;
    std::map<std::string, std::vector<std::string>> behind_out_now;
    std::set<std::string> answering_behind_now;
    std::set<std::string> current_again;
    std::set<std::string> unprobed;  // health Unknown: not probed yet (a start), for the log only
    std::set<std::string> unsynced;  // Ready, its view not synced for jobs yet (a start), for the log only
    for (const inventory::ClusterView& view : views) {
      const std::string& name = view.config.name;
      if (view.health.state == inventory::HealthState::kUnknown) unprobed.insert(name);
      // The stamp first: a change after it is seen in the next look's stamp,
      // whatever this look's other reads show.
      const uint64_t listed_changes = observer_->ListedChanges(name);
      const bool answers = view.health.state == inventory::HealthState::kReady && view.Usable();
      const bool ready = answers && observer_->SyncedForJobs(name);
      if (answers && !ready) unsynced.insert(name);
      const bool readable = ready && view.capacity.has_value() && view.capacity_error.empty();
      now[name] = {ready, ready ? view.health.since_ms : 0, ready ? observer_->Unlisted(name) : std::set<std::string>{},
                   listed_changes, readable,
                   readable && view.capacity->queues ? view.capacity->queues->stamp : 0};
      auto before = answering.find(name);
      if (!answers) {
        if (view.health.state == inventory::HealthState::kNotReady) {
          answering_now[name] = {};
          std::vector<std::string> behind = observer_->ViewBehind(name).resources;
          if (auto was = behind_out.find(name); was != behind_out.end()) {
            const bool listed = std::any_of(was->second.begin(), was->second.end(), [&](const std::string& r) {
              return std::find(behind.begin(), behind.end(), r) == behind.end();
            });
            if (listed && fleet_.ProbeSoon(name)) {
              spdlog::info("dispatch: cluster {}'s watches list again while its last probe failed: probing it now",
                           name);
            }
          }
          behind_out_now[name] = std::move(behind);
        } else if (before != answering.end()) {
          answering_now[name] = before->second;  // Unknown tells nothing new
        }
        continue;
      }
      if (observer_->Behind(name)) {
        answering_behind_now.insert(name);
      } else if (answering_behind.count(name)) {
        current_again.insert(name);
      }
      Answering& a = answering_now[name];
      a.period = view.health.since_ms;
      a.relisted = before != answering.end() && before->second.period == a.period && before->second.relisted;
      if (a.relisted) continue;
      // Answering again after the prober saw it fail (or Ready anew between
      // two looks, a blip), or while its view is behind: its watches relist
      // now, once per Ready period. A stream that went silent in the outage
      // is replaced, and a watch waiting out its backoff (up to the
      // observer's max_backoff, 10 s by default) does not wait; until they
      // have listed, absence there proves nothing.
      const bool returned = before != answering.end() && before->second.period != a.period;
      if (!returned && !observer_->Behind(name)) continue;
      a.relisted = true;
      if (!returned) {
        if (view.health.Doubted()) {
          spdlog::info("dispatch: a watch in cluster {} failed, and so did its last probe (probed again in a "
                       "second): its watches relist now",
                       name);
        } else {
          spdlog::info("dispatch: cluster {} answers its probe, but a watch there failed: its watches relist now",
                       name);
        }
        observer_->Relist(name);
        continue;
      }
      // A watch that listed again since the outage's last failed probe (they
      // retry on their own, and often find the cluster back before a probe
      // backed off does) has no stream from the outage: it is left alone,
      // rather than held behind until its stream's next end.
      const std::size_t asked = observer_->Relist(name, view.health.ready_after_failure_mono_ms);
      if (asked > 0) {
        spdlog::info("dispatch: cluster {} answers again: {} of its watches relist now", name, asked);
      } else {
        // (What waits on its view goes on now: its return wakes the jobs with
        // rows there, below.)
        spdlog::info("dispatch: cluster {} answers again; its watches listed since its last failed probe", name);
      }
    }
    answering = std::move(answering_now);
    behind_out = std::move(behind_out_now);
    answering_behind = std::move(answering_behind_now);
    for (const std::string& cluster : current_again) {
      size_t woken = 0;
      Status scanned = ForEachUidWithIntents(store_, &cluster, [&](const std::string& uid) {
        reconciler_->Wake(uid);
        ++woken;
      });
      if (!scanned.ok()) spdlog::warn("dispatch: jobs in {}: {}", cluster, scanned.ToString());
      if (woken > 0) {
        spdlog::info("dispatch: cluster {}'s view is current again: looking again at {} job(s) with objects there",
                     cluster, woken);
      }
    }
    bool became_ready = false;
    for (const auto& [cluster, readiness] : now) {
      const bool ready = readiness.ready;
      auto before = last.find(cluster);
      if (before != last.end() && before->second == readiness) continue;
      // Its quota readable again while it stayed Ready (RBAC mended): it may
      // be the first candidate of a queued job, which nothing else wakes.
      // (The passes woken read a fresh fleet view: the change moved the
      // fleet's generation.)
      if (before != last.end() && before->second.ready && ready && !before->second.capacity_readable &&
          readiness.capacity_readable) {
        became_ready = true;
        spdlog::info("dispatch: cluster {}'s quota can be read again: looking again at queued and nominating jobs",
                     cluster);
      }
      // Its queues changed while it stayed Ready and readable (a LocalQueue
      // or a WorkloadPriorityClass created, say): the same, for the jobs
      // waiting for one.
      if (before != last.end() && before->second.capacity_readable && readiness.capacity_readable &&
          before->second.queues != readiness.queues) {
        became_ready = true;
        spdlog::info("dispatch: cluster {}'s LocalQueues, ClusterQueues or WorkloadPriorityClasses changed: "
                     "looking again at queued and nominating jobs",
                     cluster);
      }
      // Only its quota's readability or its queues changed: its own jobs need no look.
      if (before != last.end()) {
        Readiness same_else = readiness;
        same_else.capacity_readable = before->second.capacity_readable;
        same_else.queues = before->second.queues;
        if (same_else == before->second) continue;
      }
      // First seen, not ready: nothing of ours depends on it yet, unless its
      // watches have listed (it may have been ready, and given jobs, before
      // this look: a cluster added by a reload between two looks).
      if (before == last.end() && !ready && readiness.listed_changes == 0) continue;
      // Ready anew, or a kind listed again there (jobs of that kind may go
      // there now); not when only a kind stopped listing.
      const bool kinds_only = before != last.end() && before->second.ready && ready &&
                              before->second.since_ms == readiness.since_ms;
      const bool kind_listed = kinds_only && readiness.KindListedSince(before->second);
      became_ready |= ready && (!kinds_only || kind_listed);
      {
        // The passes woken below must see this change: the cached view may
        // predate it by up to fleet_refresh_ms, and a job whose only
        // business is with this cluster is not woken again (declared lost).
        std::lock_guard fleet_lock(fleet_mu_);
        fleet_read_ms_ = -1;
      }
      size_t woken = 0;
      std::vector<std::string> seen_there;
      if (ready && ready_once.insert(cluster).second) seen_there = observer_->JobUidsIn(cluster);  // sorted
      Status scanned = ForEachUidWithIntents(store_, &cluster, [&](const std::string& uid) {
        reconciler_->WakeUrgent(uid);
        if (auto it = std::lower_bound(seen_there.begin(), seen_there.end(), uid); it != seen_there.end() && *it == uid) {
          it->clear();  // woken: not again below
        }
        ++woken;
      });
      if (!scanned.ok()) spdlog::warn("dispatch: jobs in {}: {}", cluster, scanned.ToString());
      // And those whose objects it shows with no row of theirs naming it
      // (what a job left in a cluster removed from the inventory, now back):
      // their passes withdraw what they no longer want there.
      for (const std::string& uid : seen_there) {
        if (uid.empty()) continue;
        reconciler_->WakeUrgent(uid);
        ++woken;
      }
      if (woken > 0) {
        // Not ready at either look, yet its watches changed between them:
        // which kinds it lets gantry list, or a list read again (the watches
        // may answer while its probes fail).
        const bool listing_only = before != last.end() && !before->second.ready && !ready;
        const bool kinds_changed = listing_only && before->second.unlisted != readiness.unlisted;
        const bool relisted = listing_only && before->second.listed_changes != readiness.listed_changes;
        spdlog::info("dispatch: cluster {} {}: looking again at {} job(s) with objects there", cluster,
                     kinds_only     ? (kind_listed ? "lists a watched kind again" : "no longer lists a watched kind")
                     : ready        ? "is reachable"
                     : kinds_changed ? "changed which kinds it lets gantry list, and is not ready"
                     : unprobed.count(cluster) ? "is not probed yet"
                     : unsynced.count(cluster) ? "answers, but its view is not synced yet"
                     : relisted                ? "listed its objects again, but is not ready"
                                               : "is unreachable",
                     woken);
      }
    }
    // A cluster that became Ready may be the first candidate of a job that
    // had none, or one more for a job waiting for admission: queued and
    // nominating jobs are looked at again (behind the jobs in flight).
    waiting_due |= became_ready;
    const auto steady_now = std::chrono::steady_clock::now();
    if (waiting_due && (!waiting_woken || steady_now >= *waiting_woken + kWakeWaitingEvery)) {
      waiting_due = false;
      waiting_woken = steady_now;
      if (auto woken = reconciler_->WakeWaiting(); !woken.ok()) {
        spdlog::warn("dispatch: queued and nominating jobs: {}", woken.status().ToString());
        waiting_due = true;  // tried again when its time comes
      }
    }
    // One that left the inventory is new again if it comes back.
    std::erase_if(ready_once, [&](const std::string& c) { return !now.count(c); });
    last = std::move(now);
    lock.lock();
  }
}

void Engine::TellStartWait(const Plan& plan, JobPhase phase) {
  // At every pass: a plain load, no read-modify-write, unless there is
  // something to tell (a start with no wait never gets past this).
  const int told = start_wait_told_.load(std::memory_order_relaxed);
  const bool waits = plan.step == "start-listing";
  if (told == 2 || (told == 0 && !waits) || (told == 1 && waits)) return;
  // Finished and cancelling jobs are not held by the wait: their passes
  // tell nothing of its end.
  if (IsFinal(phase) || phase == JobPhase::kCancelling) return;
  if (waits) {
    int expected = 0;
    if (!start_wait_told_.compare_exchange_strong(expected, 1)) return;
    spdlog::info("dispatch: after the start, no job is decided on until {} {} listed ({} s after the start at most): "
                 "a run there must be seen first, which the store may not know of (a database restored from a "
                 "backup)",
                 fmt::join(plan.waiting_for, ", "), plan.waiting_for.size() == 1 ? "is" : "are",
                 options_.decide.start_listing_ms / 1000);
    return;
  }
  int expected = 1;
  if (!start_wait_told_.compare_exchange_strong(expected, 2)) return;
  const int64_t since_start_ms = SinceStartMs();
  spdlog::info("dispatch: jobs are decided on now, {:.1f} s after the start{}", since_start_ms / 1000.0,
               since_start_ms >= options_.decide.start_listing_ms
                   ? ": the wait for clusters not listed yet is over (their runs are seen once they answer)"
                   : ": every cluster gantry can reach is listed");
}

}  // namespace gantry::dispatch
