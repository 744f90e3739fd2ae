// Decide() steps 5-9: a Nominating job, its Workload copies out in the
// candidate clusters: lease, timeout, widen, deactivated, copies.
#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gantry/dispatch/remote_objects.h"
#include "ladder.h"

namespace gantry::dispatch::ladder {

const placement::Exclusion* Ladder::ConstraintFails(const std::string& cluster) const {
  if (!in_.placement) return nullptr;
  for (const placement::ExcludedCluster& e : in_.placement->excluded) {
    if (e.cluster != cluster) continue;
    switch (e.exclusion.filter) {
      case placement::Filter::kQuota:
      case placement::Filter::kCordoned:
      case placement::Filter::kHealth:
      case placement::Filter::kPriorityClass:  // a copy there carries its value already
        return nullptr;
      default:
        return &e.exclusion;
    }
  }
  return nullptr;
}

// Step 5.
std::optional<Plan> Ladder::Lease() const {
  // Every copy at this epoch that won admission, by cluster name: the first
  // takes the lease (deterministic), the others lose it.
  std::vector<std::string> admitted;
  for (const RemoteIntent& i : in_.intents) {
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch || !Reachable(i.cluster)) continue;
    if (CopiesWithdrawn(i.cluster)) continue;  // step 9 withdraws it
    const ObservedWorkload* w = WorkloadIn(i.cluster);
    if (w && Leasable(*w)) admitted.push_back(i.cluster);
  }
  if (admitted.empty()) return std::nullopt;
  const std::string winner = admitted.front();
  Plan plan;
  plan.step = "lease";
  plan.lease_losers.assign(admitted.begin() + 1, admitted.end());
  DispatchUpdate u = Guarded(job_);
  u.phase = JobPhase::kAdmitted;
  u.cluster = winner;
  u.lease_ms = in_.now_ms;
  u.message = fmt::format("admitted by {} at epoch {}", winner, job_.epoch);
  MarkAllAbsent(u, {{winner, kWorkload}});
  Action create = CreateJobAction(in_, winner, job_.epoch);
  u.upsert_intents.push_back(IntentFor(create));
  u.events.push_back(Event("LeaseTaken", fmt::format("{} admitted the whole job first; epoch {}", winner, job_.epoch),
                           winner));
  // Withdraw the other copies, and create the real job: the deletes come
  // first in the plan, but go to other clusters, so RunActions sends them
  // in the same wave as the create, which does not wait for their answers
  // (a copy runs nothing without the lease).
  for (const RemoteIntent& i : in_.intents) {
    if (i.kind != kWorkload || i.cluster == winner || !Reachable(i.cluster)) continue;
    const ClusterObservation* o = Observed(i.cluster);
    for (const ObservedWorkload& w : o->workloads) plan.actions.push_back(DeleteWorkload(i.cluster, w));
  }
  plan.requeue_ms = opt_.resync_ms;
  // The real job is created in this pass, unless an earlier run of the job
  // may still go on (EarlierRunGate): step 13 creates it then.
  const std::optional<EarlierRun> earlier = EarlierRunGate(winner, in_.now_ms);
  if (earlier) {
    u.message = earlier->message;
    u.events.push_back(earlier->event);
  }
  if (earlier && earlier->wait_ms > 0) {
    plan.requeue_ms = earlier->wait_ms;
  } else {
    plan.actions.push_back(std::move(create));
  }
  plan.write = std::move(u);
  return plan;
}

