// Decide() steps 10-13: a job with a lease (Admitted or Running in its owner).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "gantry/inventory/cluster_health.h"
#include "ladder.h"

namespace gantry::dispatch::ladder {

Plan Ladder::Requeue(const std::string& step, const std::string& reason, const std::string& message) const {
  Plan plan;
  plan.step = step;
  DispatchUpdate u = Requeued(job_, in_.intents, message, in_.now_ms);
  u.events.push_back(Event(reason, message + "; requeued, the next dispatch uses epoch " + std::to_string(NominationEpoch()),
                           job_.cluster, "Warning"));
  plan.write = std::move(u);
  plan.requeue_ms = 0;
  return plan;
}

Plan Ladder::Finish(const std::string& step, JobPhase phase, const std::string& reason,
                    const std::string& message) const {
  Plan plan;
  plan.step = step;
  // A job that finished in its owner may keep its objects there a while
  // (Retained); its time starts now, as the store's finished_ms does.
  const auto keep = Retained(phase, in_.now_ms, true);
  DispatchUpdate u = Guarded(job_);
  u.phase = phase;
  u.message = message;
  MarkSummaryLastSeen(LastSummary(), u);  // FinishAsEnded and the earlier-run finish put the run's end in its place
  MarkAllAbsent(u, keep);
  u.events.push_back(Event(reason, message, job_.cluster, phase == JobPhase::kSucceeded ? "Normal" : "Warning"));
  if (!keep.empty()) {
    u.events.push_back(Event("Retained",
                             fmt::format("the Workload and the job stay in {} for {} s (finishedRetentionSeconds)",
                                         job_.cluster, RetentionMs() / 1000),
                             job_.cluster));
  }
  plan.write = std::move(u);
  // Withdrawn in this pass: the write above (intents absent) is durable
  // before any action runs. The clusters' confirmations wake the job for
  // step 2; the retry is the backstop.
  WithdrawObserved(plan, keep);
  plan.requeue_ms = opt_.retry_ms;
  return plan;
}

Plan Ladder::FinishAsEnded(const std::string& step, const ObservedJob& j) const {
  const bool ok = j.state == RemoteJobState::kSucceeded;
  std::string msg = fmt::format("{} in {}: {}", ok ? "succeeded" : "failed", job_.cluster, RunEndText(j));
  // Seen long after it ended (the cluster out of reach, or gantry down, in
  // between): the job's completionTime is when gantry saw the end, so the
  // run's own time is told here. The cluster wrote it by its own clock,
  // which may be off gantry's (its probes measure by how much).
  const std::optional<int64_t> measured = ClockOffsetOf(job_.cluster);
  const int64_t offset = measured.value_or(0);
  if (j.ended_ms > 0 && in_.now_ms - (j.ended_ms - offset) >= kLateEndMs) {
    msg += fmt::format("; the run ended at {} by {}'s clock, {} before gantry saw it", FormatRfc3339(j.ended_ms),
                       job_.cluster, FormatAge(in_.now_ms - (j.ended_ms - offset)));
    if (!measured) {
      msg += " (if that clock is in step with gantry's: its offset is not measured yet)";
    } else if (std::abs(offset) >= 2'000) {
      msg += fmt::format(" (that clock is {} {} gantry's)", FormatAge(std::abs(offset)),
                         offset > 0 ? "ahead of" : "behind");
    }
  }
  Plan p = Finish(step, ok ? JobPhase::kSucceeded : JobPhase::kFailed, ok ? "Succeeded" : "Failed", msg);
  p.write->remote_status = j.summary;
  return p;
}

Plan Ladder::FinishAsWorkloadTells(const std::string& step, const ObservedWorkload& w) const {
  // Succeeded or Failed as its job ended; any other reason (OutOfSync,
  // FailedToStart, OwnerNotFound) is not a success.
  const bool ok = w.reason == "Succeeded";
  return Finish(step, ok ? JobPhase::kSucceeded : JobPhase::kFailed, ok ? "Succeeded" : "Failed",
                fmt::format("finished in {}: {} {}", job_.cluster, w.reason, w.message));
}

// Step 3, first: the real job ended in its owner before the cancel was
// acted on (its row still present: nothing of the job withdrawn yet). What
// it did stands, as a cancel of a job already finished leaves it: the
// cancel's deletes would otherwise throw the result, its remote status and
// its retention away. Once a cancel pass withdrew the job, an end seen
// after is the cancel's own doing (pods stopped), and the job is Cancelled.
std::optional<Plan> Ladder::EndedBeforeCancel() const {
  const std::string& owner = job_.cluster;
  if (owner.empty() || !Reachable(owner)) return std::nullopt;
  const bool untouched = std::any_of(in_.intents.begin(), in_.intents.end(), [&](const RemoteIntent& i) {
    return i.present && i.cluster == owner && i.kind != kWorkload && i.epoch == job_.epoch;
  });
  const ObservedJob* j = JobIn(owner);
  const ObservedWorkload* w = WorkloadOrLastIn(owner);
  if (!untouched) return std::nullopt;
  Plan p;
  if (Ended(j)) {
    p = FinishAsEnded("cancel", *j);
  } else if (WorkloadTells(j, w)) {  // a kind gantry has no adapter for: its Workload says
    p = FinishAsWorkloadTells("cancel", *w);
  } else {
    return std::nullopt;
  }
  p.write->events.push_back(Event("CancelTooLate",
                                  fmt::format("the job had already ended in {} when its cancel was acted on: its "
                                              "result stands",
                                              owner),
                                  owner));
  return p;
}

// In the message of a job CreateKeepsFailing flagged or moved.
constexpr std::string_view kCreateFailsText = "has failed every try to create the job there";

// The job's message, and its one condition OwnerUnreachable with this
// reason (OwnerReturned lifts it).
DispatchUpdate Ladder::OwnerFlag(const std::string& reason, const std::string& message) const {
  DispatchUpdate u = Guarded(job_);
  u.message = message;
  u.conditions_json = Conditions("OwnerUnreachable", reason, message, in_.now_ms);
  return u;
}

int64_t Ladder::LostAfterMs(const ClusterFacts& f, bool refused) const {
  int64_t timeout =
      inventory::LostTimeoutMs(refused, opt_.cluster_lost_timeout_ms, opt_.credentials_refused_timeout_ms);
  if (f.config.declared_lost) timeout = std::min(timeout, std::max<int64_t>(opt_.declared_lost_grace_ms, 1));
  return timeout;
}

// Step 10: the owner is out of reach (removed: gone from the inventory). An
// owner declared lost by an operator waits only declared_lost_grace_ms (if
// shorter than its timeout), from a failure a probe saw: an owner that is
// only not synced yet, or not probed since a restart, is waited for. An
// owner that answers but does not let gantry list what it watches there
// (RBAC, or errors such as a broken conversion webhook's)
// is out of reach as one that refuses the credentials is, since the first
// refusal the engine saw (kept in the store across restarts).
Plan Ladder::OwnerUnreachable(bool removed) const {
  const std::string& owner = job_.cluster;
  const ClusterFacts* facts = removed ? nullptr : &in_.clusters->at(owner);
  const bool refused = facts && facts->credentials_refused;
  // Its Workloads or Jobs, or the resource of this job's kind (a JobSet's
  // when only the cluster's JobSets cannot be listed).
  const ClusterFacts::KindRefusal* kind_refused = facts ? KindRefusalIn(owner) : nullptr;
  const bool watch_refused = facts && ListRefused(owner);
  const bool declared = facts && facts->config.declared_lost;
  const int64_t timeout = facts ? LostAfterMs(*facts, refused || watch_refused) : opt_.cluster_lost_timeout_ms;
  int64_t refused_for = 0;
  if (watch_refused) {
    if (!facts->watch_refused.empty()) refused_for = facts->watch_refused_for_ms;
    if (kind_refused) refused_for = std::max(refused_for, kind_refused->for_ms);
  }
  const int64_t lost = removed ? timeout : watch_refused ? refused_for : facts->lost_for_ms;
  if (lost >= timeout) {
    std::string why = removed    ? fmt::format("owner cluster {} was removed from the inventory (what the job ran "
                                               "there may still run: gantry no longer reaches it)",
                                               owner)
                      : declared ? fmt::format("owner cluster {}, declared lost by an operator, has been out of reach "
                                               "for {} s",
                                               owner, lost / 1000)
                      : refused  ? fmt::format("owner cluster {} has refused gantry's credentials for {} s", owner,
                                               lost / 1000)
                      : watch_refused ? fmt::format("owner cluster {} has not let gantry list what it watches "
                                                    "there for {} s",
                                                    owner, lost / 1000)
                                 : fmt::format("owner cluster {} unreachable for {} s", owner, lost / 1000);
    switch (in_.spec->on_cluster_loss) {
      case OnClusterLoss::kRequeue:
        return Requeue("owner-lost", "ClusterLost", why);
      case OnClusterLoss::kFail:
        return Finish("owner-lost", JobPhase::kFailed, "ClusterLost", why + std::string(kFailedOnLossText));
      case OnClusterLoss::kWait: {
        Plan plan;
        plan.step = "owner-lost";
        std::string msg = why + "; onClusterLoss is Wait: waiting for it to return";
        if (ConditionReason(job_.conditions_json, "OwnerUnreachable") != "OwnerLost") {
          plan.write = OwnerFlag("OwnerLost", msg);
          plan.write->events.push_back(Event("ClusterLost", msg, owner, "Warning"));
        }
        // A cluster declared lost may never return: the health watch wakes
        // the job if it does (the job's rows name it), so it is not polled.
        // Nor is one removed from the inventory: a reload that brings it
        // back wakes every unfinished job.
        plan.requeue_ms = declared || removed ? opt_.lost_recheck_ms : opt_.retry_ms;
        return plan;
      }
    }
  }
  Plan plan;
  plan.step = "owner-lost";
  // Not seen failing yet (not synced, or not probed since a restart): the
  // usual pace, not the last stretch's. A refusal (of the credentials or a
  // watch) may last a day: the health watch wakes the job when it ends, so
  // only the timeout is looked out for, at the resync's pace.
  const int64_t pace = refused || watch_refused ? opt_.resync_ms : opt_.retry_ms;
  plan.requeue_ms = lost == 0 ? opt_.retry_ms : std::clamp<int64_t>(timeout - lost, 200, pace);
  const std::string flag = ConditionReason(job_.conditions_json, "OwnerUnreachable");
  // Up, and refusing us: the job most likely runs on, so the user sees why
  // its status stands still. The refusal's details are the cluster's (gantry
  // clusters), not every tenant's.
  auto raise = [&](const std::string& reason, const std::string& message) {
    plan.write = OwnerFlag(reason, message);
    plan.write->events.push_back(Event(reason, message, owner, "Warning"));
  };
  if (facts && !facts->unusable.empty()) {
    // Held by the inventory, not probed: no outage is measured, and the job
    // waits as it is until an operator fixes the cluster's configuration.
    if (flag != "OwnerHeld") {
      raise("OwnerHeld", fmt::format("gantry does not reach owner cluster {}: {}; the job is left as it is there, "
                                     "and its status is not followed until that is fixed (see gantry clusters)",
                                     owner, facts->unusable));
    }
  } else if (refused && flag != "CredentialsRefused") {
    raise("CredentialsRefused", fmt::format("owner cluster {} answers but refuses gantry's credentials; the job is left "
                                            "as it is there until they work again (see gantry clusters)",
                                            owner));
  } else if (watch_refused && flag != "WatchRefused") {
    raise("WatchRefused", fmt::format("owner cluster {} answers but does not let gantry list what it watches there "
                                      "(it refuses, or answers an error; see gantry clusters); the job is left as it "
                                      "is there, and its status is not followed until it does",
                                      owner));
  } else if (!refused && !facts->ready &&
             (flag == "CredentialsRefused" || flag == "WatchRefused" || flag == "OwnerHeld")) {
    // Now out of reach for another reason: the flag would tell a wrong story.
    // (Ready, only not synced yet: the credentials work again, and
    // OwnerReturned lifts the flag once the watches have caught up.)
    plan.write = OwnerFlag("Unreachable", fmt::format("owner cluster {} unreachable", owner));
  }
  return plan;
}

// Step 13: the owner answers gantry's probes and watches, and has failed
// every try to create the job there for job_create_failing_ms. Its
// outage clock does not run (it is reachable), yet the job cannot start
// there: once that has lasted as long as an outage would have to
// (clusterLostTimeout; an owner declared lost, its grace), the job's
// onClusterLoss applies as for an owner out of reach. A create that may
// have landed unseen is fenced by the next epoch (Requeue) or deleted once
// the job is over (Fail); Wait flags the job and goes on trying.
std::optional<Plan> Ladder::CreateKeepsFailing(const std::string& owner, Plan& plan) const {
  const int64_t failing = in_.job_create_failing_ms;
  auto facts = in_.clusters->find(owner);
  if (failing <= 0 || facts == in_.clusters->end()) return std::nullopt;
  const int64_t timeout = LostAfterMs(facts->second, false);
  if (failing < timeout) return std::nullopt;  // (a failed pass is looked at again within retry_ms)
  const std::string why =
      fmt::format("owner cluster {} answers gantry's reads but {} for {} s (the last: {})", owner, kCreateFailsText,
                  failing / 1000, in_.job_create_error.empty() ? "no answer" : in_.job_create_error);
  switch (in_.spec->on_cluster_loss) {
    case OnClusterLoss::kRequeue: {
      // It would most likely win the lease again and fail the create again
      // for as long: the row holds it out of the job's dispatches for a
      // while (RemoteIntent::hold). It is no refusal: a failed try may have
      // landed (a 5xx, a timeout), so the row stays an ordinary withdrawn
      // one to every other reader, and the next epoch's run waits until the
      // view shows none there.
      Plan p = Requeue("owner-lost", "ClusterLost",
                       fmt::format("{}; {} is left out of the job's dispatches for {} from when it shows "
                                   "the job gone",
                                   why, owner, DurationText(opt_.job_refusal_hold_ms)));
      for (RemoteIntent& i : p.write->upsert_intents) {
        if (i.cluster == owner && i.kind == kJob) i.hold = why;
      }
      return p;
    }
    case OnClusterLoss::kFail:
      return Finish("owner-lost", JobPhase::kFailed, "ClusterLost", why + std::string(kFailedOnLossText));
    case OnClusterLoss::kWait:
      if (ConditionReason(job_.conditions_json, "OwnerUnreachable") != "OwnerLost") {
        const std::string msg = why + "; onClusterLoss is Wait: trying on";
        plan.write = OwnerFlag("OwnerLost", msg);
        plan.write->events.push_back(Event("ClusterLost", msg, owner, "Warning"));
      }
      break;
  }
  return std::nullopt;
}

// Step 10, before the inventory is confirmed (DecideInput::inventory_confirmed):
// the owner is missing from the inventory the daemon started with. Its file
// may be missing a moment, or its clusters.d not mounted yet: counted as
// removed, a Requeue job would run a second time beside its first run.
Plan Ladder::OwnerMissingAtStart() const {
  Plan plan;
  plan.step = "owner-lost";
  if (ConditionReason(job_.conditions_json, "OwnerUnreachable") != "OwnerHeld") {
    const std::string msg =
        fmt::format("owner cluster {} is not in the inventory gantry started with (its file missing?); the job is "
                    "left as it is there until the cluster is back, or a reload of the inventory (SIGHUP, or POST "
                    "/api/v1/clusters:reload) confirms its removal, and its onClusterLoss applies",
                    job_.cluster);
    plan.write = OwnerFlag("OwnerHeld", msg);
    plan.write->events.push_back(Event("OwnerHeld", msg, job_.cluster, "Warning"));
  }
  // A reload wakes every unfinished job: this is only a backstop.
  plan.requeue_ms = opt_.lost_recheck_ms;
  return plan;
}

// Steps 10-13: Admitted or Running with owner C at epoch E.
Plan Ladder::Owned() const {
  const std::string& owner = job_.cluster;
  // Step 10.
  if (MissingAtStart(owner)) return OwnerMissingAtStart();
  const bool removed = Removed(owner);
  if (removed || !Reachable(owner)) return OwnerUnreachable(removed);
  Plan plan;
  // A finished copy the owner deleted since still tells how the job ended
  // (step 12); otherwise it would read as vanished (WorkloadGone).
  const ObservedWorkload* w = WorkloadOrLastIn(owner);
  const ObservedJob* j = JobIn(owner);
  const bool job_done = Ended(j);
  // Step 11. An at-most-once job (onClusterLoss Fail or Wait; its real job
  // carries gantry.dev/at-most-once) is never dispatched again once leased:
  // its job may have started at any moment since, and nothing a worker shows
  // after an eviction proves that it did not. It fails instead.
  if (!job_done) {
    const bool at_most_once = AtMostOnce(*in_.spec);
    std::string reason, message;
    if (w && !w->deactivated_for.empty() && (w->evicted || !w->active)) {
      // Kueue stopped the run for good: it ran past its maximum execution
      // time, or past waitForPodsReady's requeuing limit. Not dispatched
      // again, whatever onClusterLoss says: a fresh copy elsewhere would
      // get a fresh budget, run, and be stopped again, without end.
      return Finish("evicted", JobPhase::kFailed, w->deactivated_for,
                    fmt::format("{}'s Kueue deactivated the job's Workload for good ({}: {}); not dispatched again",
                                owner, w->reason, w->message));
    }
    if (w && !w->active && !at_most_once && job_.phase == JobPhase::kAdmitted) {
      // Deactivated before it ran: an admission check Rejected the owner's
      // copy after a lease at QuotaReserved. Requeued once the epoch is as
      // old as step 8 asks, so that a check that rejects the job every time
      // does not make a new epoch, with copies and a real job, every few
      // seconds. A Running job (its checks had passed) is requeued at once:
      // it does not loop, and it should not show Running meanwhile.
      const int64_t due = job_.nominated_ms + RejectionFloorMs();
      if (in_.now_ms < due) {
        plan.step = "evicted";
        plan.requeue_ms = due - in_.now_ms;
        return plan;
      }
    }
    if (w && w->finished && j && j->state == RemoteJobState::kSuspended &&
        (w->reason == "Succeeded" || w->reason == "Failed")) {
      // Finished for the job's own end: the job ran, and the view of it is
      // behind its Workload's (two lists after a start, two watches). The
      // Workload tells how it ended.
      return FinishAsWorkloadTells("finish", *w);
    }
    if (w && w->finished && j && j->state == RemoteJobState::kSuspended) {
      // Kueue finished the Workload before the job started, and will never
      // start it: the job does not match its Workload (OutOfSync), or its
      // start failed for good (FailedToStart). Not dispatched again: the
      // next run would most likely meet the same.
      return Finish("finish", JobPhase::kFailed, "NotStarted",
                    fmt::format("{}'s Kueue finished the job's Workload before the job started ({}: {})", owner,
                                w->reason, w->message));
    }
    if (w && (w->evicted || !w->active)) {  // Kueue evicts a deactivated copy in a write of its own
      reason = "Evicted";
      // Deactivated (spec.active false, by an operator there, say) and not
      // evicted yet: its conditions still tell of its quota, not of this.
      message = w->evicted ? fmt::format("{} evicted the job's Workload ({}: {})", owner, w->reason, w->message)
                           : fmt::format("{} deactivated the job's Workload (spec.active: false)", owner);
    } else if (!w && (!j || j->state == RemoteJobState::kSuspended)) {
      // Gone with its job, or without it: Kueue holds a job whose prebuilt
      // Workload is gone suspended (stopping it if it ran) for good.
      reason = "WorkloadGone";
      message = j ? fmt::format("the admitted Workload vanished from {}, where its job waits suspended", owner)
                  : fmt::format("the admitted Workload vanished from {}", owner);
    } else if (w && j && at_most_once && EvictedSinceCreated(*w, *j)) {
      // Evicted and admitted again since its job was created, unseen (the
      // daemon down, the cluster cut off, or both events read together):
      // the worker's Kueue stopped the job and started it over in place.
      reason = "Evicted";
      message = fmt::format("{} evicted the job's Workload after its job was created, and admitted it again: "
                            "the job started over there",
                            owner);
    } else if (w && !j && !w->finished && at_most_once && job_.phase == JobPhase::kRunning) {
      // Seen running, and now gone (deleted in the cluster, with its pods or
      // orphaning them): creating it again would run an at-most-once job a
      // second time. (A Requeue job's is created again below, as a rerun.
      // One that finished, its Workload saying so, is told at step 12.)
      reason = "JobGone";
      message = fmt::format("the running job vanished from {}", owner);
    }
    if (!reason.empty()) {
      if (!at_most_once) return Requeue("evicted", reason, message);
      return Finish("evicted", JobPhase::kFailed, reason,
                    fmt::format("{}; onClusterLoss is {}: an at-most-once job is not dispatched again once leased",
                                message, OnClusterLossName(in_.spec->on_cluster_loss)));
    }
  }
  // Step 12.
  if (job_done) return FinishAsEnded("finish", *j);
  if (WorkloadTells(j, w)) return FinishAsWorkloadTells("finish", *w);
  // Step 13.
  plan.step = "run";
  if (!j && DeclaredLost(owner) && !Expected(owner, kJob)) {
    // Leased before its owner was declared lost, and no real job there yet:
    // none is created in a cluster trusted with nothing new. (A create an
    // earlier pass sent may still land: what it makes there is fenced.)
    std::string why = fmt::format("owner cluster {} was declared lost by an operator before the job was created there",
                                  owner);
    if (!AtMostOnce(*in_.spec)) return Requeue("run", "ClusterLost", why);
    return Finish("run", JobPhase::kFailed, "ClusterLost",
                  fmt::format("{}; onClusterLoss is {}: an at-most-once job is not dispatched again once leased", why,
                              OnClusterLossName(in_.spec->on_cluster_loss)));
  }
  if (!j && AtMostOnce(*in_.spec) && !Expected(owner, kJob)) {
    if (const int64_t created = JobCreatedMs(owner); created > 0) return CreatedAndGone(owner, created);
  }
  if (!j) {
    if (std::optional<Plan> lost = CreateKeepsFailing(owner, plan)) return std::move(*lost);
  }
  if (!j && !Expected(owner, kJob)) {
    if (const std::optional<EarlierRun> earlier = EarlierRunGate(owner, job_.lease_ms)) {
      if (job_.message != earlier->message) {
        if (!plan.write) plan.write = Guarded(job_);  // (may carry CreateKeepsFailing's flag)
        plan.write->message = earlier->message;
        plan.write->events.push_back(earlier->event);
      }
      if (earlier->wait_ms > 0) {
        plan.requeue_ms = earlier->wait_ms;
        return plan;
      }
    }
  }
  if (!j) {
    if (Expected(owner, kJob)) {
      // Created a moment ago and not seen yet: its echo fulfils the
      // expectation and its next change (it starts running) wakes the job.
      // Should it vanish unseen, it is created again once the expectation
      // lapses: look again soon, not at the resync.
      plan.requeue_ms = opt_.retry_ms;
      return plan;
    }
    plan.actions.push_back(CreateJobAction(in_, owner, job_.epoch));
    plan.requeue_ms = opt_.retry_ms;
    if (job_.message.starts_with(WaitingPrefix(owner))) {
      // The gate opened: the job no longer waits for its earlier run.
      if (!plan.write) plan.write = Guarded(job_);
      if (!plan.write->message) plan.write->message = fmt::format("admitted by {} at epoch {}", owner, job_.epoch);
    }
    return plan;
  }
  if (j->state == RemoteJobState::kRunning && job_.phase == JobPhase::kAdmitted) {
    DispatchUpdate u = Guarded(job_);
    u.phase = JobPhase::kRunning;
    u.message = fmt::format("running in {}", owner);
    u.remote_status = j->summary;
    u.events.push_back(Event("Started", fmt::format("the job runs in {} at epoch {}", owner, job_.epoch), owner));
    plan.write = std::move(u);
  } else if (j->summary != job_.remote_status) {
    DispatchUpdate u = Guarded(job_);
    u.remote_status = j->summary;
    plan.write = std::move(u);
  }
  // An at-most-once job's real job, seen, whose create is not on record
  // (the write after its 201 failed, or the daemon stopped before it; or
  // created by a release that did not record it): its being there proves
  // the create, so that a later vanishing is never answered by another.
  if (const RemoteIntent* row = JobRow(owner);
      row && row->created_ms == 0 && AtMostOnce(*in_.spec)) {
    if (!plan.write) plan.write = Guarded(job_);
    RemoteIntent confirmed = *row;
    confirmed.created_ms = in_.now_ms;
    plan.write->upsert_intents.push_back(std::move(confirmed));
  }
  // Running or about to: its start, finish, eviction and status come as
  // watch events, its owner's loss from the health watch.
  plan.requeue_ms = opt_.backstop_ms;
  plan.backstop = true;
  if (j->state == RemoteJobState::kSuspended && job_.phase == JobPhase::kAdmitted && w && w->admitted) {
    // The admission and the creation are times of the cluster's clock, put
    // on gantry's by its measured offset: a clock hours ahead would hold
    // the warning back for hours.
    const int64_t offset = ClockOffsetOf(owner).value_or(0);
    NotStarted(owner, std::max({job_.lease_ms, w->admitted_ms - offset, j->created_ms - offset}), plan);
  }
  return plan;
}

// Step 13, a real job its cluster keeps suspended although its copy there
// is admitted (DecideOptions::not_started_warn_ms, counted from since, the
// latest of the lease, the admission and the job's creation): the message
// and an event say so, once, and the job waits on.
void Ladder::NotStarted(const std::string& owner, int64_t since, Plan& plan) const {
  if (job_.lease_ms <= 0) return;  // no lease time on record: nothing to count from
  const int64_t due = since + opt_.not_started_warn_ms;
  if (in_.now_ms < due) {
    if (due - in_.now_ms < plan.requeue_ms) {
      plan.requeue_ms = due - in_.now_ms;
      plan.backstop = false;
    }
    return;
  }
  const std::string kind = in_.spec->template_object.value("kind", "");
  const std::string said = fmt::format("{} admitted the job's Workload, but keeps its {} suspended", owner, kind);
  if (job_.message.starts_with(said)) return;  // said already
  const std::string message = fmt::format(
      "{} {} s after its admission: is Kueue's integration for {} enabled there, and does its webhook take gantry's "
      "prebuilt Workload?",
      said, (in_.now_ms - since) / 1000, kind);
  if (!plan.write) plan.write = Guarded(job_);
  plan.write->message = message;
  plan.write->events.push_back(Event("NotStarted", message, owner, "Warning"));
}

// Step 13, an at-most-once job whose real job its owner confirmed created
// at this epoch (RemoteIntent::created_ms) and which the owner's view does
// not show: it was deleted there before gantry saw it run (while the daemon
// was down, say), and may have started. Never created again; it fails as
// JobGone once the owner's view confirms the absence, and not before
// notFoundConfirmsAfter from the create: by then a watch that missed the
// job's appearing has been found dead and listed again.
Plan Ladder::CreatedAndGone(const std::string& owner, int64_t created_ms) const {
  Plan plan;
  plan.step = "run";
  if (in_.resource.empty()) {
    // The kind is not watched (genericKinds): the job is never seen, gone
    // or not. Left as it is.
    plan.requeue_ms = opt_.backstop_ms;
    plan.backstop = true;
    return plan;
  }
  // Not before a stalled watch stream would have been found dead: its view
  // counts as current until then, and would not show the job.
  const int64_t due = created_ms + opt_.AbsenceConfirmedAfterMs();
  if (!ConfirmsAbsence(owner) || in_.now_ms < due) {
    plan.requeue_ms = std::max(opt_.retry_ms, due - in_.now_ms);
    return plan;
  }
  return Finish("run", JobPhase::kFailed, "JobGone",
                fmt::format("the job created in {} at epoch {} vanished from there before it was seen running, and "
                            "may have started; onClusterLoss is {}: an at-most-once job is not dispatched again once "
                            "leased",
                            owner, job_.epoch, OnClusterLossName(in_.spec->on_cluster_loss)));
}

// A job moved on (evicted, or its owner out of reach or refusing) whose
// earlier run may still go on in a cluster that answers: its delete went out
// (fencing, Sweep) and is not confirmed yet, for instance while that cluster
// answers it 429 or 503. Started now, the job would run in two clusters at
// once. It starts once that run is seen gone, or once the wait has lasted
// clusterLostTimeout from the lease: that cluster has then kept gantry from
// stopping it as long as a lost owner would have. Unless that run's object
// is in the owner itself: it holds the name the real job is created under
// (the same at every epoch), so a create could not succeed; the job waits
// on, and says so once.
std::optional<Ladder::EarlierRun> Ladder::EarlierRunGate(const std::string& owner, int64_t lease_ms) const {
  const bool name_held = OlderJobSeenIn(owner);
  const std::string older = name_held ? owner : OlderRunIn();
  if (older.empty()) return std::nullopt;
  const int64_t waited = lease_ms > 0 ? in_.now_ms - lease_ms : 0;
  EarlierRun out;
  if (waited < opt_.cluster_lost_timeout_ms) {
    out.wait_ms = std::min(opt_.retry_ms, opt_.cluster_lost_timeout_ms - waited);
    out.message = fmt::format("{}{} is seen deleted", WaitingPrefix(owner), older);
    out.event = Event("WaitingForEarlierRun", out.message, older);
  } else if (name_held) {
    out.wait_ms = opt_.retry_ms;
    out.message = fmt::format(
        "{}{} is seen deleted: its object there is not gone {} s after the lease (clusterLostTimeout) and holds "
        "the name the job runs under",
        WaitingPrefix(owner), owner, opt_.cluster_lost_timeout_ms / 1000);
    out.event = Event("EarlierRunNotSeenDeleted", out.message, owner, "Warning");
  } else {
    // Not the time waited: the message (and its event) is written once.
    out.message = fmt::format(
        "starting in {} at epoch {} although its earlier run in {} is not seen deleted {} s after the lease "
        "(clusterLostTimeout)",
        owner, job_.epoch, older, opt_.cluster_lost_timeout_ms / 1000);
    out.event = Event("EarlierRunNotSeenDeleted", out.message, older, "Warning");
  }
  return out;
}

std::string Ladder::WaitingPrefix(const std::string& owner) const {
  return fmt::format("admitted by {} at epoch {}; starts there once its earlier run in ", owner, job_.epoch);
}

std::string Ladder::OlderRunIn() const {
  // Seen: fencing deletes it in this pass.
  for (const auto& [cluster, o] : in_.observed) {
    if (Reachable(cluster) && OlderJobSeenIn(cluster)) return cluster;
  }
  // Withdrawn and not confirmed gone: its cluster's view shows it (above),
  // is behind, is not synced yet (after a restart), or is refused and the
  // object is deleted by name (Sweep); or the cluster is out of reach for a
  // moment (a probe failed). Not waited for in a cluster removed, or lost
  // (out of reach as long as step 10 asks of an owner): nothing can stop
  // the run there, as for the lost owner a Requeue job moves away from.
  std::vector<std::pair<std::string, std::string>> gone;
  bool gone_read = false;
  for (const RemoteIntent& i : in_.intents) {
    if (i.kind == kWorkload || i.present || i.epoch >= job_.epoch || !i.refusal.empty()) continue;
    if (MissingAtStart(i.cluster)) return i.cluster;  // it may still run there: as out of reach
    auto facts = in_.clusters->find(i.cluster);
    if (facts == in_.clusters->end()) continue;
    const ClusterFacts& f = facts->second;
    if (!f.ready && f.lost_for_ms >= LostAfterMs(f, f.credentials_refused)) continue;
    if (!gone_read) {
      gone = ConfirmedGone();
      gone_read = true;
    }
    if (std::find(gone.begin(), gone.end(), std::make_pair(i.cluster, i.kind)) == gone.end()) return i.cluster;
  }
  return "";
}

// Step 10's flags (condition OwnerUnreachable, reason OwnerLost or
// CredentialsRefused) are lifted once the owner answers again, whichever
// step decided meanwhile: the job runs on there, or has finished or been
// evicted while out of reach.
void Ladder::OwnerReturned(Plan& plan) const {
  const std::string& owner = job_.cluster;
  const std::string flag = ConditionReason(job_.conditions_json, "OwnerUnreachable");
  if (!Reachable(owner) || flag.empty()) return;
  // Reachable, and still failing the job's create (CreateKeepsFailing).
  if (flag == "OwnerLost" && in_.job_create_failing_ms > 0 && !JobIn(owner)) return;
  const bool create_flagged = flag == "OwnerLost" && job_.message.find(kCreateFailsText) != std::string::npos;
  if (!plan.write) plan.write = Guarded(job_);
  DispatchUpdate& u = *plan.write;
  if (!u.conditions_json) u.conditions_json = "[]";
  if (!u.message) {
    u.message = job_.phase == JobPhase::kRunning ? fmt::format("running in {}", owner)
                                                 : fmt::format("admitted by {} at epoch {}", owner, job_.epoch);
  }
  u.events.insert(u.events.begin(),
                  Event("ClusterReturned",
                        create_flagged ? fmt::format("owner cluster {} no longer fails the job's create", owner)
                                       : fmt::format("owner cluster {} answers again", owner),
                        owner));
}

}  // namespace gantry::dispatch::ladder
