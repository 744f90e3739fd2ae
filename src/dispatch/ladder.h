// The Decide() ladder's internals, shared by decide.cc (steps 1-4),
// decide_nominating.cc (steps 5-9) and decide_owner.cc (steps 10-13).
// Private to src/dispatch.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gantry/common/clock.h"
#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/job/kueue_labels.h"

namespace gantry::dispatch::ladder {

using nlohmann::json;

// Ends the message of a job failed because its owner was lost (step 10, or
// step 13 when its creates kept failing) under onClusterLoss Fail: its run
// there may have gone on unseen (Ladder::TellUnseenEnd).
inline constexpr std::string_view kFailedOnLossText = "; onClusterLoss is Fail";

inline JobEvent Event(std::string reason, std::string message, std::string cluster = "",
               std::string type = "Normal") {
  JobEvent e;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.cluster = std::move(cluster);
  e.type = std::move(type);
  return e;
}

// A write guarded by the job's current phase, epoch and owner.
inline DispatchUpdate Guarded(const JobRecord& job) {
  DispatchUpdate u;
  u.uid = job.uid;
  u.expected_phase = job.phase;
  u.expected_epoch = job.epoch;
  u.expected_cluster = job.cluster;
  return u;
}

// A guarded write that sends the job back to Queued, its lease given up and
// every object of it withdrawn: it is dispatched again at the next epoch.
// Its nominated_ms says since when it is Queued until then.
inline DispatchUpdate Requeued(const JobRecord& job, const std::vector<RemoteIntent>& intents, std::string message,
                               int64_t now_ms) {
  DispatchUpdate u = Guarded(job);
  u.phase = JobPhase::kQueued;
  u.nominated_ms = now_ms;  // Queued since: a wait for a cluster that may take it (Ladder::QueuedSinceMs)
  u.cluster = "";
  u.lease_ms = 0;
  u.remote_status = "";
  u.message = std::move(message);
  // What the conditions said of its owner (OwnerUnreachable: held, lost,
  // refusing) is over with the lease: a job left Unschedulable or waiting
  // must not show it for good.
  u.conditions_json = "[]";
  MarkIntentsAbsent(u, intents);
  return u;
}

// A job ending other than by its run's own end seen in the owner (a
// cancel, an eviction or loss under Fail): the run's last status summary is
// not how it ended, and says so. Nothing when there is none, or it says so
// already. A later sight of the run's end (RunEndedUnseen) replaces it.
// last: the newest summary seen (the owner's view in this pass, else the
// job's stored one).
inline constexpr std::string_view kLastSeenPrefix = "when last seen, before the job ended: ";
inline void MarkSummaryLastSeen(const std::string& last, DispatchUpdate& u) {
  if (last.empty() || std::string_view(last).starts_with(kLastSeenPrefix)) return;
  u.remote_status = std::string(kLastSeenPrefix) + last;
}

// A length of time for a message: "90 s", "10 min" (whole minutes only).
inline std::string DurationText(int64_t ms) {
  return ms < 120'000 || ms % 60'000 != 0 ? fmt::format("{} s", ms / 1000) : fmt::format("{} min", ms / 60'000);
}

// The row of a job's real job in cluster at epoch, wanted there (null: none).
inline const RemoteIntent* JobRowIn(const std::vector<RemoteIntent>& intents, const std::string& cluster,
                                    int64_t epoch) {
  for (const RemoteIntent& i : intents) {
    if (i.cluster == cluster && i.kind == kJob && i.epoch == epoch && i.present) return &i;
  }
  return nullptr;
}

// The recorded intent for a create action: present at the action's epoch.
inline RemoteIntent IntentFor(const Action& create) {
  RemoteIntent i;
  i.cluster = create.cluster;
  i.kind = create.kind;
  i.ns = create.ns;
  i.name = create.name;
  i.epoch = create.epoch;
  i.present = true;
  return i;
}

inline std::string Conditions(const std::string& type, const std::string& reason, const std::string& message,
                       int64_t now_ms) {
  json c = {{"type", type}, {"status", "True"}, {"reason", reason}, {"message", message},
            {"lastTransitionTime", FormatRfc3339(now_ms)}};
  return json::array({c}).dump();
}

// The reason of the stored job's condition of this type ("" when it has
// none). Conditions are the ones Conditions() writes: read, not searched, so
// that a message naming a reason is not taken for it.
inline std::string ConditionReason(const std::string& conditions_json, std::string_view type) {
  if (conditions_json.empty() || conditions_json == "[]") return "";
  const json parsed = json::parse(conditions_json, nullptr, false);
  if (!parsed.is_array()) return "";
  for (const json& c : parsed) {
    if (c.is_object() && c.value("type", "") == type) return c.value("reason", "");
  }
  return "";
}

// The cluster is Ready and its view synced for the job's kind.
inline bool Reachable(const DecideInput& in, const std::string& cluster) {
  auto f = in.clusters->find(cluster);
  return f != in.clusters->end() && f->second.ready && in.synced->count(cluster) > 0;
}
// Whether the cluster's view can confirm that an object is gone: it is
// reachable, and not behind (a watch there broke and the relist has not
// come yet, so a copy created since would not show).
inline bool ConfirmsAbsence(const DecideInput& in, const std::string& cluster) {
  return Reachable(in, cluster) && !in.behind->count(cluster);
}

// Whether the real job j says it ended (Succeeded or Failed there).
inline bool RunEnded(const ObservedJob& j) {
  return j.state == RemoteJobState::kSucceeded || j.state == RemoteJobState::kFailed;
}

// A run's end seen at least this long after it happened (by the cluster's
// clock, less its offset from gantry's) is told with its time.
inline constexpr int64_t kLateEndMs = 30'000;

// How a run ended, for a message: its condition's reason (else Complete
// or Failed) and message, "CompletionsReached (Reached expected ...)".
inline std::string RunEndText(const ObservedJob& j) {
  const bool ok = j.state == RemoteJobState::kSucceeded;
  return fmt::format("{}{}", j.reason.empty() ? (ok ? "Complete" : "Failed") : j.reason,
                     j.message.empty() ? "" : " (" + j.message + ")");
}

class Ladder {
 public:
  explicit Ladder(const DecideInput& in) : in_(in), job_(*in.job), opt_(in.options) {}

  Plan Run();
  // See EarlierRunsHoldingCopies (decide.h). Only where the job's objects
  // can be seen (Reachable): another is out for that first, as Nominate
  // tells it.
  std::vector<std::string> EarlierRunsHoldingCopies() const {
    std::vector<std::string> out;
    for (const auto& [cluster, facts] : *in_.clusters) {
      if (Reachable(cluster) && EarlierJobIn(cluster)) out.push_back(cluster);  // (KindRefused: its own row)
    }
    return out;
  }

 private:
  bool Reachable(const std::string& cluster) const { return ladder::Reachable(in_, cluster); }
  bool ConfirmsAbsence(const std::string& cluster) const { return ladder::ConfirmsAbsence(in_, cluster); }
  // The cluster keeps gantry from listing the resource of this job's kind
  // (its JobSets, say; ClusterFacts::kind_refused): a copy there could take
  // the lease for a job whose status would not be followed, so none goes.
  bool KindRefused(const std::string& cluster) const { return KindRefusalIn(cluster) != nullptr; }
  // The job names a WorkloadPriorityClass whose value in the cluster is not
  // known (not listed, or no such class there): a copy there could not
  // carry it, so none goes (placement leaves such a cluster out already;
  // this holds when the inventory changed since, or for a copy re-created).
  bool ClassValueMissing(const std::string& cluster) const {
    const std::string name = WorkloadPriorityClass(in_.spec->template_object);
    return !name.empty() && !PriorityClassValue(in_, cluster, name);
  }
  // How far that cluster's clock is ahead of gantry's (ClusterFacts::clock_offset_ms;
  // unset: not measured yet).
  std::optional<int64_t> ClockOffsetOf(const std::string& cluster) const {
    auto f = in_.clusters->find(cluster);
    return f == in_.clusters->end() ? std::nullopt : f->second.clock_offset_ms;
  }
  // That refusal (why, for how long), or null.
  const ClusterFacts::KindRefusal* KindRefusalIn(const std::string& cluster) const {
    if (in_.resource.empty()) return nullptr;
    auto f = in_.clusters->find(cluster);
    if (f == in_.clusters->end()) return nullptr;
    auto k = f->second.kind_refused.find(in_.resource);
    return k == f->second.kind_refused.end() ? nullptr : &k->second;
  }
  // The cluster answers, but keeps gantry from listing this job's objects
  // there: its Workloads or Jobs (ClusterFacts::watch_refused), or the
  // resource of the job's kind (KindRefused).
  bool ListRefused(const std::string& cluster) const {
    auto f = in_.clusters->find(cluster);
    return f != in_.clusters->end() && f->second.ready && (!f->second.watch_refused.empty() || KindRefused(cluster));
  }
  // Declared lost by an operator (ClusterConfig::declared_lost): still
  // watched, so Reachable() may hold, but trusted with nothing new.
  bool DeclaredLost(const std::string& cluster) const {
    auto f = in_.clusters->find(cluster);
    return f != in_.clusters->end() && f->second.config.declared_lost;
  }
  // Cordoned by an operator (ClusterConfig::cordoned): no new work goes
  // there. A copy waiting there takes no lease and opens no gate, and is
  // withdrawn (step 9); what already holds the lease there runs on.
  bool Cordoned(const std::string& cluster) const {
    auto f = in_.clusters->find(cluster);
    return f != in_.clusters->end() && f->second.config.cordoned;
  }
  // A Queued or Nominating job's placement (DecideInput::placement) now
  // excludes the cluster for one of the job's own constraints (allowlist,
  // region, compliance zones, labels, accelerator, datasets, price, node
  // size): its entry changed at a reload since the copy went there. The
  // exclusion, or null (none, another filter, no placement). Not quota: a
  // quota cut leaves copies waiting.
  const placement::Exclusion* ConstraintFails(const std::string& cluster) const;  // decide_nominating.cc
  // Gone, cordoned, or failing the job's constraints now: a copy there
  // takes no lease, opens no gate, is not made again and is withdrawn
  // (step 9). Unlike Gone, only for now.
  bool CopiesWithdrawn(const std::string& cluster) const {
    return Gone(cluster) || Cordoned(cluster) || ConstraintFails(cluster) != nullptr;
  }
  // How long cluster f may be out of reach before it is lost (step 10):
  // clusterLostTimeout, or credentialsRefusedTimeout while it refuses
  // gantry (its credentials, or for an owner a watch), and no longer than
  // the grace of one declared lost.
  int64_t LostAfterMs(const ClusterFacts& f, bool refused) const;  // decide_owner.cc
  // Whether cluster's view shows the job's real job at an older epoch.
  // An earlier dispatch's real job (OfEarlierDispatch) may still be in the
  // cluster: seen there, or withdrawn and not confirmed gone. No copy goes
  // there meanwhile: the copy has the name that run's prebuilt-workload
  // label names (the same at every epoch), and the worker's Kueue would let
  // the old run adopt the new copy and start again under its admission.
  bool EarlierJobIn(const std::string& cluster) const;
  // What keeps a new Workload copy of the job from the cluster now, the
  // first in the order Nominate tells them (kNone: a copy may go). Only
  // where the job's objects can be seen (Reachable: listed): an earlier run
  // there, its row gone (a cluster removed and added back, an entry
  // renamed), shows only in the view.
  enum class CopyHold { kNone, kKindRefused, kUnlisted, kEarlierRun, kJobRefused, kClassless };
  CopyHold CopyHoldIn(const std::string& c) const {
    if (KindRefused(c)) return CopyHold::kKindRefused;
    if (!Reachable(c)) return CopyHold::kUnlisted;
    if (EarlierJobIn(c)) return CopyHold::kEarlierRun;
    if (JobRefusalIn(c)) return CopyHold::kJobRefused;
    if (ClassValueMissing(c)) return CopyHold::kClassless;
    return CopyHold::kNone;
  }
  bool CopyMayGoTo(const std::string& c) const { return CopyHoldIn(c) == CopyHold::kNone; }
  // The run's newest status summary: the owner's real job at the current
  // epoch as its view shows it now, else what the job has stored.
  const std::string& LastSummary() const {
    if (!job_.cluster.empty() && Reachable(job_.cluster)) {
      const ObservedJob* j = AtCurrentEpoch(Observed(job_.cluster)->jobs);
      if (j && !j->summary.empty()) return j->summary;
    }
    return job_.remote_status;
  }
  bool OlderJobSeenIn(const std::string& cluster) const {
    const auto& jobs = Observed(cluster)->jobs;
    return std::any_of(jobs.begin(), jobs.end(), [&](const ObservedJob& j) { return j.epoch < job_.epoch; });
  }
  // Removed from the inventory: not in it, once a reload confirmed the
  // inventory (DecideInput::inventory_confirmed). Before, a cluster missing
  // from the inventory the daemon started with (its file moved aside a
  // moment, clusters.d not mounted yet) is only out of reach: what the job
  // has there is waited for, not given up.
  bool Removed(const std::string& cluster) const {
    return in_.inventory_confirmed && !in_.clusters->count(cluster);
  }
  // Missing from the inventory the daemon started with, not confirmed removed.
  bool MissingAtStart(const std::string& cluster) const {
    return !in_.inventory_confirmed && !in_.clusters->count(cluster);
  }
  // Not in the inventory (removed, or missing since the start), or declared
  // lost: no copy there takes a lease. (Only copies: a run there may go on,
  // and what it holds is waited for until Removed.)
  bool Gone(const std::string& cluster) const { return !in_.clusters->count(cluster) || DeclaredLost(cluster); }
  // What cluster shows of the job (nothing, when it is not in in_.observed).
  const ClusterObservation* Observed(const std::string& cluster) const {
    static const ClusterObservation kNothing;
    auto o = in_.observed.find(cluster);
    return o == in_.observed.end() ? &kNothing : &o->second;
  }
  // The job's Workload copy in cluster at the current epoch.
  const ObservedWorkload* WorkloadIn(const std::string& cluster) const {
    return AtCurrentEpoch(Observed(cluster)->workloads);
  }
  // The job's Workload copy in cluster at the current epoch, or else the
  // last state of one that finished and that the cluster deleted since
  // (DecideInput::finished_gone): its result, when nothing else tells it.
  const ObservedWorkload* WorkloadOrLastIn(const std::string& cluster) const {
    if (const ObservedWorkload* w = WorkloadIn(cluster)) return w;
    auto it = in_.finished_gone.find(cluster);
    if (it == in_.finished_gone.end()) return nullptr;
    for (auto w = it->second.rbegin(); w != it->second.rend(); ++w) {
      if (w->epoch == job_.epoch) return &*w;
    }
    return nullptr;
  }
  // Whether copy w may take the lease: admitted (with leaseOn QuotaReserved,
  // holding quota) and not on its way out: evicted, finished, deactivated,
  // or with an admission check Kueue is about to evict it for.
  bool Leasable(const ObservedWorkload& w) const {
    if (w.evicted || w.finished || !w.active || w.check_failed) return false;
    return w.admitted || (opt_.lease_on_quota_reserved && w.quota_reserved);
  }
  // Whether cluster shows a current copy that Kueue will never admit: one
  // deactivated (spec.active false), as Kueue leaves it when an admission
  // check Rejected it. It holds no quota; the lease or the next epoch
  // withdraws it.
  bool Deactivated(const std::string& cluster) const {
    const ObservedWorkload* w = WorkloadIn(cluster);
    return w && !w->active && Reachable(cluster);
  }
  // Created by this engine at the current epoch, its watch event not in yet.
  bool Expected(const std::string& cluster, const char* kind) const {
    return in_.expected.count({cluster, kind}) > 0;
  }
  // When cluster confirmed the create of the job's real job at the current
  // epoch (RemoteIntent::created_ms; 0: not confirmed, or not recorded).
  int64_t JobCreatedMs(const std::string& cluster) const {
    const RemoteIntent* row = JobRow(cluster);
    return row ? row->created_ms : 0;
  }
  // The row of the job's real job in cluster at the current epoch, wanted
  // there (null: none).
  const RemoteIntent* JobRow(const std::string& cluster) const { return JobRowIn(in_.intents, cluster, job_.epoch); }
  // The job's real job in cluster at the current epoch.
  const ObservedJob* JobIn(const std::string& cluster) const {
    return AtCurrentEpoch(Observed(cluster)->jobs);
  }
  template <class Observed>
  const Observed* AtCurrentEpoch(const std::vector<Observed>& objects) const {
    auto it = std::find_if(objects.begin(), objects.end(), [&](const Observed& x) { return x.epoch == job_.epoch; });
    return it == objects.end() ? nullptr : &*it;
  }
  Action DeleteWorkload(const std::string& cluster, const ObservedWorkload& w) const {
    return DeleteWorkloadAction(cluster, KueueVersionOf(*in_.clusters, cluster), w);
  }
  Action DeleteJob(const std::string& cluster, const ObservedJob& j) const { return DeleteJobAction(cluster, j); }
  // Whether row i's object is to be withdrawn by name (kDeleteUnseen): its
  // cluster answers (health Ready, credentials accepted), the job's view
  // there is not synced, and the cluster has a told refusal of a list
  // (Workloads or Jobs, or the job's kind: a 403, or list errors that
  // lasted), so that no delete of what the view shows may reach the object
  // soon. A cluster with no refusal told (a restart's first lists) is
  // waited for. Not for a refused copy's row (nothing of the job's is
  // there), nor in a cluster declared lost: nothing waits for one, and its
  // rows stay until it confirms (LostWithIntents).
  bool AnswersUnseen(const RemoteIntent& i) const {
    return i.refusal.empty() && !Reachable(i.cluster) && !DeclaredLost(i.cluster) && ListRefused(i.cluster);
  }
  Action DeleteUnseen(const RemoteIntent& i) const { return DeleteUnseenAction(in_, i); }
  // Whether withdrawn row i's object was created by this engine (its create
  // answered) and is not seen since, its expectation lapsed, while its
  // cluster answers and the view shows nothing of the job's kind there: a
  // watch gone silent, not found dead yet, may hide it (a loser's copy left
  // holding quota, a run going on). It is read and deleted by name.
  bool CreatedUnseen(const RemoteIntent& i) const {
    return UnseenSoFar(i) && !in_.created_lately.count({i.cluster, i.kind});  // young: may just not show yet
  }
  // The same, whatever the create's age: when it is young, when it stops
  // being so (the job is looked at again then, Sweep), else 0.
  bool UnseenSoFar(const RemoteIntent& i) const {
    if (i.present || !i.refusal.empty() || !Reachable(i.cluster)) return false;
    const bool copy = i.kind == kWorkload;
    if (!(copy ? in_.unseen_copies : in_.unseen_runs).count({i.cluster, i.epoch})) return false;
    const ClusterObservation* o = Observed(i.cluster);
    return copy ? o->workloads.empty() : o->jobs.empty();
  }
  int64_t YoungUntil(const RemoteIntent& i) const {
    if (!UnseenSoFar(i)) return 0;
    auto it = in_.created_lately.find({i.cluster, i.kind});
    return it == in_.created_lately.end() ? 0 : it->second;
  }
  // Row i's object is still to be read and deleted by name: the cluster
  // answers unseen, or its view may hide what was created (CreatedUnseen),
  // and no read has yet confirmed it gone (ReadGone).
  bool StillToReadByName(const RemoteIntent& i) const { return ReadByName(i) && !ReadGone(i); }
  // Row i's object is withdrawn by name, not by what the view shows (either of the above).
  bool ReadByName(const RemoteIntent& i) const { return AnswersUnseen(i) || CreatedUnseen(i); }
  // Whether row i's object, withdrawn by name (AnswersUnseen), was read
  // gone long enough after the row was withdrawn that no create of it can
  // land after (DecideOptions::not_found_confirms_after_ms): confirmed, as
  // a synced view's absence confirms it elsewhere. updated_ms is the
  // store's clock, the engine's 404 time its own: the daemon's wall clock
  // for both.
  bool ReadGone(const RemoteIntent& i) const {
    if (i.present || !ReadByName(i)) return false;
    auto it = in_.read_gone.find({i.cluster, i.kind});
    return it != in_.read_gone.end() && it->second >= i.updated_ms + opt_.not_found_confirms_after_ms;
  }
  static bool Ended(const ObservedJob* j) { return j && RunEnded(*j); }
  // Whether the owner's finished Workload w tells that the job ended, though
  // its real job j does not say so: j is not seen (a kind gantry does not
  // watch), or is of a generic kind, which may report its end only in its
  // status (a RayJob's jobDeploymentStatus) where Kueue reads it and
  // finishes the Workload. A Job or JobSet says it with its own conditions.
  // The Workload's Evicted condition changed at or after its job's creation
  // (both the cluster's own times, in whole seconds: a change in the same
  // second counts, erring towards at-most-once).
  static bool EvictedSinceCreated(const ObservedWorkload& w, const ObservedJob& j) {
    return w.evicted_changed_ms > 0 && j.created_ms > 0 && w.evicted_changed_ms >= j.created_ms;
  }
  static bool WorkloadTells(const ObservedJob* j, const ObservedWorkload* w) {
    return w && w->finished && (!j || !HasAdapter(ApiVersionOf(*j), j->kind));
  }
  // Deletes everything the job has in every reachable cluster, except the
  // current epoch's objects of the (cluster, kind)s kept.
  void WithdrawObserved(Plan& plan, const std::set<std::pair<std::string, std::string>>& keep = {}) const {
    auto kept = [&](const std::string& cluster, const char* kind, int64_t epoch) {
      return epoch == job_.epoch && keep.count({cluster, kind}) > 0;
    };
    for (const auto& [cluster, o] : in_.observed) {
      if (!Reachable(cluster)) continue;
      for (const ObservedWorkload& w : o.workloads) {
        if (!kept(cluster, kWorkload, w.epoch)) plan.actions.push_back(DeleteWorkload(cluster, w));
      }
      for (const ObservedJob& j : o.jobs) {
        if (!kept(cluster, kJob, j.epoch)) plan.actions.push_back(DeleteJob(cluster, j));
      }
    }
  }
  // Marks every present intent absent (in u), except those kept.
  void MarkAllAbsent(DispatchUpdate& u, const std::set<std::pair<std::string, std::string>>& keep = {}) const {
    MarkIntentsAbsent(u, in_.intents, keep);
  }
  // Intents to drop: absent ones whose cluster confirms the object gone, and
  // any in a cluster no longer in the inventory (nothing can reach it). The
  // rows in a cluster declared lost stay until it confirms: they are how the
  // health watch finds the jobs to look at again when it answers.
  // A row whose object this engine created at this epoch and has not seen
  // yet (Expected) is not confirmed gone by a view without it.
  // A refused copy's row (nothing of the job's is there) is dropped as soon
  // as it no longer keeps its cluster from being asked again: once the epoch
  // ends or the job leaves Nominating, wherever the cluster is.
  std::vector<std::pair<std::string, std::string>> ConfirmedGone() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const RemoteIntent& i : in_.intents) {
      if (i.present) continue;
      if (!i.refusal.empty()) {
        if (RefusedNow(i) || JobRefusalHeld(i)) continue;
        out.emplace_back(i.cluster, i.kind);
        continue;
      }
      if (!in_.clusters->count(i.cluster)) {
        if (Removed(i.cluster)) out.emplace_back(i.cluster, i.kind);
        continue;
      }
      if (ReadGone(i)) {
        out.emplace_back(i.cluster, i.kind);
        continue;
      }
      if (!ConfirmsAbsence(i.cluster)) continue;
      // Created a moment ago and not seen yet: the view may be behind (a
      // watch resuming after the cluster came back), not the cluster. Its
      // row stays until the object is seen and deleted, or the expectation
      // lapses; dropped now, the copy would be left there for good.
      if (Expected(i.cluster, i.kind.c_str())) continue;
      // A real job created (its create answered) and never seen since: a
      // view without it may be a watch gone silent, not yet found dead (its
      // view would then be behind). Confirmed by the view once the watch
      // would have been found dead: dropped sooner, the row would let the
      // job start elsewhere, or be cancelled, while that run goes on unseen.
      if (i.kind != kWorkload && in_.unseen_runs.count({i.cluster, i.epoch})) continue;
      // A copy so: left there holding quota, the row dropped while it is.
      if (i.kind == kWorkload && in_.unseen_copies.count({i.cluster, i.epoch})) continue;
      const ClusterObservation* o = Observed(i.cluster);
      bool seen = i.kind == kWorkload ? !o->workloads.empty() : !o->jobs.empty();
      if (!seen) out.emplace_back(i.cluster, i.kind);
    }
    return out;
  }
  // The row of the job's real job that cluster refused (403 or 404: only
  // there, Engine::MovesOnRefusal), or that holds it back (RemoteIntent::hold:
  // an owner that failed every create of it), less than job_refusal_hold_ms
  // ago (the row's updated_ms): the cluster is left out of the job's
  // dispatches meanwhile. Null when none.
  const RemoteIntent* JobRefusalIn(const std::string& cluster) const {
    for (const RemoteIntent& i : in_.intents) {
      if (i.cluster == cluster && JobRefusalHeld(i)) return &i;
    }
    return nullptr;
  }
  // Such a row, kept while it holds its cluster back from a job still to be
  // dispatched or running. A refused one says nothing of the job's is there:
  // a cancelled, finished or Unschedulable job drops it at once, and waits
  // for nothing. A hold alone is an ordinary withdrawn row to every other
  // reader, and becomes a refused one once its cluster shows it gone
  // (KeepHolds).
  bool JobRefusalHeld(const RemoteIntent& i) const {
    return HoldsClusterOut(i, job_.phase, in_.now_ms, opt_.job_refusal_hold_ms);
  }
  // Rows confirmed gone (ConfirmedGone) are dropped in u, except a held
  // row of a real job (RemoteIntent::hold) whose hold is still on: it is
  // written again as a refused one (nothing of the job's is there now), so
  // that it keeps its cluster out of the job's dispatches for
  // job_refusal_hold_ms more without making any reader wait on it.
  void KeepHolds(DispatchUpdate& u, std::vector<std::pair<std::string, std::string>> drops) const {
    for (auto& d : drops) {
      auto it = std::find_if(in_.intents.begin(), in_.intents.end(), [&](const RemoteIntent& i) {
        return i.cluster == d.first && i.kind == d.second;
      });
      // (A cluster removed from the inventory confirms nothing: its row goes.)
      if (it != in_.intents.end() && it->refusal.empty() && !it->hold.empty() && JobRefusalHeld(*it) &&
          !Removed(it->cluster)) {
        RemoteIntent kept = *it;
        kept.refusal = kept.hold;
        u.upsert_intents.push_back(std::move(kept));
      } else {
        u.drop_intents.push_back(std::move(d));
      }
    }
  }
  // A row of a Workload copy that its cluster refused at this epoch, while
  // the job nominates: that cluster is not asked again until the next epoch.
  bool RefusedNow(const RemoteIntent& i) const {
    return !i.present && !i.refusal.empty() && i.epoch == job_.epoch && job_.phase == JobPhase::kNominating;
  }
  // The clusters gone from the inventory that held rows of the job: their
  // rows are dropped (ConfirmedGone), but what they held may still be there.
  std::vector<std::string> RemovedWithIntents() const {
    return ClustersWithIntents([&](const std::string& c) { return Removed(c); });
  }
  // The clusters declared lost and silent that hold rows of the job.
  std::vector<std::string> LostWithIntents() const {
    return ClustersWithIntents([&](const std::string& c) { return DeclaredLost(c) && !Reachable(c); });
  }
  // The clusters, not declared lost, that hold rows of the job and cannot
  // confirm them gone now: out of reach, missing at start, or with a view
  // behind (its watches not relisted yet).
  std::vector<std::string> UnreachableWithIntents() const {
    return ClustersWithIntents([&](const std::string& c) { return !Removed(c) && !ConfirmsAbsence(c) && !DeclaredLost(c); });
  }
  // Each cluster, once, holding a row of the job that is not a refusal
  // (a refused row has nothing of the job's there) and meeting `which`.
  template <class Which>
  std::vector<std::string> ClustersWithIntents(Which which) const {
    std::vector<std::string> out;
    for (const RemoteIntent& i : in_.intents) {
      if (i.refusal.empty() && which(i.cluster) && std::find(out.begin(), out.end(), i.cluster) == out.end()) {
        out.push_back(i.cluster);
      }
    }
    return out;
  }