// Step 6.
std::optional<Plan> Ladder::Timeout() const {
  if (!in_.spec->dispatch.timeout_seconds) return std::nullopt;
  if (in_.now_ms < NominationDeadlineMs()) return std::nullopt;
  std::vector<std::string> why;
  for (const RemoteIntent& i : in_.intents) {
    if (RefusedNow(i)) why.push_back(fmt::format("{}: refused the Workload copy ({})", i.cluster, i.refusal));
    if (!i.present || i.kind != kWorkload) continue;
    const ObservedWorkload* w = WorkloadIn(i.cluster);
    why.push_back(fmt::format("{}: {}", i.cluster,
                              !Reachable(i.cluster) ? "unreachable"
                              : !w                  ? "no Workload copy"
                              : w->message.empty()  ? "not admitted"
                                                    : w->message));
  }
  return Finish("timeout", JobPhase::kFailed, "DispatchTimeout",
                fmt::format("not admitted within {} s{}: {}", *in_.spec->dispatch.timeout_seconds,
                            CountedFromStart(job_.nominated_ms), fmt::join(why, "; ")));
}

// Step 7. Incremental: the next round. AllAtOnce: a copy in each feasible
// cluster that has none yet, up to maxCopies: one that refused its copy is
// replaced, and a cluster that could not take the job at the nomination
// (full, not Ready) gets a copy once it can, instead of the job waiting on
// the clusters it was first sent to; at maxCopies, copies move from full
// clusters to such a one (MoveFromFull).
std::optional<Plan> Ladder::Widen() const {
  if (!in_.placement) return std::nullopt;
  const bool incremental = in_.spec->dispatch.mode == DispatchMode::kIncremental;
  bool refusals = false;
  bool holding = false;  // a copy holds quota (its admission checks pending, say)
  std::set<std::string> have;
  std::vector<std::string> live;  // the clusters of copies that may still be admitted
  bool replaced = false;  // a copy withdrawn by step 9 (its cluster gone or cordoned)
  for (const RemoteIntent& i : in_.intents) {
    if (RefusedNow(i)) {
      have.insert(i.cluster);
      refusals = true;
    }
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch) continue;
    have.insert(i.cluster);
    // Holding quota, and not on its way out (evicted, deactivated, or with
    // a check Kueue is about to evict it for: it releases the quota).
    const bool withdrawn = CopiesWithdrawn(i.cluster);  // by step 9
    const ObservedWorkload* w = Reachable(i.cluster) && !withdrawn ? WorkloadIn(i.cluster) : nullptr;
    holding = holding || (w && w->quota_reserved && w->active && !w->evicted && !w->check_failed);
    // AllAtOnce replaces only refused copies: a deactivated one waits for
    // step 8 (its backoff) as before, and keeps its slot of maxCopies.
    if (!withdrawn && (!incremental || !Deactivated(i.cluster))) live.push_back(i.cluster);
    replaced = replaced || withdrawn;  // (a deactivated copy stays for the epoch: later rounds are rounds)
  }
  // Incremental: placement's candidates are the best step x (rounds + 1);
  // their ranking moves with capacity, so only the count tells whether a
  // round is due: top the live copies up to it with the best clusters that
  // have no copy yet (a deactivated or refused copy's cluster is not asked
  // again at this epoch). AllAtOnce: up to maxCopies, with the feasible
  // clusters in rank order; while a copy holds quota (as step 9's gates
  // wait then: that cluster's admission checks may provision for it, and
  // another copy would reserve, or preempt, for nothing), only a refused
  // copy is replaced, up to placement's candidate count, as before clusters
  // feasible later were asked.
  const size_t target = incremental ? in_.placement->candidates.size()
                        : holding   ? (refusals ? in_.placement->candidates.size() : 0)
                                    : in_.max_copies;
  if (!holding && live.size() >= in_.max_copies) return MoveFromFull(live, have);
  if (live.size() >= target) return std::nullopt;
  std::vector<std::string> add;
  for (const std::string& c : in_.placement->candidates) {
    if (live.size() + add.size() >= target) break;
    if (!have.count(c) && CopyMayGoTo(c)) add.push_back(c);
  }
  for (const placement::RankedCluster& r : in_.placement->feasible) {
    if (live.size() + add.size() >= target) break;
    if (!have.count(r.cluster) && CopyMayGoTo(r.cluster) &&
        std::find(add.begin(), add.end(), r.cluster) == add.end()) {
      add.push_back(r.cluster);
    }
  }
  if (add.empty()) return std::nullopt;
  Plan plan;
  plan.step = "widen";
  DispatchUpdate u = Guarded(job_);
  for (const std::string& c : add) {
    Action a = CreateWorkloadAction(in_, c, job_.epoch);
    u.upsert_intents.push_back(IntentFor(a));
    plan.actions.push_back(std::move(a));
  }
  u.events.push_back(Event("Widened", replaced   ? fmt::format("Workload copies added to {}, in place of copies in "
                                                                "clusters that cannot take the job now",
                                                                fmt::join(add, ", "))
                                      : incremental ? fmt::format("Incremental round: Workload copies added to {}",
                                                                  fmt::join(add, ", "))
                                      : refusals    ? fmt::format("Workload copies added to {}, in place of the "
                                                                  "clusters that refused theirs",
                                                                  fmt::join(add, ", "))
                                                    : fmt::format("Workload copies added to {}, feasible for the "
                                                                  "job now (whether there is room, its Kueue's "
                                                                  "quota decides)",
                                                                  fmt::join(add, ", "))));
  // The job's message names where its copies are now.
  live.insert(live.end(), add.begin(), add.end());
  u.message = fmt::format("nominated to {}", fmt::join(live, ", "));
  plan.write = std::move(u);
  plan.requeue_ms = opt_.retry_ms;
  return plan;
}

