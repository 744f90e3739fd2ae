#include "gantry/dispatch/decide.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gantry/common/cut_text.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/job/kueue_labels.h"
#include "ladder.h"

namespace gantry::dispatch {
namespace ladder {

// Step 1: an object of an older epoch, a job while nobody holds the lease,
// or, once one holds it, anything outside the owner is deleted on sight.
// Never the owner's current one. (A loser's copy whose create landed after
// its withdrawal was confirmed has no row left: it would hold quota there
// until the job ends.) A current-epoch object outside the owner is taken
// for such a stray only while the owner answers: with the owner out of
// reach or out of the inventory, it may be the owner's own run seen under
// another entry's name (an entry renamed, two entries for one server), and
// deleting it would stop a run that onClusterLoss: Wait keeps for its owner.
//
// Except an older epoch's real job, not seen ended, in a view that is
// behind (the cluster answers again after an outage, and its watches have
// not listed again yet): its relist may show that run succeeded meanwhile,
// and then the job is done (EarlierRunSucceeded), which a delete now would
// have thrown away with the object. It waits for the relist only while the
// job holds no lease (Queued or Nominating), so no run of it can start
// meanwhile; at a lease its delete goes, before the earlier-run gate
// (EarlierRunGate) lets the new run start, as before.
//
// And, while nobody holds the lease, a Workload copy of an epoch newer than
// the job's with no real job of that epoch beside it: no dispatch of
// gantry's made it (an operator's edit of its gantry.dev/epoch, a store
// restored from an older copy of itself). It would hold quota there, and
// the name the job's copy needs, for good. A
// newer epoch's Workload beside a real job of that epoch is that run's: it
// goes with the run (deleted above while nobody holds the lease).
bool Ladder::Fence(Plan& plan) const {
  const bool has_owner = !job_.cluster.empty() &&
                         (job_.phase == JobPhase::kAdmitted || job_.phase == JobPhase::kRunning);
  const bool strays_known = has_owner && Reachable(job_.cluster);
  for (const auto& [cluster, o] : in_.observed) {
    if (!Reachable(cluster)) continue;
    const bool stray = strays_known && cluster != job_.cluster;
    for (const ObservedWorkload& w : o.workloads) {
      // (Only while nobody holds the lease, as the copy of a leased job's
      // run is never deleted for its epoch: an edit of the owner's would
      // stop the run. Not for a kind gantry does not watch: its run beside
      // would not show.)
      const bool newer_copy = w.epoch > job_.epoch && !has_owner && !in_.resource.empty() &&
                              std::none_of(o.jobs.begin(), o.jobs.end(), [&](const auto& j) {
                                return j.epoch == w.epoch;
                              });
      if (w.epoch < job_.epoch || job_.phase == JobPhase::kQueued || stray || newer_copy) {
        plan.actions.push_back(DeleteWorkload(cluster, w));
      }
    }
    for (const ObservedJob& j : o.jobs) {
      if (AwaitsRelist(cluster, j)) continue;  // (above)
      if (j.epoch < job_.epoch || !has_owner || stray) {
        plan.actions.push_back(DeleteJob(cluster, j));
        plan.actions.back().tell_end_when_deleted = has_owner && j.epoch < job_.epoch;
      }
    }
  }
  return !plan.actions.empty();
}

// Whether j is a run of a dispatch the job has given up: of an older epoch,
// or of its own while it is Queued (sent back, not dispatched again yet:
// the next nomination moves it to epoch+1).
bool Ladder::OfEarlierDispatch(const ObservedJob& j) const {
  return j.epoch < job_.epoch || (job_.phase == JobPhase::kQueued && j.epoch == job_.epoch);
}

// Whether fencing and the sweep leave an older epoch's real job j in
// cluster for its view's relist (Fence says why).
bool Ladder::AwaitsRelist(const std::string& cluster, const ObservedJob& j) const {
  if (!OfEarlierDispatch(j) || Ended(&j) || !in_.behind->count(cluster)) return false;
  // Not for longer than relist_wait_ms of the view behind: a list that
  // keeps failing must not leave the run undeleted, and (EarlierJobIn) the
  // job kept from that cluster, for good.
  if (auto f = in_.clusters->find(cluster);
      f != in_.clusters->end() && f->second.behind_for_ms >= opt_.relist_wait_ms) {
    return false;
  }
  return job_.phase == JobPhase::kQueued || job_.phase == JobPhase::kNominating;
}

// While the job's own earlier run, not seen ended, waits for a view's
// relist (AwaitsRelist), a verdict that ends the dispatch of a job holding
// no lease (its dispatch timeout, Unschedulable, every cluster refusing it)
// waits too: the relist may show that run succeeded (EarlierRunSucceeded),
// which the verdict's cleanup would throw away with the object. And a job
// past its dispatch timeout takes no lease meanwhile (Run): the lease would
// fence that run, and the job run again after its deadline. At most
// relist_wait_ms of the view behind: a relist that keeps failing then lets
// the verdict go, as before.
std::optional<Plan> Ladder::WaitForRelist(const std::string& step) const {
  for (const auto& [cluster, o] : in_.observed) {
    if (!Reachable(cluster)) continue;
    for (const ObservedJob& j : o.jobs) {
      if (!OwnEarlierRun(j) || !AwaitsRelist(cluster, j)) continue;  // (its bound too)
      Plan wait;
      wait.step = step;
      wait.requeue_ms = std::min(opt_.retry_ms, opt_.relist_wait_ms - in_.clusters->at(cluster).behind_for_ms);
      const std::string msg = fmt::format(
          "waiting for {} to list its objects again: the job's run there of epoch {} may have ended while out of "
          "gantry's sight",
          cluster, j.epoch);
      if (job_.message != msg) {
        DispatchUpdate u = Guarded(job_);
        u.message = msg;
        wait.write = std::move(u);
      }
      return wait;
    }
  }
  return std::nullopt;
}

std::optional<Plan> Ladder::RelistBeforeVerdict(const Plan& plan) const {
  if (!plan.write || !plan.write->phase) return std::nullopt;
  const JobPhase to = *plan.write->phase;
  if (!IsFinal(to) && to != JobPhase::kUnschedulable) return std::nullopt;
  return WaitForRelist(plan.step);
}

bool Ladder::EarlierJobIn(const std::string& cluster) const {
  const auto& jobs = Observed(cluster)->jobs;
  if (std::any_of(jobs.begin(), jobs.end(), [&](const ObservedJob& j) { return OfEarlierDispatch(j); })) return true;
  const bool queued = job_.phase == JobPhase::kQueued;
  bool withdrawn = false;
  for (const RemoteIntent& i : in_.intents) {
    if (i.cluster != cluster || i.kind == kWorkload || i.present || !i.refusal.empty()) continue;
    if (i.epoch < job_.epoch || (queued && i.epoch == job_.epoch)) withdrawn = true;
  }
  if (!withdrawn) return false;
  const auto gone = ConfirmedGone();
  return std::find(gone.begin(), gone.end(), std::make_pair(cluster, std::string(kJob))) == gone.end();
}

// Whether j has the job's own name and namespace: an object with gantry's
// labels and another name is not taken for a run of the job's.
bool Ladder::OwnRun(const ObservedJob& j) const {
  return j.ns == job_.ns && j.name == RemoteName(job_.name, job_.uid);
}

// Whether j is the job's own run of an earlier dispatch: its name and
// namespace, and an epoch (one with none is not taken for how the job ended).
bool Ladder::OwnEarlierRun(const ObservedJob& j) const {
  return OfEarlierDispatch(j) && j.epoch > 0 && OwnRun(j);
}


// Withdrawn copies (intents marked absent, e.g. the losers of a lease whose
// cluster did not answer then) are deleted once reachable (by name while
// the cluster answers but refuses gantry the list: AnswersUnseen), and their rows
// dropped once the cluster shows them gone, or a read by name found them
// gone long enough after (ReadGone); a refused copy's row once its
// epoch's nomination is over (ConfirmedGone).
void Ladder::Sweep(Plan& plan, Plan& deletes) const {
  auto touched = [&](const std::string& cluster, const std::string& kind) {
    if (!plan.write) return false;
    return std::any_of(plan.write->upsert_intents.begin(), plan.write->upsert_intents.end(),
                       [&](const RemoteIntent& i) { return i.cluster == cluster && i.kind == kind; });
  };
  // Duplicates of the fencing deletes are removed by Run().
  for (const RemoteIntent& i : in_.intents) {
    if (i.present || touched(i.cluster, i.kind)) continue;
    if (StillToReadByName(i)) deletes.actions.push_back(DeleteUnseen(i));
    if (!Reachable(i.cluster)) continue;
    const ClusterObservation* o = Observed(i.cluster);
    if (i.kind == kWorkload) {
      for (const ObservedWorkload& w : o->workloads) deletes.actions.push_back(DeleteWorkload(i.cluster, w));
    } else {
      for (const ObservedJob& j : o->jobs) {
        if (!AwaitsRelist(i.cluster, j)) deletes.actions.push_back(DeleteJob(i.cluster, j));
      }
    }
  }
  LookAgainWhenOld(plan);
  std::vector<std::pair<std::string, std::string>> drops = ConfirmedGone();
  std::erase_if(drops, [&](const auto& d) { return touched(d.first, d.second); });
  if (drops.empty()) return;
  if (!plan.write) plan.write = Guarded(job_);
  KeepHolds(*plan.write, std::move(drops));
}

Plan Ladder::Run() {
  // Final and cancelling jobs withdraw everything; no fencing step needed.
  if (IsFinal(job_.phase)) return Cleanup("finished");
  if (job_.phase == JobPhase::kCancelling) {
    if (std::optional<Plan> ended = EndedBeforeCancel()) return std::move(*ended);
    return Cancel();
  }
  // After a start, until the clusters are listed; then a run of a history
  // the store lost (a restored database) takes the lease (step 0).
  if (std::optional<Plan> wait = AwaitFirstListing()) return std::move(*wait);
  if (std::optional<Plan> adopted = StoreBehind()) return std::move(*adopted);
  // No cluster can ever run it: it holds no lease, and only what is left of
  // its copies is withdrawn (it is not the lease holder's ladder below,
  // which would read the empty owner as one removed from the inventory).
  if (job_.phase == JobPhase::kUnschedulable) return Unschedulable();
  if (std::optional<Plan> done = EarlierRunSucceeded()) return std::move(*done);
  Plan fence;
  Fence(fence);
  Plan plan;
  switch (job_.phase) {
    case JobPhase::kQueued:
      plan = Nominate();
      break;
    case JobPhase::kNominating: {
      if (std::optional<Plan> wait; PastDeadline() && (wait = WaitForRelist("timeout"))) {
        plan = std::move(*wait);  // (WaitForRelist says why)
        break;
      }
      if (auto p = Lease()) { plan = std::move(*p); break; }
      if (auto p = Timeout()) { plan = std::move(*p); break; }
      if (auto p = Widen()) { plan = std::move(*p); break; }
      if (auto p = AllDeactivated()) { plan = std::move(*p); break; }
      plan = Copies();
      break;
    }
    default:
      plan = Owned();
      OwnerReturned(plan);
      break;
  }
  if (std::optional<Plan> wait = RelistBeforeVerdict(plan)) plan = std::move(*wait);
  Sweep(plan, fence);
  if (!fence.actions.empty()) {
    if (plan.step.empty()) plan.step = "fence";
    // Deletes first: a new copy in the same cluster needs the old name free.
    fence.actions.insert(fence.actions.end(), plan.actions.begin(), plan.actions.end());
    plan.actions = std::move(fence.actions);
    if (plan.requeue_ms < 0 || plan.requeue_ms > opt_.retry_ms) plan.requeue_ms = opt_.retry_ms;
  }
  // One action per object: fencing and a step may name the same copy.
  std::set<std::tuple<Verb, std::string, std::string>> seen;
  std::erase_if(plan.actions, [&](const Action& a) { return !seen.emplace(a.verb, a.cluster, a.kind).second; });
  DeleteRunsInForeground(plan);
  // Only while nothing is due sooner: a round, a gate or a timeout of the
  // step's, or a retry after the deletes added above.
  plan.backstop = plan.backstop && plan.requeue_ms == opt_.backstop_ms;
  return plan;
}

// While the job is to run again (neither over nor cancelled, before or
// after this pass's write), the runs it moves on from (requeued, fenced,
// left while it was Unschedulable) are deleted in the foreground
// (Action::foreground): its view shows each until its pods are gone, and
// its next run waits for that (step 13's gate). Deleted in the background,
// a run's object goes at once while its pods stop, and the next run could
// start beside them. A finished or cancelled job's go in the background.
void Ladder::DeleteRunsInForeground(Plan& plan) const {
  auto runs_again = [](JobPhase p) { return !IsFinal(p) && p != JobPhase::kCancelling; };
  const JobPhase after = plan.write && plan.write->phase ? *plan.write->phase : job_.phase;
  const bool moves_on = runs_again(job_.phase) && runs_again(after);
  for (Action& a : plan.actions) {
    a.foreground = moves_on && a.kind != kWorkload && (a.verb == Verb::kDelete || a.verb == Verb::kDeleteUnseen);
  }
  // A run already being deleted in the foreground (its pods stopping):
  // asked again, nothing changes. Its view shows it gone once they are.
  std::erase_if(plan.actions, [&](const Action& a) {
    if (a.verb != Verb::kDelete || !a.foreground) return false;
    const std::vector<ObservedJob>& jobs = Observed(a.cluster)->jobs;
    return std::any_of(jobs.begin(), jobs.end(),
                       [&](const ObservedJob& j) { return j.deleting && j.k8s_uid == a.precondition_uid; });
  });
}

std::set<std::pair<std::string, std::string>> Ladder::Retained(JobPhase phase, int64_t finished_at,
                                                              bool seen_only) const {
  const std::string& owner = job_.cluster;
  const int64_t retention_ms = RetentionMs();
  if (retention_ms <= 0 || finished_at <= 0 || owner.empty()) return {};
  if (phase != JobPhase::kSucceeded && phase != JobPhase::kFailed) return {};
  if (in_.now_ms >= finished_at + retention_ms) return {};
  if (!Reachable(owner)) {
    // Out of sight (or not synced yet after a restart): what an earlier pass
    // kept (its rows still present) stays kept until the owner answers.
    const bool kept_before = std::any_of(in_.intents.begin(), in_.intents.end(), [&](const RemoteIntent& i) {
      return i.present && i.cluster == owner && i.epoch == job_.epoch;
    });
    if (seen_only || !kept_before) return {};
    return {{owner, kWorkload}, {owner, kJob}};
  }
  const ObservedJob* j = JobIn(owner);
  const ObservedWorkload* w = WorkloadIn(owner);
  // Not ended there: e.g. a job failed for its lost owner, whose copy still runs there.
  if (!Ended(j) && !WorkloadTells(j, w)) return {};
  return {{owner, kWorkload}, {owner, kJob}};
}

// Step 2, of a job failed because its owner was lost (onClusterLoss Fail):
// its run there may have gone on unseen, and the owner, back, shows how it
// ended. The job stays Failed (it promised at most one run, and may have
// been told failed to its user), but what the run did is not thrown away
// with its objects: once (condition RunEndedUnseen, which also marks it
// told), with an event and, if its kind has one, the run's status summary.
void Ladder::TellUnseenEnd(DispatchUpdate& u) const {
  if (job_.phase != JobPhase::kFailed || job_.cluster.empty() || !Reachable(job_.cluster)) return;
  if (!std::string_view(job_.message).ends_with(kFailedOnLossText)) return;
  if (!ConditionReason(job_.conditions_json, "RunEndedUnseen").empty()) return;  // told
  for (const ObservedJob& j : Observed(job_.cluster)->jobs) {
    const bool ended = j.state == RemoteJobState::kSucceeded || j.state == RemoteJobState::kFailed;
    if (j.epoch != job_.epoch || !ended) continue;
    const bool ok = j.state == RemoteJobState::kSucceeded;
    const std::string msg =
        fmt::format("the job's run in {} at epoch {}, given up for lost when the job was failed, {} there "
                    "meanwhile: {}; the job stays Failed",
                    job_.cluster, job_.epoch, ok ? "succeeded" : "failed", RunEndText(j));
    u.conditions_json = Conditions("RunEndedUnseen", ok ? "Succeeded" : "Failed", msg, in_.now_ms);
    if (!j.summary.empty()) u.remote_status = j.summary;
    u.events.push_back(Event("RunEndedUnseen", msg, job_.cluster, ok ? "Normal" : "Warning"));
    return;
  }
}

// Step 1, first: a job sent back to Queued and dispatched again at a new
// epoch (its owner lost under onClusterLoss Requeue, or removed from the
// inventory, or its copy evicted) whose earlier run, out of gantry's sight
// meanwhile, is seen to have succeeded. The job is done, and is not run
// again: it Succeeds as that run did, telling where and at which epoch, and
// everything of it is withdrawn, that run's objects with the rest, as
// fencing would have (they are of an older epoch: retention keeps only the
// current one's). So only while no run of its new epoch can exist: Queued
// or Nominating, with no lease. Once leased, a run of the new epoch may
// have been created (the earlier-run gate holds the create back only while
// it sees the earlier run, and gantry keeps no durable record of a create
// sent for a job that may run twice), and that run goes on. An earlier run
// that failed is not taken for the job's end: being dispatched again is
// what the job asked for.
std::optional<Plan> Ladder::EarlierRunSucceeded() const {
  if (job_.phase != JobPhase::kQueued && job_.phase != JobPhase::kNominating) return std::nullopt;
  for (const auto& [cluster, o] : in_.observed) {
    if (!Reachable(cluster)) continue;
    for (const ObservedJob& j : o.jobs) {
      if (!OwnEarlierRun(j) || j.state != RemoteJobState::kSucceeded) continue;
      const std::string msg = fmt::format(
          "succeeded in {} at epoch {} while out of gantry's sight, before the job was run again: {}; not run again",
          cluster, j.epoch, RunEndText(j));
      Plan p = Finish("earlier-run", JobPhase::kSucceeded, "Succeeded", msg);
      for (JobEvent& e : p.write->events) {
        if (e.reason == "Succeeded") e.cluster = cluster;
      }
      p.write->cluster = cluster;
      p.write->remote_status = j.summary;
      return p;
    }
  }
  return std::nullopt;
}

// A withdrawn row whose object is unseen and too young to be read by name
// (CreatedUnseen) has the job looked at again once it is not: at the
// backstop, a loser's copy a silent watch hides would hold its quota three
// times as long.
void Ladder::LookAgainWhenOld(Plan& plan) const {
  for (const RemoteIntent& i : in_.intents) {
    const int64_t until = YoungUntil(i);
    if (until <= 0) continue;
    const int64_t in_ms = std::max<int64_t>(until - in_.now_ms, 0) + 1;
    if (plan.requeue_ms < 0 || plan.requeue_ms > in_ms) {
      plan.requeue_ms = in_ms;
      plan.backstop = false;
    }
  }
}

// Step 2.
Plan Ladder::Cleanup(const char* step) const {
  Plan plan;
  plan.step = step;
  const auto keep = Retained(job_.phase, job_.finished_ms, false);  // nothing while Cancelling
  WithdrawObserved(plan, keep);
  // A finished job's earlier run in another cluster (a Requeue job moved on
  // while that cluster was out of sight): if it ended there meanwhile, the
  // job ran twice, and its delete's answer tells how (as fencing's does
  // while the new run goes on). Not in the cluster the job's end came from:
  // an earlier run that succeeded unseen is the job's own end there (step 1).
  if (job_.phase == JobPhase::kSucceeded || job_.phase == JobPhase::kFailed) {
    for (Action& a : plan.actions) {
      if (a.verb == Verb::kDelete && a.kind == kJob && a.epoch < job_.epoch && a.cluster != job_.cluster) {
        a.tell_end_when_deleted = true;
      }
    }
  }
  for (const RemoteIntent& i : in_.intents) {
    if (!keep.count({i.cluster, i.kind}) && StillToReadByName(i)) plan.actions.push_back(DeleteUnseen(i));
  }
  DispatchUpdate u = Guarded(job_);
  MarkAllAbsent(u, keep);
  // Only rows already absent can be confirmed gone, so none of these is
  // among the rows this write marks absent.
  u.drop_intents = ConfirmedGone();
  TellUnseenEnd(u);
  if (!u.upsert_intents.empty() || !u.drop_intents.empty() || u.conditions_json) plan.write = std::move(u);
  if (const Leftover left = Left(plan, keep); left.any()) {
    // Only kept objects left: look again when their time is up. Only rows in
    // clusters declared lost and silent: the health watch wakes the job when
    // one answers again (its rows say the job has objects there), so a
    // cluster that may never return is not polled, only rechecked now and
    // then as a backstop.
    const int64_t kept_until = job_.finished_ms + RetentionMs() - in_.now_ms;
    // Rows in a cluster missing since the start wait for a reload, which
    // wakes unfinished jobs; a finished one's timer is this backstop.
    const bool rare = left.lost || left.missing;
    plan.requeue_ms = left.other ? opt_.retry_ms
                      : left.kept ? (rare ? std::min(kept_until, opt_.lost_recheck_ms) : kept_until)
                                  : opt_.lost_recheck_ms;
  }
  return plan;
}

Ladder::Leftover Ladder::Left(const Plan& cleanup, const std::set<std::pair<std::string, std::string>>& keep) const {
  Leftover out;
  out.other = !cleanup.actions.empty();
  for (const RemoteIntent& i : in_.intents) {
    const bool dropped =
        cleanup.write && std::find(cleanup.write->drop_intents.begin(), cleanup.write->drop_intents.end(),
                                   std::make_pair(i.cluster, i.kind)) != cleanup.write->drop_intents.end();
    if (dropped) continue;
    if (i.present && keep.count({i.cluster, i.kind})) {
      out.kept = true;
    } else if (DeclaredLost(i.cluster) && !Reachable(i.cluster)) {
      out.lost = true;
    } else if (MissingAtStart(i.cluster)) {
      out.missing = true;
    } else {
      out.other = true;
    }
  }
  return out;
}


// Step 3.
Plan Ladder::Cancel() const {
  Plan plan = Cleanup("cancel");
  // Nothing waits for a cluster declared lost: its rows stay (absent), so
  // what it may still run is deleted if it answers again.
  const Leftover left = Left(plan, {});
  const bool lost_left = left.lost && !left.other && !left.kept && !left.missing;
  if (left.any() && !lost_left) {
    std::vector<std::string> waiting = UnreachableWithIntents();
    if (!waiting.empty()) {
      std::vector<std::string> missing;
      std::copy_if(waiting.begin(), waiting.end(), std::back_inserter(missing),
                   [&](const std::string& c) { return MissingAtStart(c); });
      std::string msg = fmt::format("waiting for cluster(s) {} to confirm deletion", fmt::join(waiting, ", "));
      if (!missing.empty()) {
        msg += fmt::format(" ({} not in the inventory the daemon started with: a reload of the inventory, SIGHUP "
                           "or POST /api/v1/clusters:reload, confirms a removal)",
                           fmt::join(missing, ", "));
      }
      if (job_.message != msg) {
        if (!plan.write) plan.write = Guarded(job_);
        plan.write->message = msg;
        plan.write->conditions_json = Conditions("WaitingForClusters", "ClusterUnreachable", msg, in_.now_ms);
      }
    }
    // Only clusters missing since the start: a reload wakes the job.
    plan.requeue_ms = left.other || left.kept ? opt_.retry_ms : opt_.lost_recheck_ms;
    return plan;
  }
  if (!plan.write) plan.write = Guarded(job_);
  plan.write->phase = JobPhase::kCancelled;
  plan.write->message = "cancelled by request";
  MarkSummaryLastSeen(LastSummary(), *plan.write);
  plan.write->conditions_json = "[]";
  // What may be left, and where: a removed cluster's rows go (nothing can
  // confirm them), a declared-lost one's stay, so that it is cleaned up if
  // it answers again.
  std::vector<std::string> except;
  if (std::vector<std::string> removed = RemovedWithIntents(); !removed.empty()) {
    except.push_back(fmt::format("in cluster(s) removed from the inventory ({}), which gantry no longer reaches: "
                                 "what the job may still run there goes on until they are added back",
                                 fmt::join(removed, ", ")));
  }
  if (lost_left) {
    except.push_back(fmt::format("in cluster(s) declared lost ({}), where they are deleted if they answer again",
                                 fmt::join(LostWithIntents(), ", ")));
  }
  const std::string told =
      !except.empty()  ? fmt::format("remote objects withdrawn, except {}; job cancelled", fmt::join(except, "; and "))
      : job_.epoch > 0 ? "remote objects withdrawn from every cluster in the inventory; job cancelled"
                       : "nothing was dispatched; job cancelled";
  plan.write->events.push_back(Event("Cancelled", told));
  plan.requeue_ms = lost_left ? opt_.lost_recheck_ms : -1;  // the backstop, as for a finished job
  return plan;
}

namespace {

// The feasible clusters placement did not pick (ranked below its
// candidates): for a later round, or beyond maxCopies.
std::string BeyondCap(const placement::Decision& d, bool incremental, size_t max_copies) {
  constexpr size_t kNamed = 8;
  if (d.feasible.size() <= d.candidates.size()) return "";
  std::vector<std::string> names;
  for (size_t i = d.candidates.size(); i < d.feasible.size() && names.size() < kNamed; ++i) {
    names.push_back(d.feasible[i].cluster);
  }
  const size_t more = d.feasible.size() - d.candidates.size();
  const std::string listed =
      fmt::format("{}{}", fmt::join(names, ", "), more > names.size() ? fmt::format(" and {} more", more - names.size())
                                                                      : "");
  if (incremental && d.candidates.size() < max_copies) return fmt::format("; later rounds: {}", listed);
  return fmt::format("; beyond maxCopies ({}), ranked lower: {}", max_copies, listed);
}

// Why the clusters placement excluded got no copy, for the Nominated
// event and a waiting job's message ("" when none was): "; left out: c2:
// <why>; c3: <why>", the first few (each message is up to a few hundred
// bytes; gantry explain has all). Those left out for now come first, by
// name: a waiting job waits for them, and the reason why must not be cut
// off behind the clusters its constraints rule out for good.
std::string LeftOut(const placement::Decision& d) {
  constexpr size_t kNamed = 8;
  // Each reason cut to this many bytes (CutText): a cluster's own words (a
  // ClusterQueue's condition message) may be long, and gantry explain has
  // them whole.
  constexpr size_t kReasonBytes = 200;
  if (d.excluded.empty()) return "";
  std::vector<const placement::ExcludedCluster*> order;
  order.reserve(d.excluded.size());
  for (const placement::ExcludedCluster& x : d.excluded) order.push_back(&x);
  std::stable_partition(order.begin(), order.end(),
                        [](const placement::ExcludedCluster* x) { return !x->exclusion.permanent; });
  std::string out = "; left out: ";
  for (size_t i = 0; i < order.size() && i < kNamed; ++i) {
    fmt::format_to(std::back_inserter(out), "{}{}: {}", i == 0 ? "" : "; ", order[i]->cluster,
                   CutText(order[i]->exclusion.message, kReasonBytes));
  }
  if (d.excluded.size() > kNamed) {
    fmt::format_to(std::back_inserter(out), "; and {} more (see gantry explain)", d.excluded.size() - kNamed);
  }
  return out;
}

}  // namespace

// Unschedulable: what is left of earlier epochs is withdrawn. The verdict
// was reached against the inventory of then; woken again (at a start or a
// reload of the inventory), the job is queued again once placement finds a
// cluster that may run it (a cluster added, a region or an accelerator
// corrected, a quota raised), rather than waiting for a resubmission its
// unchanged document would not make.
Plan Ladder::Unschedulable() const {
  Plan plan = Cleanup("unschedulable");
  // It may run again (the inventory changes): the runs it left go as those
  // of a job that moves on do, in the foreground. One whose pods are still
  // stopping is no leftover to wait for here: queued, the job keeps that
  // cluster out of its dispatches until the run is gone (step 13's gate),
  // and not every other cluster, for as long as those pods may take.
  DeleteRunsInForeground(plan);
  if (!in_.placement || in_.placement->unschedulable) return plan;
  // Only a cluster that could take it now counts: one left out for the
  // time being (not Ready, its quota not read yet, as right after a start)
  // may well be ruled out again once read, and the job would go back and
  // forth at every start.
  const std::vector<std::string>& may = in_.placement->candidates;
  if (may.empty()) return plan;
  if (!plan.actions.empty() || plan.write) {  // its leftovers first; the next pass queues it
    if (plan.requeue_ms < 0) plan.requeue_ms = opt_.retry_ms;
    return plan;
  }
  const std::string msg =
      fmt::format("queued again: the inventory changed, and {} may run it now", fmt::join(may, ", "));
  DispatchUpdate u = Guarded(job_);
  u.phase = JobPhase::kQueued;
  u.nominated_ms = in_.now_ms;  // Queued since (QueuedSinceMs)
  u.message = msg;
  u.events.push_back(Event("Requeued", msg));
  plan.write = std::move(u);
  plan.step = "unschedulable";
  plan.requeue_ms = 0;
  return plan;
}

// Whether a cluster that placement leaves out for the time being (not
// Ready, full, its quota not read) may take the job later.
bool Ladder::LaterCandidate() const {
  if (!in_.placement) return false;
  return std::any_of(in_.placement->excluded.begin(), in_.placement->excluded.end(),
                     [&](const placement::ExcludedCluster& x) {
                       // (a cluster held out, not refused, may take it once the hold is over)
                       const RemoteIntent* r = JobRefusalIn(x.cluster);
                       return !x.exclusion.permanent && !Gone(x.cluster) && (!r || !r->hold.empty());
                     });
}

// Step 4.
Plan Ladder::Nominate() const {
  Plan plan;
  plan.step = "nominate";
  if (!in_.placement) {
    plan.requeue_ms = opt_.retry_ms;
    return plan;
  }
  const placement::Decision& d = *in_.placement;
  if (d.unschedulable) {
    std::vector<std::string> why;
    for (const auto& x : d.excluded) why.push_back(fmt::format("{}: {}", x.cluster, x.exclusion.message));
    DispatchUpdate u = Guarded(job_);
    u.phase = JobPhase::kUnschedulable;
    u.message = fmt::format("no cluster can ever run this job: {}", fmt::join(why, "; "));
    u.events.push_back(Event("Unschedulable", *u.message, "", "Warning"));
    plan.write = std::move(u);
    return plan;
  }
  // Copies of an older epoch still being withdrawn are fine: the new copy in
  // the same cluster is created once the old name is free.
  std::vector<std::string> candidates;
  std::copy_if(d.candidates.begin(), d.candidates.end(), std::back_inserter(candidates),
               [&](const std::string& c) { return CopyMayGoTo(c); });
  // A candidate left out is replaced by the next feasible cluster, as Widen
  // tops the copies up (the best one may hold the job's earlier run a while).
  for (const placement::RankedCluster& r : d.feasible) {
    if (candidates.size() >= d.candidates.size()) break;
    if (std::find(d.candidates.begin(), d.candidates.end(), r.cluster) == d.candidates.end() &&
        CopyMayGoTo(r.cluster)) {
      candidates.push_back(r.cluster);
    }
  }
  if (candidates.empty()) {
    std::vector<std::string> kind_refused, classless, job_refused, earlier, unlisted;
    int64_t hold_ends_ms = 0;  // the first of the refusals to lapse
    bool held = false;         // one is held back, not refused: it may take the job later
    for (const std::string& c : d.candidates) {
      switch (CopyHoldIn(c)) {
        case CopyHold::kKindRefused:
          kind_refused.push_back(c);
          break;
        case CopyHold::kUnlisted:
          unlisted.push_back(c);
          break;
        case CopyHold::kEarlierRun:
          earlier.push_back(c);
          break;
        case CopyHold::kJobRefused: {
          const RemoteIntent* r = JobRefusalIn(c);
          held = held || !r->hold.empty();
          job_refused.push_back(HeldOutWhy(*r));
          const int64_t ends = r->updated_ms + opt_.job_refusal_hold_ms;
          hold_ends_ms = hold_ends_ms == 0 ? ends : std::min(hold_ends_ms, ends);
          break;
        }
        case CopyHold::kClassless:
        case CopyHold::kNone:  // (none: every candidate was left out)
          classless.push_back(c);
          break;
      }
    }
    std::vector<std::string> why;
    if (!kind_refused.empty()) {
      why.push_back(fmt::format("{} keep gantry from listing its kind ({})", fmt::join(kind_refused, ", "),
                                in_.resource));
    }
    if (!job_refused.empty()) {
      // Every cluster that can take the job now refused its real job, and
      // none left out for the time being could take it later: it fails,
      // with their answers, as a job whose every candidate refuses its
      // Workload copy does, rather than go round them for ever.
      if (kind_refused.empty() && classless.empty() && earlier.empty() && unlisted.empty() && !held &&
          !LaterCandidate()) {
        return Finish("nominate", JobPhase::kFailed, "Refused",
                      fmt::format("every cluster that can take the job refused to create it: {}",
                                  fmt::join(job_refused, "; ")));
      }
      why.push_back(fmt::format("{} (each left out for {} from its answer)", fmt::join(job_refused, "; "),
                                DurationText(opt_.job_refusal_hold_ms)));
    }
    // Waited as long as a lost owner would be waited for: an operator's to
    // look at (its pods may not stop on a node gone NotReady, or a
    // finalizer holds it), told once as a Warning.
    const bool earlier_overdue = !earlier.empty() && in_.now_ms - QueuedSinceMs() >= opt_.cluster_lost_timeout_ms;
    if (earlier_overdue) {
      why.push_back(fmt::format("its earlier run in {} is not seen deleted {} after the job was queued "
                                "(clusterLostTimeout): its pods may not be stopping, or a finalizer holds it",
                                fmt::join(earlier, ", "), DurationText(opt_.cluster_lost_timeout_ms)));
    } else if (!earlier.empty()) {
      why.push_back(fmt::format("its earlier run in {} is not seen deleted yet", fmt::join(earlier, ", ")));
    }
    if (!unlisted.empty()) why.push_back(fmt::format("gantry has not listed {} yet", fmt::join(unlisted, ", ")));
    if (!classless.empty()) {
      why.push_back(fmt::format("the value of its WorkloadPriorityClass {} is not known in {}",
                                WorkloadPriorityClass(in_.spec->template_object), fmt::join(classless, ", ")));
    }
    std::string msg = !d.candidates.empty()
                          ? fmt::format("no cluster can take it now: {}; waiting (see gantry {})",
                                        fmt::join(why, "; "), kind_refused.empty() ? "explain" : "clusters")
                      : d.excluded.empty() ? std::string(kNoClustersMessage)
                                           // Each cluster's reason, so that a typo (a class or a
                                           // LocalQueue that exists nowhere) shows in gantry status.
                                           : "no cluster can take it now; waiting (see gantry explain)" + LeftOut(d);
    // Clusters not listed yet, just after a start, are no news: every
    // queued job would be written once for them while the views sync.
    const bool syncing = !unlisted.empty() && kind_refused.empty() && job_refused.empty() && earlier.empty() &&
                         classless.empty() && in_.since_start_ms < opt_.resync_ms;
    if (job_.message != msg && !syncing) {
      DispatchUpdate u = Guarded(job_);
      u.message = msg;
      // Told as an event too: the run's pods may take long to stop (a node
      // gone NotReady), and the job waits for them meanwhile.
      if (earlier_overdue) {
        u.events.push_back(Event("EarlierRunNotSeenDeleted", msg, earlier.front(), "Warning"));
      } else if (!earlier.empty()) {
        u.events.push_back(Event("WaitingForEarlierRun", msg, earlier.front()));
      }
      plan.write = std::move(u);
    }
    // Candidates appear when a cluster becomes Ready, is uncordoned or is
    // added, and each of those wakes every queued job: a slow resync is
    // only a backstop. A cluster that refused the job's real job is asked
    // again once its time is out.
    plan.requeue_ms = opt_.resync_ms;
    if (hold_ends_ms > 0) plan.requeue_ms = std::clamp<int64_t>(hold_ends_ms - in_.now_ms, 1, opt_.resync_ms);
    if (!earlier.empty() || !unlisted.empty()) plan.requeue_ms = std::min(plan.requeue_ms, opt_.retry_ms);
    // A job no cluster can take for its dispatch timeout since it was
    // Queued fails, as one none admits that long after its nomination does.
    if (in_.spec->dispatch.timeout_seconds && QueuedSinceMs() > 0) {
      const int64_t t = int64_t{*in_.spec->dispatch.timeout_seconds} * 1000;
      const int64_t left = QueuedSinceMs() + t - in_.now_ms;
      if (left <= 0) {
        // The reasons, without the waiting the job no longer does.
        const std::string reasons = !d.candidates.empty() ? fmt::format("{}", fmt::join(why, "; "))
                                    : d.excluded.empty()  ? std::string(kNoClustersMessage)
                                                          : LeftOut(d).substr(2);  // "left out: ..."
        return Finish("nominate", JobPhase::kFailed, "DispatchTimeout",
                      fmt::format("not admitted within {} s{}: no cluster could take it: {}", t / 1000,
                                  CountedFromStart(job_.nominated_ms > 0 ? job_.nominated_ms : job_.created_ms),
                                  reasons));
      }
      plan.requeue_ms = std::min(plan.requeue_ms, left);
    }
    return plan;
  }
  const int64_t epoch = NominationEpoch();
  DispatchUpdate u = Guarded(job_);
  u.phase = JobPhase::kNominating;
  u.epoch = epoch;
  u.nominated_ms = in_.now_ms;
  u.message = fmt::format("nominated to {}", fmt::join(candidates, ", "));
  u.conditions_json = "[]";
  MarkAllAbsent(u);
  for (const std::string& c : candidates) {
    Action a = CreateWorkloadAction(in_, c, epoch);
    // Replaces an absent row of an older epoch for the same cluster.
    std::erase_if(u.upsert_intents, [&](const RemoteIntent& r) { return r.cluster == c && r.kind == kWorkload; });
    u.upsert_intents.push_back(IntentFor(a));
    plan.actions.push_back(std::move(a));
  }
  // Placement's picks that this job's own history keeps out now (the
  // gate above): named beside placement's exclusions.
  std::vector<std::string> held;
  for (const std::string& c : d.candidates) {
    std::string why;
    switch (CopyHoldIn(c)) {
      case CopyHold::kNone:
        continue;  // one of the copies
      case CopyHold::kKindRefused:
        why = "keeps gantry from listing its kind";
        break;
      case CopyHold::kUnlisted:
        why = "not listed by gantry yet";
        break;
      case CopyHold::kEarlierRun:
        why = "its earlier run there is not seen deleted yet";
        break;
      case CopyHold::kJobRefused:
        why = HeldOutWhy(*JobRefusalIn(c));
        break;
      case CopyHold::kClassless:
        why = "the value of its WorkloadPriorityClass is not known there";
        break;
    }
    held.push_back(fmt::format("{} ({})", c, why));
  }
  const std::string held_back = held.empty() ? "" : fmt::format("; held back: {}", fmt::join(held, ", "));
  u.events.push_back(Event("Nominated", fmt::format("epoch {}: Workload copies to {}{}{}{}", epoch,
                                                    fmt::join(candidates, ", "), held_back,
                                                    BeyondCap(d, in_.spec->dispatch.mode == DispatchMode::kIncremental,
                                                              in_.max_copies),
                                                    LeftOut(d))));
  plan.write = std::move(u);
  // The copies' watch events wake the job; the first preemption gate is due
  // a period from now whatever they say (the copy's first status may come
  // in the event of its creation, which wakes nothing: Engine::Observed).
  plan.requeue_ms = opt_.preemption_gate_ms > 0 ? std::min(opt_.resync_ms, opt_.preemption_gate_ms) : opt_.resync_ms;
  // So is an Incremental job's first round: while its copies wait without a
  // change of status (the clusters full), nothing else would wake it before
  // the resync, and its rounds would come that late, several at once.
  if (in_.spec->dispatch.mode == DispatchMode::kIncremental) {
    plan.requeue_ms = std::min(plan.requeue_ms, std::max<int64_t>(int64_t{in_.spec->dispatch.round_seconds} * 1000, 1));
  }
  return plan;
}

}  // namespace ladder

// An earlier run of the job, given up when the job was dispatched again
// (its owner lost, under onClusterLoss Requeue) and found ended once its
// cluster answers, while the job's new run holds the lease: the job ran
// twice, and says so (an at-least-once job may; EarlierRunSucceeded takes
// such a success for the job's end only before a new lease).
std::string EarlierRunEndedText(const JobRecord& job, const std::string& cluster, const ObservedJob& j) {
  const std::string after =
      IsFinal(job.phase)
          ? fmt::format("the job had {} at epoch {} in {}: it ran twice",
                        job.phase == JobPhase::kSucceeded ? "succeeded"
                        : job.phase == JobPhase::kFailed  ? "failed"
                                                          : "ended",
                        job.epoch, job.cluster)
          : fmt::format("the job's run at epoch {} in {} goes on", job.epoch, job.cluster);
  return fmt::format("the run in {} at epoch {}, out of gantry's sight when the job was dispatched again, {} there "
                     "meanwhile: {}; its objects are deleted, and {}",
                     cluster, j.epoch, j.state == RemoteJobState::kSucceeded ? "succeeded" : "failed",
                     ladder::RunEndText(j), after);
}

Plan Decide(const DecideInput& in) { return ladder::Ladder(in).Run(); }

std::vector<std::string> EarlierRunsHoldingCopies(const DecideInput& in) {
  return ladder::Ladder(in).EarlierRunsHoldingCopies();
}

bool HoldsClusterOut(const RemoteIntent& i, JobPhase phase, int64_t now_ms, int64_t hold_ms) {
  const bool dispatching = phase == JobPhase::kQueued || phase == JobPhase::kNominating ||
                           phase == JobPhase::kAdmitted || phase == JobPhase::kRunning;
  return dispatching && i.kind != kWorkload && !i.present && (!i.refusal.empty() || !i.hold.empty()) &&
         now_ms < i.updated_ms + hold_ms;
}

void MarkIntentsAbsent(DispatchUpdate& u, const std::vector<RemoteIntent>& intents,
                       const std::set<std::pair<std::string, std::string>>& keep) {
  for (RemoteIntent i : intents) {
    if (!i.present || keep.count({i.cluster, i.kind})) continue;
    i.present = false;
    u.upsert_intents.push_back(std::move(i));
  }
}

bool MayBeLost(const Plan& plan, const std::vector<RemoteIntent>& intents, bool at_most_once) {
  if (!plan.write || !plan.actions.empty()) return false;
  const DispatchUpdate& w = *plan.write;
  if (w.epoch || w.cluster || w.lease_ms || w.nominated_ms || !w.upsert_intents.empty()) return false;
  const bool starts_running = w.phase && *w.phase == JobPhase::kRunning && w.expected_phase == JobPhase::kAdmitted;
  if (w.phase && (starts_running ? at_most_once : *w.phase != w.expected_phase)) return false;
  for (const auto& [cluster, kind] : w.drop_intents) {
    auto it = std::find_if(intents.begin(), intents.end(),
                           [&](const RemoteIntent& i) { return i.cluster == cluster && i.kind == kind; });
    if (it != intents.end() && it->present) return false;
  }
  return true;
}

int64_t BackstopMs(int64_t resync_ms, size_t waiting, int passes_per_s) {
  if (passes_per_s <= 0) return resync_ms;
  const int64_t spread = static_cast<int64_t>(waiting) * 1000 / passes_per_s;
  return std::max(resync_ms, std::min(spread, kMaxBackstopMs));
}

int64_t ActionRetryMs(int failures, int64_t retry_ms, int64_t retry_after_ms) {
  int64_t delay = std::min(kFirstActionRetryMs, retry_ms);
  for (int i = 1; i < failures && delay < retry_ms; ++i) delay = std::min(delay * 2, retry_ms);
  return std::max(delay, std::min(retry_after_ms, retry_ms));
}

}  // namespace gantry::dispatch