  // How long this job keeps its objects after it finished: its own
  // finishedRetentionSeconds, else its template's ttlSecondsAfterFinished
  // (which the worker never sees: TemplateTtlSeconds), within the same
  // bound, else the daemon's finished_retention_ms.
  int64_t RetentionMs() const {
    if (!in_.spec) return opt_.finished_retention_ms;
    if (in_.spec->finished_retention_seconds) return int64_t{*in_.spec->finished_retention_seconds} * 1000;
    if (std::optional<int64_t> ttl = TemplateTtlSeconds(in_.spec->template_object)) {
      return std::min<int64_t>(*ttl, kMaxFinishedRetentionSeconds) * 1000;
    }
    return opt_.finished_retention_ms;
  }
  // The owner's objects a job that finished there keeps for
  // RetentionMs() after finished_at: the Workload and the real job
  // of the current epoch, while the owner shows the real job (or, for kinds
  // gantry does not watch, the Workload) finished. While the owner is out of
  // sight, what was kept before (rows still present) stays kept, unless
  // seen_only (the pass that finishes the job: it keeps only what it sees).
  // Empty when nothing is kept.
  std::set<std::pair<std::string, std::string>> Retained(JobPhase phase, int64_t finished_at, bool seen_only) const;
  // What a Cleanup() plan leaves (its deletes, and the rows it does not
  // drop): kept rows (RetentionMs not up), rows in clusters declared lost
  // that do not answer, and anything else (other).
  struct Leftover {
    bool other = false;
    bool kept = false;
    bool lost = false;
    bool missing = false;  // in clusters missing from the inventory the daemon started with (MissingAtStart)
    bool any() const { return other || kept || lost || missing; }  // anything remote left at all
  };
  Leftover Left(const Plan& cleanup, const std::set<std::pair<std::string, std::string>>& keep) const;