// Step 7 at maxCopies, while no copy holds quota: a copy in a cluster that
// cannot take the job now (placement ranks it without room for the job, or
// leaves it out for quota) moves to a feasible cluster with room, and
// nothing pending, that has none, best first. Else a job waits on full
// clusters while one ranked below the cap at its nomination, or freed
// since, could run it; its place in the queue is lost to later jobs, its
// dispatch timeout may pass, and a gate may open for a preemption that
// room elsewhere makes needless. Only a copy its Kueue shows pending moves
// (seen, active, holding no quota, not evicted: a stale reading alone moves
// none, and one a deactivation holds keeps its slot for step 8); one whose
// gate is open stays (its cluster may be preempting for it), and so does
// one out of reach (its delete could not go now). No copy moves back to a
// cluster it moved from at this epoch (no ping-pong between two clusters
// that free up in turn).
std::optional<Plan> Ladder::MoveFromFull(const std::vector<std::string>& live,
                                         const std::set<std::string>& have) const {
  auto fits_now = [](const placement::RankedCluster& r) { return r.score.value(placement::Term::kFitsNow) > 0; };
  // Nothing pending in its queues (the term is 1 only then): else those
  // ahead of a new copy there take the room first, and with a backlog
  // every waiting job would move a copy there for nothing.
  auto idle = [](const placement::RankedCluster& r) { return r.score.value(placement::Term::kQueueDepth) >= 1.0; };
  // Ranked without room for the job now, or left out for its quota.
  auto full_now = [&](const std::string& c) {
    const auto& f = in_.placement->feasible;
    auto ranked = std::find_if(f.begin(), f.end(), [&](const placement::RankedCluster& r) { return r.cluster == c; });
    if (ranked != f.end()) return !fits_now(*ranked);
    return std::any_of(in_.placement->excluded.begin(), in_.placement->excluded.end(),
                       [&](const placement::ExcludedCluster& x) {
                         return x.cluster == c && x.exclusion.filter == placement::Filter::kQuota;
                       });
  };
  auto pending = [&](const std::string& c) {
    const ObservedWorkload* w = WorkloadIn(c);
    return w && w->active && !w->quota_reserved && !w->evicted && !Deactivated(c);
  };
  std::vector<const RemoteIntent*> from;
  for (const RemoteIntent& i : in_.intents) {
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch || i.gate_opened_ms != 0) continue;
    if (std::find(live.begin(), live.end(), i.cluster) == live.end()) continue;
    if (full_now(i.cluster) && Reachable(i.cluster) && pending(i.cluster)) from.push_back(&i);
  }
  if (from.empty()) return std::nullopt;  // the usual case: nothing below needs doing
  std::set<std::string> left;  // moved from at this epoch (their rows absent)
  for (const RemoteIntent& i : in_.intents) {
    if (!i.present && i.kind == kWorkload && i.epoch == job_.epoch) left.insert(i.cluster);
  }
  std::vector<std::string> to;
  for (const placement::RankedCluster& r : in_.placement->feasible) {
    if (to.size() == from.size()) break;
    if (fits_now(r) && idle(r) && !have.count(r.cluster) && !left.count(r.cluster) && CopyMayGoTo(r.cluster)) {
      to.push_back(r.cluster);
    }
  }
  if (to.empty()) return std::nullopt;
  from.resize(to.size());
  Plan plan;
  plan.step = "widen";
  DispatchUpdate u = Guarded(job_);
  std::vector<std::string> moved, kept;
  for (const RemoteIntent* i : from) {
    moved.push_back(i->cluster);
    RemoteIntent gone = *i;
    gone.present = false;
    u.upsert_intents.push_back(std::move(gone));
    if (const ClusterObservation* o = Observed(i->cluster)) {
      for (const ObservedWorkload& w : o->workloads) plan.actions.push_back(DeleteWorkload(i->cluster, w));
    }
  }
  for (const std::string& c : to) {
    Action a = CreateWorkloadAction(in_, c, job_.epoch);
    u.upsert_intents.push_back(IntentFor(a));
    plan.actions.push_back(std::move(a));
  }
  for (const std::string& c : live) {
    if (std::find(moved.begin(), moved.end(), c) == moved.end()) kept.push_back(c);
  }
  kept.insert(kept.end(), to.begin(), to.end());
  u.events.push_back(Event("CopiesMoved", fmt::format("Workload copies moved from {}, which cannot take the job now "
                                                      "(quota), to {}, which may (maxCopies {})",
                                                      fmt::join(moved, ", "), fmt::join(to, ", "), in_.max_copies)));
  u.message = fmt::format("nominated to {}", fmt::join(kept, ", "));
  plan.write = std::move(u);
  plan.requeue_ms = opt_.retry_ms;
  return plan;
}

