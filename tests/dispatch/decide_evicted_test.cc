// Decide() for an owned job whose Workload the owner's Kueue evicted and
// admitted again before gantry saw it evicted (Evicted back to False,
// reason QuotaReserved): the job started over in place, which an
// at-most-once job must not do.
#include <catch2/catch.hpp>

#include "decide_world.h"

namespace gantry::dispatch {
using namespace decide_world;

namespace {

constexpr int64_t kCreated = 1'700'000'000'000;  // the real job's creationTimestamp

// A Running job of policy at epoch 2 in c1: its Workload admitted, its
// Evicted condition last changed at evicted_changed_ms (0: never).
World RunningIn(const std::string& policy, int64_t evicted_changed_ms) {
  World w;
  w.spec = Spec(policy);
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  ObservedWorkload& wl = w.Workload("c1", 2);
  wl.quota_reserved = wl.admitted = true;
  wl.evicted_changed_ms = evicted_changed_ms;
  w.RemoteJob("c1", 2, RemoteJobState::kRunning).created_ms = kCreated;
  return w;
}

}  // namespace

TEST_CASE("an at-most-once job evicted and admitted again in place since its job was created fails",
          "[dispatch][decide][evicted]") {
  for (const char* policy : {"Fail", "Wait"}) {
    for (int64_t changed : {kCreated, kCreated + 60'000}) {
      INFO(policy << ", Evicted changed " << (changed - kCreated) / 1000 << " s after the job's creation");
      World w = RunningIn(policy, changed);
      Plan p = Decide(w.Input());
      REQUIRE(p.write);
      REQUIRE(p.write->phase);
      CHECK(*p.write->phase == JobPhase::kFailed);
      REQUIRE_FALSE(p.write->events.empty());
      CHECK(p.write->events.front().reason == "Evicted");
      CHECK_THAT(*p.write->message, Catch::Contains("admitted it again"));
      CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);  // the run started over is stopped
    }
  }
}

TEST_CASE("an eviction before the job was created, or a Requeue job's, leaves the run alone",
          "[dispatch][decide][evicted]") {
  // Evicted and admitted again while only a copy (before the lease): the
  // job was created after, nothing ran twice.
  for (int64_t changed : {int64_t{0}, kCreated - 1'000}) {
    World w = RunningIn("Fail", changed);
    Plan p = Decide(w.Input());
    CHECK((!p.write || !p.write->phase));
    CHECK(Count(p, Verb::kDelete, "Job") == 0);
  }
  // A Requeue job may run again: Kueue's rerun in place stands.
  World w = RunningIn("Requeue", kCreated + 60'000);
  Plan p = Decide(w.Input());
  CHECK((!p.write || !p.write->phase));
  CHECK(Count(p, Verb::kDelete, "Job") == 0);
}

TEST_CASE("a Workload deactivated in its cluster and not evicted yet is told as deactivated, not by its quota",
          "[dispatch][decide][evicted]") {
  World w = RunningIn("Requeue", 0);
  ObservedWorkload& wl = w.in.observed["c1"].workloads[0];
  wl.active = false;
  wl.reason = "QuotaReserved";
  wl.message = "Quota reserved in ClusterQueue cluster-queue";
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->message);
  CHECK_THAT(*p.write->message, Catch::Contains("c1 deactivated the job's Workload (spec.active: false)"));
  CHECK_THAT(*p.write->message, !Catch::Contains("Quota reserved"));
}

TEST_CASE("a job whose Workload Kueue deactivated for good fails, whatever onClusterLoss says",
          "[dispatch][decide][evicted]") {
  for (const char* cause : {"MaximumExecutionTimeExceeded", "RequeuingLimitExceeded"}) {
    for (const char* policy : {"Requeue", "Fail"}) {
      INFO(cause << ", " << policy);
      World w = RunningIn(policy, 0);
      ObservedWorkload& wl = w.in.observed["c1"].workloads.front();  // RunningIn's
      wl.active = false;
      wl.evicted = true;
      wl.deactivated_for = cause;
      wl.reason = std::string("DeactivatedDueTo") + cause;
      Plan p = Decide(w.Input());
      INFO("step " << p.step);
      REQUIRE(p.write);
      REQUIRE(p.write->phase);
      CHECK(*p.write->phase == JobPhase::kFailed);  // not Queued at epoch 3 for another cluster
      CHECK_FALSE(p.write->epoch);
      REQUIRE_FALSE(p.write->events.empty());
      CHECK(p.write->events.front().reason == cause);
      CHECK_THAT(*p.write->message, Catch::Contains("for good"));
    }
  }
  // Any other eviction of a Requeue job's Workload requeues it.
  World w = RunningIn("Requeue", 0);
  ObservedWorkload& wl = w.in.observed["c1"].workloads.front();  // RunningIn's
  wl.evicted = true;
  wl.reason = "Preempted";
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kQueued);
}

TEST_CASE("a real job its cluster keeps suspended under an admitted copy is told, once, and waits on",
          "[dispatch][decide][evicted]") {
  auto world = [](int64_t leased_ago_ms, bool admitted) {
    World w;
    w.spec = Spec("Requeue");
    w.OwnedBy(JobPhase::kAdmitted, "c1", 2);
    w.job.lease_ms = w.in.now_ms - leased_ago_ms;
    w.job.message = "admitted by c1 at epoch 2";
    ObservedWorkload& wl = w.Workload("c1", 2);
    wl.quota_reserved = true;
    wl.admitted = admitted;
    w.RemoteJob("c1", 2, RemoteJobState::kSuspended);
    return w;
  };
  {  // a minute after the lease: the backstop, nothing written
    World w = world(60'000, true);
    Plan p = Decide(w.Input());
    CHECK_FALSE(p.write);
    CHECK(p.requeue_ms == w.in.options.backstop_ms);
  }
  {  // ten seconds before the warning: a timer for it
    World w = world(290'000, true);
    Plan p = Decide(w.Input());
    CHECK_FALSE(p.write);
    CHECK(p.requeue_ms == 10'000);
    CHECK_FALSE(p.backstop);
  }
  {  // six minutes: said, and the job waits on
    World w = world(360'000, true);
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    CHECK_FALSE(p.write->phase);
    REQUIRE(p.write->message);
    CHECK_THAT(*p.write->message, Catch::Contains("keeps its Job suspended 360 s after its admission"));
    REQUIRE(p.write->events.size() == 1);
    CHECK(p.write->events.front().reason == "NotStarted");
    CHECK(p.actions.empty());
    // Once said, not again.
    w.job.message = *p.write->message;
    Plan again = Decide(w.Input());
    CHECK_FALSE(again.write);
  }
  {  // quota reserved, its admission checks still at work: nothing to tell
    World w = world(360'000, false);
    CHECK_FALSE(Decide(w.Input()).write);
  }
  {  // leased at QuotaReserved ten minutes ago, admitted a second ago (a slow
     // check): counted from the admission
    World w = world(600'000, true);
    w.in.observed["c1"].workloads.front().admitted_ms = w.in.now_ms - 1'000;
    Plan p = Decide(w.Input());
    CHECK_FALSE(p.write);
    CHECK(p.requeue_ms == w.in.options.backstop_ms);
  }
  {  // its real job created a minute ago (held back by an earlier run): from then
    World w = world(600'000, true);
    w.in.observed["c1"].jobs.front().created_ms = w.in.now_ms - 290'000;
    Plan p = Decide(w.Input());
    CHECK_FALSE(p.write);
    CHECK(p.requeue_ms == 10'000);
  }
  {  // admitted six minutes ago by a cluster whose clock is an hour ahead:
     // its times read on gantry's clock, the warning is due now, not in an hour
    World w = world(600'000, true);
    w.clusters["c1"].clock_offset_ms = 3'600'000;
    w.in.observed["c1"].workloads.front().admitted_ms = w.in.now_ms - 360'000 + 3'600'000;
    w.in.observed["c1"].jobs.front().created_ms = w.in.now_ms - 370'000 + 3'600'000;
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    REQUIRE(p.write->message);
    CHECK_THAT(*p.write->message, Catch::Contains("keeps its Job suspended 360 s after its admission"));
  }
}

TEST_CASE("a job that finished unseen and whose job was deleted is told from its Workload, not as JobGone",
          "[dispatch][decide][evicted]") {
  World w;
  w.spec = Spec("Fail");
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  ObservedWorkload& wl = w.Workload("c1", 2);
  wl.quota_reserved = wl.admitted = wl.finished = true;
  wl.reason = "Succeeded";
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kSucceeded);
}

TEST_CASE("a job whose finished Workload and job the owner deleted before a pass read them keeps its result",
          "[dispatch][decide][evicted]") {
  // Kueue's objectRetentionPolicies, or a kind's own ttlSecondsAfterFinished,
  // deleted both: the Workload's DELETED event showed it finished.
  for (const char* policy : {"Requeue", "Fail"}) {
    INFO(policy);
    World w;
    w.spec = Spec(policy);
    w.OwnedBy(JobPhase::kRunning, "c1", 2);
    w.in.resource = "jobs.batch";
    ObservedWorkload last;
    last.job_uid = w.job.uid;
    last.epoch = 2;
    last.quota_reserved = last.admitted = last.finished = true;
    last.reason = "Failed";
    last.message = "Job failed: BackoffLimitExceeded";
    w.in.finished_gone["c1"] = {last};
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == JobPhase::kFailed);
    CHECK_FALSE(p.write->epoch);  // not dispatched again
    CHECK_THAT(*p.write->message, Catch::Contains("BackoffLimitExceeded"));
    CHECK(p.write->events.back().reason == "Failed");

    // One of an earlier epoch tells nothing of this run: gone, as before.
    w.in.finished_gone["c1"].front().epoch = 1;
    Plan gone = Decide(w.Input());
    REQUIRE(gone.write);
    REQUIRE(gone.write->phase);
    CHECK(*gone.write->phase == (policy == std::string("Requeue") ? JobPhase::kQueued : JobPhase::kFailed));
    CHECK(gone.write->events.back().reason == "WorkloadGone");
  }
}

// An Admitted job at epoch 2 in c1 whose create there c1 confirmed at
// created_ms (the row's created_ms), its Workload admitted and its real
// job not in the view: deleted there before gantry saw it run.
World CreatedNotSeen(const std::string& policy, int64_t created_ms) {
  World w;
  w.spec = Spec(policy);
  w.OwnedBy(JobPhase::kAdmitted, "c1", 2);
  for (RemoteIntent& i : w.in.intents) {
    if (i.kind == "Job") i.created_ms = created_ms;
  }
  ObservedWorkload& wl = w.Workload("c1", 2);
  wl.quota_reserved = wl.admitted = true;
  w.in.resource = "jobs.batch";
  return w;
}

TEST_CASE("an at-most-once job created in its owner and gone unseen fails as JobGone, never created again",
          "[dispatch][decide][evicted]") {
  for (const char* policy : {"Fail", "Wait"}) {
    INFO(policy);
    World w = CreatedNotSeen(policy, 0);
    const int64_t confirm = w.in.options.not_found_confirms_after_ms;
    w = CreatedNotSeen(policy, w.in.now_ms - confirm);
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kCreate, "Job") == 0);
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == JobPhase::kFailed);
    REQUIRE_FALSE(p.write->events.empty());
    CHECK(p.write->events.front().reason == "JobGone");
    CHECK_THAT(*p.write->message, Catch::Contains("before it was seen running"));
    CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);  // its quota there is given back
  }
}

TEST_CASE("an at-most-once job's confirmed create gone unseen waits at least as long as a silent watch takes to be found dead",
          "[dispatch][decide][evicted]") {
  World probe = CreatedNotSeen("Fail", 0);
  const int64_t now = probe.in.now_ms;
  // notFoundConfirmsAfterSeconds set shorter than a silent watch's 40 s:
  // a view fed by a stalled stream counts as current, and shows no job.
  World w = CreatedNotSeen("Fail", now - 15'000);
  w.in.options.not_found_confirms_after_ms = 10'000;
  w.in.options.silent_watch_found_ms = 40'000;
  Plan p = Decide(w.Input());
  CHECK((!p.write || !p.write->phase));
  CHECK(p.requeue_ms == 25'000);
  w = CreatedNotSeen("Fail", now - 40'000);
  w.in.options.not_found_confirms_after_ms = 10'000;
  w.in.options.silent_watch_found_ms = 40'000;
  p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kFailed);
}

TEST_CASE("an at-most-once job's confirmed create waits for a view that can confirm it gone",
          "[dispatch][decide][evicted]") {
  World probe = CreatedNotSeen("Fail", 0);
  const int64_t now = probe.in.now_ms;
  const int64_t confirm = probe.in.options.not_found_confirms_after_ms;
  SECTION("created a moment ago: a watch may not have shown it yet") {
    World w = CreatedNotSeen("Fail", now - 5'000);
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kCreate, "Job") == 0);
    CHECK((!p.write || !p.write->phase));
    CHECK(p.requeue_ms == confirm - 5'000);  // looked at again when the absence confirms it gone
  }
  SECTION("long ago, but the owner's view is behind") {
    World w = CreatedNotSeen("Wait", now - 2 * confirm);
    w.behind.insert("c1");
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kCreate, "Job") == 0);
    CHECK((!p.write || !p.write->phase));
  }
  SECTION("long ago, of a kind gantry does not watch: never seen, so never judged gone, nor created again") {
    World w = CreatedNotSeen("Fail", now - 2 * confirm);
    w.in.resource.clear();
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kCreate, "Job") == 0);
    CHECK((!p.write || !p.write->phase));
  }
}

TEST_CASE("a real job whose create was never confirmed, or a Requeue job's, is created again when missing",
          "[dispatch][decide][evicted]") {
  World probe = CreatedNotSeen("Fail", 0);
  const int64_t long_ago = probe.in.now_ms - 2 * probe.in.options.not_found_confirms_after_ms;
  // No confirmation: the create may never have been sent (a crash between
  // the row's write and the call).
  World unconfirmed = CreatedNotSeen("Fail", 0);
  CHECK(Count(Decide(unconfirmed.Input()), Verb::kCreate, "Job", "c1") == 1);
  // A Requeue job may run again: its job is created again.
  World requeue = CreatedNotSeen("Requeue", long_ago);
  CHECK(Count(Decide(requeue.Input()), Verb::kCreate, "Job", "c1") == 1);
}

TEST_CASE("an at-most-once job's real job seen in its owner with its create not on record has it recorded",
          "[dispatch][decide][evicted]") {
  for (JobPhase phase : {JobPhase::kAdmitted, JobPhase::kRunning}) {
    World w;
    w.spec = Spec("Wait");
    w.OwnedBy(phase, "c1", 2);
    ObservedWorkload& wl = w.Workload("c1", 2);
    wl.quota_reserved = wl.admitted = true;
    w.RemoteJob("c1", 2, RemoteJobState::kRunning);
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    const RemoteIntent* row = FindIntent(*p.write, "c1", "Job");
    REQUIRE(row);
    CHECK(row->epoch == 2);
    CHECK(row->present);
    CHECK(row->created_ms == w.in.now_ms);
    CHECK(Count(p, Verb::kCreate, "Job") == 0);

    // Once recorded, nothing more is written for it; nor for a Requeue job.
    for (RemoteIntent& i : w.in.intents) {
      if (i.kind == "Job") i.created_ms = w.in.now_ms - 1'000;
    }
    w.job.phase = JobPhase::kRunning;
    Plan again = Decide(w.Input());
    CHECK((!again.write || !FindIntent(*again.write, "c1", "Job")));
  }
  World requeue;
  requeue.spec = Spec("Requeue");
  requeue.OwnedBy(JobPhase::kRunning, "c1", 2);
  ObservedWorkload& wl = requeue.Workload("c1", 2);
  wl.quota_reserved = wl.admitted = true;
  requeue.RemoteJob("c1", 2, RemoteJobState::kRunning);
  Plan p = Decide(requeue.Input());
  CHECK((!p.write || !FindIntent(*p.write, "c1", "Job")));
}

}  // namespace gantry::dispatch