  bool Fence(Plan& plan) const;
  void Sweep(Plan& plan, Plan& deletes) const;
  void LookAgainWhenOld(Plan& plan) const;  // (decide.cc)
  Plan Cleanup(const char* step) const;
  Plan Cancel() const;
  Plan Unschedulable() const;
  // Marks the deletes of runs the job moves on from as foreground ones, and
  // drops those already under way (decide.cc).
  void DeleteRunsInForeground(Plan& plan) const;
  std::optional<Plan> EndedBeforeCancel() const;  // decide_owner.cc
  // Step 12's finish, from what the owner's real job j ended with.
  Plan FinishAsEnded(const std::string& step, const ObservedJob& j) const;
  // Step 12's finish of a job whose end only its finished Workload tells (WorkloadTells).
  Plan FinishAsWorkloadTells(const std::string& step, const ObservedWorkload& w) const;
  bool LaterCandidate() const;
  void TellUnseenEnd(DispatchUpdate& u) const;  // step 2 (decide.cc)
  std::optional<Plan> EarlierRunSucceeded() const;  // step 1, first (decide.cc)
  std::optional<Plan> StoreBehind() const;          // step 0 (decide_store_behind.cc)
  std::optional<Plan> AwaitFirstListing() const;    // before step 0 (decide_store_behind.cc)
  int64_t NominationEpoch() const;                  // step 4's epoch (decide_store_behind.cc)
  bool AwaitsRelist(const std::string& cluster, const ObservedJob& j) const;  // step 1 (decide.cc)
  std::optional<Plan> RelistBeforeVerdict(const Plan& plan) const;              // step 1 (decide.cc)
  std::optional<Plan> WaitForRelist(const std::string& step) const;             // step 1 (decide.cc)
  // Past its dispatch timeout (step 6's, when it has one).
  bool PastDeadline() const {
    return in_.spec->dispatch.timeout_seconds && in_.now_ms >= NominationDeadlineMs();
  }
  bool OfEarlierDispatch(const ObservedJob& j) const;                           // step 1 (decide.cc)
  bool OwnRun(const ObservedJob& j) const;                                      // (decide.cc)
  bool OwnEarlierRun(const ObservedJob& j) const;                               // step 1 (decide.cc)
  Plan Nominate() const;
  std::optional<Plan> Lease() const;
  std::optional<Plan> Timeout() const;
  std::optional<Plan> Widen() const;
  std::optional<Plan> MoveFromFull(const std::vector<std::string>& live, const std::set<std::string>& have) const;
  std::optional<Plan> AllDeactivated() const;
  Plan Copies() const;
  void Gates(Plan& plan) const;
  Plan AllRefused(const std::vector<std::string>& refused) const;
  Plan Owned() const;
  // Step 13 for a real job kept suspended under an admitted copy: a timer,
  // then the message and a NotStarted event (decide_owner.cc).
  void NotStarted(const std::string& owner, int64_t since, Plan& plan) const;
  // Step 13 for an at-most-once job whose real job was created in owner at
  // created_ms and is not seen there (decide_owner.cc).
  Plan CreatedAndGone(const std::string& owner, int64_t created_ms) const;
  // Where an older epoch's run may still go on while gantry can still stop
  // it (see decide_owner.cc); "" when nowhere.
  std::string OlderRunIn() const;
  // The gate before the real job is created in owner, leased at lease_ms
  // (at the lease, and step 13): none, or what the job says, and how long
  // until it looks again (0: it waited long enough, and starts).
  struct EarlierRun {
    std::string message;
    JobEvent event;
    int64_t wait_ms = 0;
  };
  std::optional<EarlierRun> EarlierRunGate(const std::string& owner, int64_t lease_ms) const;
  // How the job's message begins while that gate holds it.
  std::string WaitingPrefix(const std::string& owner) const;
  Plan OwnerUnreachable(bool removed) const;
  // Step 13 for a real job whose every create in owner has failed for as
  // long as an outage of owner would take (DecideInput::
  // job_create_failing_ms): onClusterLoss, as for an owner out of reach.
  // Nothing (Wait: the flag, in plan) while it may still come.
  std::optional<Plan> CreateKeepsFailing(const std::string& owner, Plan& plan) const;
  Plan OwnerMissingAtStart() const;
  DispatchUpdate OwnerFlag(const std::string& reason, const std::string& message) const;
  void OwnerReturned(Plan& plan) const;
  Plan Requeue(const std::string& step, const std::string& reason, const std::string& message) const;
  // How old the epoch must be before a job whose copies an admission check
  // rejected is dispatched again: doubles with each epoch (decide_nominating.cc).
  int64_t RejectionFloorMs() const;
  // wait_ms, cut short to wake the job at its dispatch timeout, if it has one.
  int64_t UntilTimeout(int64_t wait_ms) const;
  // For a DispatchTimeout's message: " of the daemon's start at T (...)"
  // when the wait counted from the start, not from since_ms; else "".
  std::string CountedFromStart(int64_t since_ms) const {
    if (since_ms <= 0 || in_.started_ms <= since_ms) return "";
    return fmt::format(" of the daemon's start at {} (the wait began at {}; a wait is counted afresh from a start)",
                       FormatRfc3339(in_.started_ms), FormatRfc3339(since_ms));
  }
  // When a nomination's wait for an admission times out (dispatch.timeoutSeconds
  // set): from the nomination, not before the daemon started (right after a
  // start the views are not synced, and an admitted copy cannot take its
  // lease yet).
  int64_t NominationDeadlineMs() const {
    return std::max(job_.nominated_ms, in_.started_ms) + int64_t{*in_.spec->dispatch.timeout_seconds} * 1000;
  }
  // A Queued job: since when (its submission, or the write that sent it
  // back to Queued, which sets nominated_ms: Requeued, Unschedulable's
  // verdict lifted, a resubmission). dispatch.timeoutSeconds bounds this
  // wait for a cluster that may take it, as it bounds a nomination's wait
  // for an admission.
  // Not before the daemon started (DecideInput::started_ms).
  int64_t QueuedSinceMs() const {
    return std::max(job_.nominated_ms > 0 ? job_.nominated_ms : job_.created_ms, in_.started_ms);
  }
  Plan Finish(const std::string& step, JobPhase phase, const std::string& reason, const std::string& message) const;

  const DecideInput& in_;
  const JobRecord& job_;
  const DecideOptions& opt_;
};

}  // namespace gantry::dispatch::ladder