// How old an epoch whose copies an admission check rejected must be before
// the next: redispatch_after_rejection_ms at epoch 1, doubled with each later
// epoch, at most redispatch_after_rejection_max_ms. The epoch is persisted,
// so a restart does not start the backoff over.
int64_t Ladder::RejectionFloorMs() const {
  int64_t floor = opt_.redispatch_after_rejection_ms;
  for (int64_t e = 1; e < job_.epoch && floor < opt_.redispatch_after_rejection_max_ms; ++e) floor *= 2;
  return std::min(floor, opt_.redispatch_after_rejection_max_ms);
}

int64_t Ladder::UntilTimeout(int64_t wait_ms) const {
  if (!in_.spec->dispatch.timeout_seconds) return wait_ms;
  return std::min(wait_ms, std::max<int64_t>(NominationDeadlineMs() - in_.now_ms, 1));
}

// Step 8. Every copy of this epoch deactivated (an admission check
// Rejected it in each cluster) and no round to add another: nothing is left
// to wait for, so the job is dispatched again at the next epoch, as after an
// eviction, once this epoch is RejectionFloorMs old. A copy not
// seen yet, or in a cluster out of sight, may still be admitted: it is
// waited for.
std::optional<Plan> Ladder::AllDeactivated() const {
  std::vector<std::string> why;
  for (const RemoteIntent& i : in_.intents) {
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch) continue;
    if (!Deactivated(i.cluster)) return std::nullopt;
    const ObservedWorkload* w = WorkloadIn(i.cluster);
    // Deactivated and not evicted yet (spec.active set false there): its
    // conditions tell of its quota, not of this.
    why.push_back(w->evicted ? fmt::format("{}: {} ({})", i.cluster, w->reason, w->message)
                             : fmt::format("{}: spec.active: false", i.cluster));
  }
  if (why.empty()) return std::nullopt;
  const int64_t due = job_.nominated_ms + RejectionFloorMs();
  if (in_.now_ms < due) {
    Plan plan;
    plan.step = "deactivated";
    plan.requeue_ms = UntilTimeout(due - in_.now_ms);  // nothing else wakes it: no copy is left to change
    return plan;
  }
  return Requeue("deactivated", "Deactivated",
                 fmt::format("every Workload copy was deactivated: {}", fmt::join(why, "; ")));
}

// Step 9, when every cluster asked refused the job's copy at this epoch and
// step 7 found no other to ask (refused: "c1: <its answer>"). One not asked
// yet that cannot take the job only for now (not Ready, cordoned, its quota
// read long ago) may later, unless it has been out of reach for
// clusterLostTimeout: the job waits for it, at most that long from its
// nomination. Otherwise it fails with the answers.
Plan Ladder::AllRefused(const std::vector<std::string>& refused) const {
  std::set<std::string> asked;
  for (const RemoteIntent& i : in_.intents) {
    if (i.kind == kWorkload && i.epoch == job_.epoch) asked.insert(i.cluster);
  }
  std::vector<std::string> later;
  if (in_.placement && in_.now_ms - job_.nominated_ms < opt_.cluster_lost_timeout_ms) {
    for (const placement::ExcludedCluster& x : in_.placement->excluded) {
      if (x.exclusion.permanent || Gone(x.cluster) || asked.count(x.cluster)) continue;
      auto f = in_.clusters->find(x.cluster);
      if (f != in_.clusters->end() && f->second.lost_for_ms >= opt_.cluster_lost_timeout_ms) continue;
      later.push_back(x.cluster);
    }
    // A candidate no copy went to while the job's earlier run may still be
    // there (EarlierJobIn) is asked once that run is gone.
    for (const std::string& c : in_.placement->candidates) {
      if (!asked.count(c) && EarlierJobIn(c) && std::find(later.begin(), later.end(), c) == later.end()) {
        later.push_back(c);
      }
    }
  }
  // A cluster held out of the job's dispatches (RemoteIntent::hold) may
  // take it once the hold is over, whenever that is: Widen then adds a
  // copy there at this epoch.
  int64_t held_until = 0;
  for (const RemoteIntent& i : in_.intents) {
    if (i.hold.empty() || !JobRefusalHeld(i) || Gone(i.cluster) || asked.count(i.cluster)) continue;
    if (std::find(later.begin(), later.end(), i.cluster) == later.end()) later.push_back(i.cluster);
    const int64_t until = i.updated_ms + opt_.job_refusal_hold_ms;
    held_until = held_until == 0 ? until : std::min(held_until, until);
  }
  if (later.empty()) {
    constexpr size_t kNamed = 8;  // each answer is up to ~300 bytes
    const auto named_end = refused.begin() + static_cast<std::ptrdiff_t>(std::min(refused.size(), kNamed));
    std::string answers = fmt::format("{}", fmt::join(refused.begin(), named_end, "; "));
    if (refused.size() > kNamed) {
      answers += fmt::format("; and {} more (see the job's events)", refused.size() - kNamed);
    }
    return Finish("copies", JobPhase::kFailed, "Refused",
                  fmt::format("every candidate cluster refused the job's Workload copy: {}", answers));
  }
  Plan plan;
  plan.step = "copies";
  const std::string msg =
      fmt::format("every cluster asked refused the job's Workload copy; waiting for {}, which cannot take it now "
                  "(see gantry explain)",
                  fmt::join(later, ", "));
  if (job_.message != msg) {
    plan.write = Guarded(job_);
    plan.write->message = msg;
  }
  int64_t wait_left = job_.nominated_ms + opt_.cluster_lost_timeout_ms - in_.now_ms;
  if (held_until > 0) wait_left = wait_left > 0 ? std::min(wait_left, held_until - in_.now_ms) : held_until - in_.now_ms;
  plan.requeue_ms = UntilTimeout(std::clamp<int64_t>(wait_left, 1, opt_.resync_ms));
  return plan;
}

// Step 9. Copies in a cluster removed from the inventory, declared lost or
// cordoned, or one that keeps gantry from listing the job's kind (KindRefused: such a
// copy could never take the lease), or gone from one where the job's class
// has no known value now (ClassValueMissing: it is not made again), are
// withdrawn (intents absent; Sweep
// deletes what such a cluster shows once it can, or by name while it
// answers but refuses gantry the list: AnswersUnseen); when no other copy
// is left, the job is dispatched again at once.
// When every candidate refused its copy (the engine records each answer),
// AllRefused decides.
Plan Ladder::Copies() const {
  std::vector<std::string> gone;       // for the messages: "c1 (declared lost by an operator)"
  std::vector<RemoteIntent> withdrawn;  // their rows, marked absent
  std::vector<std::string> refused;     // "c1: <its answer>"
  std::vector<std::string> left;  // the clusters of the copies that stay
  bool lost = false;      // some in a cluster gone (not only refusing the kind)
  bool kind = false;      // some refusing the kind
  bool cordoned = false;  // some in a cluster cordoned
  bool constrained = false;  // some in a cluster the job's constraints exclude now
  for (const RemoteIntent& i : in_.intents) {
    if (RefusedNow(i)) refused.push_back(fmt::format("{}: {}", i.cluster, i.refusal));
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch) continue;
    // A copy gone from a cluster where it could not be made again (the
    // value of the job's class is not known there any more) would hold the
    // job to a cluster that cannot take it.
    const bool classless = !Gone(i.cluster) && !KindRefused(i.cluster) && ClassValueMissing(i.cluster) &&
                           ConfirmsAbsence(i.cluster) && !WorkloadIn(i.cluster) && !Expected(i.cluster, kWorkload);
    // A copy in a cluster missing since the start is withdrawn as from one
    // removed (Gone; its row kept until a reload confirms it): without a
    // lease it runs nothing, and the job must not wait for a reload that
    // may never come.
    if (CopiesWithdrawn(i.cluster) || KindRefused(i.cluster) || classless) {
      lost |= Gone(i.cluster);
      kind |= KindRefused(i.cluster);
      cordoned |= Cordoned(i.cluster);
      const placement::Exclusion* constraint = ConstraintFails(i.cluster);
      constrained |= constraint != nullptr;
      gone.push_back(fmt::format("{} ({})", i.cluster,
                                 Removed(i.cluster) ? std::string("removed from the inventory")
                                 : MissingAtStart(i.cluster) ? std::string("not in the inventory the daemon started with")
                                 : DeclaredLost(i.cluster) ? std::string("declared lost by an operator")
                                 : Cordoned(i.cluster) ? std::string("cordoned by an operator")
                                 : constraint ? fmt::format("no longer meets the job's constraints: {}: {}",
                                                            placement::FilterName(constraint->filter),
                                                            constraint->message)
                                 : classless ? fmt::format("its copy is gone, and the value of WorkloadPriorityClass "
                                                           "{} is not known there",
                                                           WorkloadPriorityClass(in_.spec->template_object))
                                             : fmt::format("it does not let gantry list {} there", in_.resource)));
      withdrawn.push_back(i);
      withdrawn.back().present = false;
    } else {
      left.push_back(i.cluster);
    }
  }
  if (left.empty() && gone.empty() && !refused.empty()) return AllRefused(refused);
  if (!gone.empty() && left.empty()) {
    return Requeue("copies",
                   lost          ? "ClusterLost"
                   : kind        ? "WatchRefused"
                   : cordoned    ? "Cordoned"
                   : constrained ? "ConstraintsChanged"
                                 : "PriorityClassUnknown",
                   fmt::format("every Workload copy was in a cluster that cannot take the job: {}",
                               fmt::join(gone, ", ")));
  }
  Plan plan;
  plan.step = "copies";
  if (!gone.empty()) {
    DispatchUpdate u = Guarded(job_);
    u.upsert_intents = std::move(withdrawn);
    u.message = fmt::format("nominated to {}", fmt::join(left, ", "));
    u.events.push_back(Event("CopiesWithdrawn", fmt::format("Workload copies withdrawn from {}", fmt::join(gone, ", "))));
    plan.write = std::move(u);
    // A cluster declared lost or cordoned that answers: its copies go now.
    for (const auto& [cluster, o] : in_.observed) {
      if (!CopiesWithdrawn(cluster) || !Reachable(cluster)) continue;
      for (const ObservedWorkload& w : o.workloads) plan.actions.push_back(DeleteWorkload(cluster, w));
    }
  }
  bool awaited = false;  // a copy not seen yet, created a moment ago
  for (const RemoteIntent& i : in_.intents) {
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch || !Reachable(i.cluster)) continue;
    if (CopiesWithdrawn(i.cluster)) continue;
    if (WorkloadIn(i.cluster)) continue;
    if (Expected(i.cluster, kWorkload)) {
      awaited = true;
    } else if (!ClassValueMissing(i.cluster)) {  // else: when its value is known again
      plan.actions.push_back(CreateWorkloadAction(in_, i.cluster, job_.epoch));
    }
  }
  // An awaited copy that never shows (it was deleted at once) is created
  // again once its expectation lapses: look again soon, not at the resync.
  // So are the rows of withdrawn copies dropped.
  const bool waits = plan.actions.empty() && !awaited && gone.empty();  // for admission, an event
  plan.requeue_ms = waits ? opt_.backstop_ms : opt_.retry_ms;
  if (in_.spec->dispatch.mode == DispatchMode::kIncremental) {
    int64_t round = int64_t{in_.spec->dispatch.round_seconds} * 1000;
    int64_t next = round - (in_.now_ms - job_.nominated_ms) % round;
    plan.requeue_ms = std::min(plan.requeue_ms, std::max<int64_t>(next, 1));
  }
  Gates(plan);
  plan.requeue_ms = UntilTimeout(plan.requeue_ms);
  plan.backstop = waits;  // unless a round, gate or timeout is due sooner (Ladder::Run)
  return plan;
}

// Step 9, last: preemption gates (DecideOptions::preemption_gate_ms). A copy
// with gantry's gate closed is admitted only where it fits without
// preempting. While no copy of the epoch holds quota, one gate opens at a
// time: the first a period after the nomination, each next a period after
// the one before (as Kueue's KEP-8303 measures it), so that a preemption
// has a period to finish before another cluster may start one; longer while
// the cluster whose gate opened says it waits for its victims to stop
// (ObservedWorkload::preempting), up to kPreemptionHoldPeriods periods from
// that opening, so a slow preemption is not doubled in another cluster and
// a stuck one does not hold the job for good. The copy chosen is one that
// Kueue says its gate holds back (QuotaReserved reason PreemptionGated: it
// would preempt) if any, then the best-ranked (placement's order; clusters
// it no longer ranks last), then by name. The intent records the time
// before the patch, so a copy that shows its gate closed although its row
// says open (re-created, or the patch lost in a crash) is patched again,
// and no other gate opens in its place; a cluster that refused the patch
// (gate_refusal) is not asked again.
namespace {
constexpr int64_t kPreemptionHoldPeriods = 4;
}  // namespace

void Ladder::Gates(Plan& plan) const {
  const int64_t period = opt_.preemption_gate_ms;
  if (period <= 0) return;
  auto current = [&](const RemoteIntent& i) { return i.present && i.kind == kWorkload && i.epoch == job_.epoch; };
  int64_t last_opened = 0;
  int64_t hold_until = 0;  // a preemption under way holds the next gate until then
  for (const RemoteIntent& i : in_.intents) {
    if (!current(i) || Cordoned(i.cluster)) continue;  // (withdrawn by this step)
    const ObservedWorkload* w = WorkloadIn(i.cluster);
    if (w && w->quota_reserved) return;  // on its way to admission: nothing else may preempt
    last_opened = std::max(last_opened, i.gate_opened_ms);
    if (w && w->preempting && w->active && !w->evicted && i.gate_opened_ms > 0) {
      hold_until = std::max(hold_until, i.gate_opened_ms + kPreemptionHoldPeriods * period);
    }
  }
  std::vector<std::pair<const RemoteIntent*, const ObservedWorkload*>> closed;
  for (const RemoteIntent& i : in_.intents) {
    if (!current(i)) continue;
    const ObservedWorkload* w = WorkloadIn(i.cluster);
    if (!w || !w->gated || w->gate_open || !w->active || !Reachable(i.cluster) || CopiesWithdrawn(i.cluster)) continue;
    if (w->resource_version.empty()) continue;  // the patch's precondition (an API server always sets one)
    if (i.gate_opened_ms == 0) {
      closed.emplace_back(&i, w);
    } else if (i.gate_refusal.empty()) {
      const auto version = KueueVersionOf(*in_.clusters, i.cluster);
      plan.actions.push_back(OpenGateAction(i.cluster, version, *w, job_.epoch, in_.now_ms));
    }
  }
  if (closed.empty()) return;
  const int64_t due = std::max({job_.nominated_ms + period, last_opened + period, hold_until});
  if (in_.now_ms < due) {
    plan.requeue_ms = std::min(plan.requeue_ms, due - in_.now_ms);
    return;
  }
  auto rank = [&](const std::string& cluster) -> size_t {
    if (!in_.placement) return SIZE_MAX;
    const auto& f = in_.placement->feasible;
    auto it = std::find_if(f.begin(), f.end(),
                           [&](const placement::RankedCluster& r) { return r.cluster == cluster; });
    return it == f.end() ? SIZE_MAX : static_cast<size_t>(it - f.begin());
  };
  auto order = [&](const auto& c) {
    return std::tuple(!c.second->held_by_gate, rank(c.first->cluster), c.first->cluster);
  };
  const auto& [row, copy] = *std::min_element(closed.begin(), closed.end(),
                                              [&](const auto& a, const auto& b) { return order(a) < order(b); });
  if (!plan.write) plan.write = Guarded(job_);
  RemoteIntent opened = *row;
  opened.gate_opened_ms = in_.now_ms;
  plan.write->upsert_intents.push_back(std::move(opened));
  // Each opening is told where Kueue says the gate is what holds the copy
  // back. A copy that waits for quota alone (a job of the lowest priority
  // has nothing to preempt) has its gate opened in turn all the same, in
  // case that changes; one event says so at the first, rather than one per
  // cluster saying it may preempt what is not there (remoteobjects shows
  // every gate).
  if (copy->held_by_gate) {
    plan.write->events.push_back(Event(
        "PreemptionAllowed",
        fmt::format("{} may preempt lower-priority work for this job: not admitted without preempting {} s after "
                    "its dispatch (its copy's preemption gate is opened)",
                    row->cluster, (in_.now_ms - job_.nominated_ms) / 1000),
        row->cluster));
  } else if (last_opened == 0) {
    plan.write->events.push_back(Event(
        "PreemptionAllowed",
        fmt::format("not admitted {} s after its dispatch: its copies' preemption gates are opened one at a time, "
                    "{} first, so that a cluster may preempt lower-priority work for it if it comes to that (no "
                    "cluster says it would yet)",
                    (in_.now_ms - job_.nominated_ms) / 1000, row->cluster),
        row->cluster));
  }
  const auto version = KueueVersionOf(*in_.clusters, row->cluster);
  plan.actions.push_back(OpenGateAction(row->cluster, version, *copy, job_.epoch, in_.now_ms));
  if (closed.size() > 1) plan.requeue_ms = std::min(plan.requeue_ms, period);  // the next one's turn
}

}  // namespace gantry::dispatch::ladder
