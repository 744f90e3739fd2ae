// Decide() with clusters an operator declared lost (declaredLost in the
// inventory entry), and with copies in clusters removed from the inventory:
// nothing new goes there, no copy there takes a lease, an owner that stops
// answering does not wait out the loss timeout, and nothing waits for such
// a cluster to confirm a deletion.
#include <catch2/catch.hpp>

#include "decide_world.h"
#include "gantry/dispatch/job_intake.h"

namespace gantry::dispatch {
using namespace decide_world;

namespace {

void DeclareLost(World& w, const std::string& cluster, bool answers) {
  ClusterFacts& f = w.clusters[cluster];
  f.config.declared_lost = true;
  f.ready = answers;
  if (!answers) w.synced.erase(cluster);
}

}  // namespace

TEST_CASE("declared lost, step 10: an owner out of reach gets onClusterLoss after the short grace, not the timeout",
          "[dispatch][decide][lost]") {
  for (const char* policy : {"Requeue", "Fail", "Wait"}) {
    for (bool refused : {false, true}) {
      INFO(policy << (refused ? ", refusing the credentials" : ", silent"));
      World w;
      w.spec = Spec(policy);
      w.in.options.cluster_lost_timeout_ms = 15 * 60'000;
      w.in.options.declared_lost_grace_ms = 5'000;
      w.OwnedBy(JobPhase::kRunning, "c1", 1);
      DeclareLost(w, "c1", false);
      w.clusters["c1"].credentials_refused = refused;
      // Not seen failing yet (not probed since a restart, or only not
      // synced): waited for, at the usual pace.
      w.clusters["c1"].lost_for_ms = 0;
      Plan before = Decide(w.Input());
      CHECK(before.step == "owner-lost");
      CHECK((!before.write || !before.write->phase));  // a refusal is flagged on the job, nothing moves
      CHECK(before.requeue_ms == w.in.options.retry_ms);
      // Within the grace (one failed probe of a cluster being drained): waited for.
      w.clusters["c1"].lost_for_ms = 4'000;
      Plan within = Decide(w.Input());
      CHECK((!within.write || !within.write->phase));
      CHECK(within.requeue_ms == 1'000);

      w.clusters["c1"].lost_for_ms = 5'000;  // far below clusterLostTimeout
      Plan after = Decide(w.Input());
      CHECK(after.step == "owner-lost");
      REQUIRE(after.write);
      CHECK(after.actions.empty());  // nothing can reach it
      CHECK_THAT(*after.write->message, Catch::Contains("declared lost by an operator"));
      if (std::string(policy) == "Requeue") {
        CHECK(*after.write->phase == JobPhase::kQueued);
        CHECK(*after.write->cluster == "");
        REQUIRE(FindIntent(*after.write, "c1", "Job"));
        CHECK_FALSE(FindIntent(*after.write, "c1", "Job")->present);  // kept absent: fenced if it answers again
      } else if (std::string(policy) == "Fail") {
        CHECK(*after.write->phase == JobPhase::kFailed);
      } else {
        CHECK_FALSE(after.write->phase);
        CHECK_THAT(*after.write->conditions_json, Catch::Contains("OwnerLost"));
        // It may never return: not polled, the health watch wakes the job.
        CHECK(after.requeue_ms == w.in.options.lost_recheck_ms);
      }
    }
  }
}

TEST_CASE("declared lost, step 10: the grace is never longer than the owner's own timeout", "[dispatch][decide][lost]") {
  World w;
  w.in.options.cluster_lost_timeout_ms = 3'000;
  w.in.options.declared_lost_grace_ms = 60'000;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  DeclareLost(w, "c1", false);
  w.clusters["c1"].lost_for_ms = 3'000;
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  CHECK(*p.write->phase == JobPhase::kQueued);
}

TEST_CASE("declared lost, step 13: a job leased there and not created yet is not created, but moved or failed",
          "[dispatch][decide][lost]") {
  for (const char* policy : {"Requeue", "Fail"}) {
    INFO(policy);
    World w;
    w.spec = Spec(policy);
    w.OwnedBy(JobPhase::kAdmitted, "c1", 1);
    DeclareLost(w, "c1", true);
    w.Workload("c1", 1).admitted = true;
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kCreate, "Job") == 0);
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == (std::string(policy) == "Requeue" ? JobPhase::kQueued : JobPhase::kFailed));
    CHECK_THAT(*p.write->message, Catch::Contains("declared lost"));

    // Created a moment ago and not seen yet: waited for, it runs there.
    w.in.expected.insert({"c1", "Job"});
    Plan q = Decide(w.Input());
    CHECK_FALSE(q.write);
    CHECK(q.actions.empty());
  }
}

TEST_CASE("declared lost: an owner that still answers keeps its job, whose status goes on flowing",
          "[dispatch][decide][lost]") {
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c1", 1);
  DeclareLost(w, "c1", true);
  w.Workload("c1", 1).admitted = true;
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan p = Decide(w.Input());
  CHECK(p.step == "run");
  REQUIRE(p.write);
  CHECK(*p.write->phase == JobPhase::kRunning);
  CHECK(p.actions.empty());
}

TEST_CASE("declared lost: a copy admitted there takes no lease, and is withdrawn while the others stay",
          "[dispatch][decide][lost]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 1'000;
  w.Intent("c1", "Workload", 1);
  w.Intent("c2", "Workload", 1);
  w.Workload("c1", 1).admitted = true;
  w.Workload("c2", 1);
  DeclareLost(w, "c1", true);
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  REQUIRE(p.write);
  CHECK_FALSE(p.write->phase);  // still Nominating: no lease
  CHECK_FALSE(p.write->cluster);
  REQUIRE(FindIntent(*p.write, "c1", "Workload"));
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
  CHECK_FALSE(FindIntent(*p.write, "c2", "Workload"));  // untouched
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 0);
  CHECK(p.requeue_ms == w.in.options.retry_ms);  // the row is dropped once c1 shows the copy gone

  // The same copy admitted in c2 takes the lease at once.
  World v = w;
  v.in.observed["c2"].workloads.back().admitted = true;
  Plan q = Decide(v.Input());
  CHECK(q.step == "lease");
  REQUIRE(q.write);
  CHECK(*q.write->cluster == "c2");
}

TEST_CASE("declared lost or removed: a job whose every copy is in such a cluster is dispatched again at once",
          "[dispatch][decide][lost]") {
  for (bool removed : {false, true}) {
    INFO((removed ? "removed" : "declared lost"));
    World w;
    w.job.phase = JobPhase::kNominating;
    w.job.epoch = 1;
    w.Intent("c1", "Workload", 1);
    if (removed) {
      w.clusters.erase("c1");
      w.synced.erase("c1");
    } else {
      DeclareLost(w, "c1", false);
    }
    Plan p = Decide(w.Input());
    CHECK(p.step == "copies");
    REQUIRE(p.write);
    CHECK(*p.write->phase == JobPhase::kQueued);
    CHECK(p.requeue_ms == 0);
    CHECK_THAT(*p.write->message, Catch::Contains(removed ? "removed from the inventory" : "declared lost"));
  }
}

TEST_CASE("declared lost: Incremental does not count a copy there as live, and adds one in its place",
          "[dispatch][decide][lost]") {
  World w = IncrementalWithCopyInC1();
  DeclareLost(w, "c1", true);
  w.in.placement = Candidates({"c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "widen");
  CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);
  CHECK(Count(p, Verb::kCreate, "Workload", "c1") == 0);
  // Told as a replacement, not a round, and the message names where the
  // live copies are.
  REQUIRE(p.write);
  REQUIRE(p.write->events.size() == 1);
  CHECK_THAT(p.write->events[0].message, Catch::Contains("in place of copies in clusters that cannot take the job"));
  CHECK(p.write->message == std::optional<std::string>("nominated to c2"));
}

TEST_CASE("a copy in a cluster the job's constraints exclude now (its entry changed at a reload) takes no lease and "
          "is withdrawn, the job requeued when no other copy is left",
          "[dispatch][decide][cordon]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 60'000;
  w.Intent("c1", "Workload", 1);
  w.Intent("c2", "Workload", 1);
  w.Workload("c1", 1).admitted = true;  // admitted since the reload
  w.Workload("c2", 1);
  w.in.placement = Candidates({"c2"});
  placement::ExcludedCluster zone{"c1", {placement::Filter::kComplianceZone, "compliance zones [us] not in [eu]"}};
  w.in.placement->excluded.push_back(zone);
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  REQUIRE(p.write);
  CHECK_FALSE(p.write->phase);  // no lease in c1
  CHECK_FALSE(p.write->cluster);
  REQUIRE(FindIntent(*p.write, "c1", "Workload"));
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 0);
  REQUIRE_FALSE(p.write->events.empty());
  CHECK_THAT(p.write->events.front().message,
             Catch::Contains("c1 (no longer meets the job's constraints: ComplianceZone: compliance zones [us] not in "
                             "[eu])"));

  SECTION("a quota shortfall is no constraint: the copy waits") {
    w.in.placement->excluded.front().exclusion = {placement::Filter::kQuota, "needs 8 nvidia.com/gpu, 0 free"};
    Plan q = Decide(w.Input());
    CHECK(q.step == "lease");
    REQUIRE(q.write);
    CHECK(q.write->cluster == std::optional<std::string>("c1"));
  }
  SECTION("its only copy there: requeued") {
    w.in.intents.pop_back();
    w.in.observed.erase("c2");
    w.in.placement = Candidates({});
    w.in.placement->excluded.push_back(zone);
    Plan q = Decide(w.Input());
    REQUIRE(q.write);
    REQUIRE(q.write->phase);
    CHECK(*q.write->phase == JobPhase::kQueued);
    REQUIRE_FALSE(q.write->events.empty());
    CHECK(q.write->events.front().reason == "ConstraintsChanged");
  }
}

TEST_CASE("cordoned: a copy waiting there takes no lease and opens no gate, and is withdrawn, the job requeued "
          "when no other copy is left",
          "[dispatch][decide][cordon]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 60'000;
  w.in.options.preemption_gate_ms = 10'000;
  w.Intent("c1", "Workload", 1);
  w.Intent("c2", "Workload", 1);
  ObservedWorkload& gated = w.Workload("c1", 1);
  gated.gated = true;
  gated.held_by_gate = true;  // Kueue says it would preempt there
  ObservedWorkload& other = w.Workload("c2", 1);
  other.gated = true;
  w.clusters["c1"].config.cordoned = true;
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  REQUIRE(p.write);
  CHECK_FALSE(p.write->phase);
  REQUIRE(FindIntent(*p.write, "c1", "Workload"));
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 0);
  // The gate that opens is c2's, not the cordoned cluster's, although
  // Kueue holds c1's copy back for want of a preemption.
  CHECK(Count(p, Verb::kOpenGate, "Workload", "c1") == 0);
  CHECK(Count(p, Verb::kOpenGate, "Workload", "c2") == 1);
  REQUIRE(FindIntent(*p.write, "c2", "Workload"));
  CHECK(FindIntent(*p.write, "c2", "Workload")->gate_opened_ms == w.in.now_ms);
  REQUIRE_FALSE(p.write->events.empty());
  CHECK_THAT(p.write->events.front().message, Catch::Contains("c1 (cordoned by an operator)"));
  CHECK(p.write->message == std::optional<std::string>("nominated to c2"));

  SECTION("admitted there after the cordon: no lease") {
    w.in.observed["c1"].workloads.back().admitted = true;
    Plan q = Decide(w.Input());
    CHECK(q.step == "copies");
    REQUIRE(q.write);
    CHECK_FALSE(q.write->cluster);
    CHECK_FALSE(q.write->phase);
  }
  SECTION("its only copy there: requeued, to wait for a cluster that may take it") {
    w.in.intents.pop_back();
    w.in.observed.erase("c2");
    Plan q = Decide(w.Input());
    REQUIRE(q.write);
    REQUIRE(q.write->phase);
    CHECK(*q.write->phase == JobPhase::kQueued);
    CHECK_THAT(*q.write->message, Catch::Contains("cordoned by an operator"));
    REQUIRE_FALSE(q.write->events.empty());
    CHECK(q.write->events.front().reason == "Cordoned");
  }
  SECTION("leased there before the cordon: it runs on") {
    World owned;
    owned.OwnedBy(JobPhase::kRunning, "c1", 1);
    owned.Workload("c1", 1).admitted = true;
    owned.RemoteJob("c1", 1, RemoteJobState::kRunning);
    owned.clusters["c1"].config.cordoned = true;
    Plan r = Decide(owned.Input());
    CHECK(Count(r, Verb::kDelete, "Workload") == 0);
    CHECK(Count(r, Verb::kDelete, "Job") == 0);
    CHECK((!r.write || !r.write->phase));
  }
}

TEST_CASE("declared lost: a cancel does not wait for it, and its rows stay until it answers again",
          "[dispatch][decide][lost]") {
  World w;
  w.job.phase = JobPhase::kCancelling;
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1);
  w.Intent("c2", "Workload", 1, false);  // marked absent by an earlier pass
  DeclareLost(w, "c1", false);
  DeclareLost(w, "c2", false);
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  CHECK(*p.write->phase == JobPhase::kCancelled);
  CHECK(p.write->drop_intents.empty());  // kept: the health watch finds the job by them
  REQUIRE(FindIntent(*p.write, "c1", "Workload"));
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
  REQUIRE(p.write->events.size() == 1);
  CHECK_THAT(p.write->events[0].message, Catch::Contains("declared lost (c1, c2)"));
  CHECK(p.requeue_ms == w.in.options.lost_recheck_ms);  // the backstop: the health watch wakes it

  // Not declared lost: the cancel waits for c1 and says so.
  World v;
  v.job.phase = JobPhase::kCancelling;
  v.job.epoch = 1;
  v.Intent("c1", "Workload", 1);
  v.clusters["c1"].ready = false;
  v.synced.erase("c1");
  Plan q = Decide(v.Input());
  REQUIRE(q.write);
  CHECK_FALSE(q.write->phase);
  CHECK_THAT(*q.write->message, Catch::Contains("c1"));
  CHECK(q.requeue_ms > 0);

  // Declared lost beside an ordinary unreachable cluster: waits for that one only.
  World both;
  both.job.phase = JobPhase::kCancelling;
  both.job.epoch = 1;
  both.Intent("c1", "Workload", 1);
  both.Intent("c2", "Workload", 1);
  DeclareLost(both, "c1", false);
  both.clusters["c2"].ready = false;
  both.synced.erase("c2");
  Plan r = Decide(both.Input());
  REQUIRE(r.write);
  CHECK_FALSE(r.write->phase);
  CHECK(*r.write->message == "waiting for cluster(s) c2 to confirm deletion");

  // Declared lost and answering: its confirmation is waited for, as any cluster's.
  World answers;
  answers.job.phase = JobPhase::kCancelling;
  answers.job.epoch = 1;
  answers.Intent("c1", "Workload", 1);
  answers.Workload("c1", 1);
  DeclareLost(answers, "c1", true);
  Plan t = Decide(answers.Input());
  CHECK(Count(t, Verb::kDelete, "Workload", "c1") == 1);
  REQUIRE(t.write);
  CHECK_FALSE(t.write->phase);
}

TEST_CASE("declared lost: a finished job is not polled while it is silent, and is cleaned up once it answers",
          "[dispatch][decide][lost]") {
  World f;
  f.FinishedOn("c1", 1);
  DeclareLost(f, "c1", false);
  Plan silent = Decide(f.Input());
  CHECK_FALSE(silent.write);
  CHECK(silent.actions.empty());
  CHECK(silent.requeue_ms == f.in.options.lost_recheck_ms);  // woken by the health watch when c1 answers

  // c1 answers, still declared lost, and shows the job's run: deleted.
  World back;
  back.FinishedOn("c1", 1);
  DeclareLost(back, "c1", true);
  back.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan p = Decide(back.Input());
  CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);
  CHECK(p.requeue_ms > 0);

  // ... and once it shows nothing, the rows go.
  World gone;
  gone.FinishedOn("c1", 1);
  DeclareLost(gone, "c1", true);
  Plan q = Decide(gone.Input());
  REQUIRE(q.write);
  CHECK(q.write->drop_intents.size() == 2);
  CHECK(q.requeue_ms < 0);

  // Not declared lost (the flag taken out while it is silent): polled as any
  // unreachable cluster is.
  World plain;
  plain.FinishedOn("c1", 1);
  plain.clusters["c1"].ready = false;
  plain.synced.erase("c1");
  CHECK(Decide(plain.Input()).requeue_ms == plain.in.options.retry_ms);

  // Kept objects (finishedRetentionSeconds) beside rows in a silent cluster
  // declared lost: looked at when the retention ends, or at the backstop.
  World kept;
  kept.in.options.finished_retention_ms = 60'000;
  kept.job.phase = JobPhase::kSucceeded;
  kept.job.epoch = 2;
  kept.job.cluster = "c2";
  kept.job.finished_ms = kept.in.now_ms - 10'000;
  kept.Intent("c2", "Job", 2);
  kept.Intent("c2", "Workload", 2);
  kept.Intent("c1", "Job", 1, false);  // the first run's, in the cluster declared lost
  kept.RemoteJob("c2", 2, RemoteJobState::kSucceeded);
  kept.Workload("c2", 2).finished = true;
  DeclareLost(kept, "c1", false);
  Plan r = Decide(kept.Input());
  CHECK(r.actions.empty());
  CHECK(r.requeue_ms == 50'000);
}

TEST_CASE("an optional kind the owner cannot list holds the jobs of that kind only, and takes no copy of one",
          "[dispatch][decide]") {
  const ClusterFacts::KindRefusal refusal{"listing jobsets answered 500: conversion webhook failed", 60'000};

  // A JobSet's owner cannot list JobSets: the observer does not count it
  // synced for the job, and the job is held as for a watch refusal.
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.in.resource = "jobsets";
  w.clusters["c1"].kind_refused["jobsets"] = refusal;
  w.synced.erase("c1");
  Plan held = Decide(w.Input());
  CHECK(held.step == "owner-lost");
  REQUIRE(held.write);
  CHECK_FALSE(held.write->phase);
  CHECK(held.actions.empty());
  REQUIRE(held.write->conditions_json);
  CHECK(nlohmann::json::parse(*held.write->conditions_json)[0]["reason"] == "WatchRefused");
  // Past credentialsRefusedTimeout: onClusterLoss applies, timed from the kind's refusal.
  World past = w;
  past.clusters["c1"].kind_refused["jobsets"].for_ms = past.in.options.credentials_refused_timeout_ms;
  Plan moved = Decide(past.Input());
  REQUIRE(moved.write);
  REQUIRE(moved.write->phase);
  CHECK_THAT(*moved.write->message, Catch::Contains("has not let gantry list what it watches there"));

  // A Job in the same cluster is followed as before: nothing held.
  World job;
  job.OwnedBy(JobPhase::kRunning, "c1", 1);
  job.in.resource = "jobs";
  job.clusters["c1"].kind_refused["jobsets"] = refusal;
  job.Workload("c1", 1).admitted = true;
  job.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan followed = Decide(job.Input());
  CHECK(followed.step != "owner-lost");
  const bool flagged = followed.write && followed.write->conditions_json &&
                       followed.write->conditions_json->find("OwnerUnreachable") != std::string::npos;
  CHECK_FALSE(flagged);

  // A new JobSet gets no copy there: the other candidates only, or none.
  World queued;
  queued.in.resource = "jobsets";
  queued.clusters["c1"].kind_refused["jobsets"] = refusal;
  queued.in.placement = Candidates({"c1", "c2"});
  Plan nominated = Decide(queued.Input());
  CHECK(Count(nominated, Verb::kCreate, "Workload", "c1") == 0);
  CHECK(Count(nominated, Verb::kCreate, "Workload", "c2") == 1);
  queued.in.placement = Candidates({"c1"});
  Plan waiting = Decide(queued.Input());
  CHECK(waiting.actions.empty());
  REQUIRE(waiting.write);
  CHECK_FALSE(waiting.write->phase);
  CHECK_THAT(*waiting.write->message, Catch::Contains("c1 keep gantry from listing its kind (jobsets)"));
  // A Job's nomination is not concerned.
  queued.in.resource = "jobs";
  CHECK(Count(Decide(queued.Input()), Verb::kCreate, "Workload", "c1") == 1);

  // Copies already out when the refusal came: the one there, which could
  // never take the lease (c1 is not synced for JobSets), is admitted but
  // withdrawn; the job waits on its other copy.
  World nominating;
  nominating.job.phase = JobPhase::kNominating;
  nominating.job.epoch = 1;
  nominating.in.resource = "jobsets";
  nominating.clusters["c1"].kind_refused["jobsets"] = refusal;
  nominating.synced.erase("c1");
  for (const char* c : {"c1", "c2"}) nominating.Intent(c, "Workload", 1);
  nominating.Workload("c1", 1).admitted = true;
  nominating.Workload("c2", 1);
  nominating.in.placement = Candidates({"c1", "c2"});
  Plan withdrawn = Decide(nominating.Input());
  CHECK(withdrawn.step == "copies");
  REQUIRE(withdrawn.write);
  CHECK_FALSE(withdrawn.write->phase);
  REQUIRE(FindIntent(*withdrawn.write, "c1", "Workload"));
  CHECK_FALSE(FindIntent(*withdrawn.write, "c1", "Workload")->present);
  REQUIRE(withdrawn.write->events.size() == 1);
  CHECK_THAT(withdrawn.write->events[0].message, Catch::Contains("c1 (it does not let gantry list jobsets there)"));
  // Its only copy there, and no other cluster that can take it now:
  // dispatched again, elsewhere. (One that can gets a copy: step 7.)
  World only = nominating;
  only.in.intents.erase(only.in.intents.begin() + 1);
  only.in.placement = Candidates({"c1"});
  Plan again = Decide(only.Input());
  REQUIRE(again.write);
  REQUIRE(again.write->phase);
  CHECK(*again.write->phase == JobPhase::kQueued);
  CHECK_THAT(*again.write->message, Catch::Contains("every Workload copy was in a cluster that cannot take the job"));
}

}  // namespace gantry::dispatch

namespace gantry::dispatch {

TEST_CASE("an owner removed or out of reach: a run at its epoch seen under another entry's name is not fenced",
          "[dispatch][decide][lost]") {
  // c1, the owner, is renamed c2 in the inventory (or c2 is a second entry
  // for c1's server): c2 shows the owner's Workload and running job at the
  // current epoch. Deleting them would stop a run that Wait keeps for c1.
  for (bool removed : {true, false}) {
    INFO((removed ? "c1 removed from the inventory" : "c1 out of reach"));
    World w;
    w.spec = Spec("Wait");
    w.OwnedBy(JobPhase::kRunning, "c1", 3);
    if (removed) {
      w.clusters.erase("c1");
    } else {
      w.clusters["c1"].ready = false;
      w.clusters["c1"].lost_for_ms = 60'000;
    }
    w.synced.erase("c1");
    w.Workload("c2", 3);
    w.RemoteJob("c2", 3, RemoteJobState::kRunning);
    w.RemoteJob("c3", 2, RemoteJobState::kRunning);  // an older epoch's run: fenced as ever
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 0);
    CHECK(Count(p, Verb::kDelete, "Job", "c2") == 0);
    CHECK(Count(p, Verb::kDelete, "Job", "c3") == 1);
    CHECK(p.step == "owner-lost");
    if (removed) {  // with no fencing delete to follow up, not polled: a reload wakes it
      w.in.observed.erase("c3");
      CHECK(Decide(w.Input()).requeue_ms == w.in.options.lost_recheck_ms);
    }
  }
  // With the owner answering, the same objects are strays, deleted.
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 3);
  w.Workload("c1", 3);
  w.RemoteJob("c1", 3, RemoteJobState::kRunning);
  w.Workload("c2", 3);
  w.RemoteJob("c2", 3, RemoteJobState::kRunning);
  Plan p = Decide(w.Input());
  CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 1);
  CHECK(Count(p, Verb::kDelete, "Job", "c2") == 1);
  CHECK(Count(p, Verb::kDelete, "Job", "c1") == 0);
}

TEST_CASE("removed: a cancel does not wait for the cluster, and says the job may still run there",
          "[dispatch][decide][lost]") {
  World w;
  w.job.phase = JobPhase::kCancelling;
  w.job.epoch = 1;
  w.job.cluster = "c1";
  w.Intent("c1", "Workload", 1, false);  // marked absent by the cancel's first pass
  w.Intent("c1", "Job", 1, false);
  w.clusters.erase("c1");
  w.synced.erase("c1");
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kCancelled);
  REQUIRE(p.write->events.size() == 1);
  CHECK_THAT(p.write->events[0].message, Catch::Contains("removed from the inventory (c1)"));
  CHECK_THAT(p.write->events[0].message, !Catch::Contains("from every cluster"));
}

// A cluster gantry holds without reaching it (its file in clusters.d
// refused, or its credentials not loading) measures no outage: its jobs wait
// as they are, and say why once.
TEST_CASE("step 10: an owner held by the inventory is waited for, the job flagged OwnerHeld once",
          "[dispatch][decide][lost]") {
  World w;
  w.in.options.cluster_lost_timeout_ms = 1'000;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.clusters["c1"].ready = false;
  w.clusters["c1"].unusable = "its file in clusters.d is refused";
  Plan held = Decide(w.Input());
  CHECK(held.step == "owner-lost");
  CHECK(held.actions.empty());
  REQUIRE(held.write);
  CHECK_FALSE(held.write->phase);  // not requeued, whatever the timeout
  REQUIRE(held.write->events.size() == 1);
  CHECK(held.write->events[0].reason == "OwnerHeld");
  CHECK_THAT(held.write->events[0].message,
             Catch::Contains("gantry does not reach owner cluster c1: its file in clusters.d is refused"));
  // Flagged once: the next pass writes nothing.
  REQUIRE(held.write->conditions_json);
  w.job.conditions_json = *held.write->conditions_json;
  Plan again = Decide(w.Input());
  CHECK_FALSE(again.write);
  // Its file loads, and it is Ready again: the flag is lifted.
  w.clusters["c1"].unusable.clear();
  w.clusters["c1"].ready = true;
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  w.Workload("c1", 1).admitted = true;
  Plan back = Decide(w.Input());
  REQUIRE(back.write);
  REQUIRE(back.write->conditions_json);
  CHECK(back.write->conditions_json->find("OwnerHeld") == std::string::npos);
}

namespace {

// The plan requeues the job at its next epoch, its cluster removed from the inventory.
void CheckRequeuedAsRemoved(const Plan& lost) {
  REQUIRE(lost.write);
  REQUIRE(lost.write->phase);
  CHECK(*lost.write->phase == JobPhase::kQueued);
  REQUIRE(lost.write->message);
  CHECK_THAT(*lost.write->message, Catch::Contains("removed from the inventory"));
}

}  // namespace

TEST_CASE("step 10: an owner missing from the inventory the daemon started with is held until a reload confirms it",
          "[dispatch][decide][lost]") {
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.clusters.erase("c1");  // its file missing at the start, say
  w.synced.erase("c1");
  w.in.inventory_confirmed = false;
  Plan held = Decide(w.Input());
  CHECK(held.step == "owner-lost");
  CHECK(held.actions.empty());
  REQUIRE(held.write);
  CHECK_FALSE(held.write->phase);  // not requeued: it may run on there
  REQUIRE(held.write->events.size() == 1);
  CHECK(held.write->events[0].reason == "OwnerHeld");
  CHECK_THAT(held.write->events[0].message,
             Catch::Contains("owner cluster c1 is not in the inventory gantry started with"));
  REQUIRE(held.write->conditions_json);
  w.job.conditions_json = *held.write->conditions_json;
  CHECK_FALSE(Decide(w.Input()).write);  // flagged once

  // A reload confirms the inventory: removed, so onClusterLoss applies.
  w.in.inventory_confirmed = true;
  Plan lost = Decide(w.Input());
  CheckRequeuedAsRemoved(lost);
  CHECK_THAT(*lost.write->message, Catch::Contains("may still run"));  // nothing there is stopped
  // The OwnerHeld flag goes with the lease: left Unschedulable after it, the
  // job showed it for good (trial 25).
  REQUIRE(lost.write->conditions_json);
  CHECK(*lost.write->conditions_json == "[]");
}

TEST_CASE("before a reload confirms the inventory, a cluster missing from it keeps the rows of every job, not only "
          "its owner's",
          "[dispatch][decide][lost]") {
  // Its file missing when the daemon started, say.
  auto missing_at_start = [](World& w) {
    w.clusters.erase("c1");
    w.synced.erase("c1");
    w.in.inventory_confirmed = false;
  };
  // What a job has in a cluster whose file is missing at the start may still
  // be there, running: its rows stay (not confirmed gone), until a reload
  // confirms the removal.
  SECTION("a cancel waits for it, and says so, instead of reporting the job cancelled") {
    World w;
    w.job.phase = JobPhase::kCancelling;
    w.job.epoch = 1;
    w.job.cluster = "c1";
    w.Intent("c1", "Workload", 1, false);
    w.Intent("c1", "Job", 1, false);
    missing_at_start(w);
    Plan wait = Decide(w.Input());
    REQUIRE(wait.write);
    CHECK_FALSE(wait.write->phase);
    CHECK(wait.write->drop_intents.empty());
    REQUIRE(wait.write->message);
    CHECK_THAT(*wait.write->message, Catch::Contains("waiting for cluster(s) c1"));
    CHECK_THAT(*wait.write->message, Catch::Contains("a reload of the inventory"));
    CHECK(wait.requeue_ms == w.in.options.lost_recheck_ms);  // a reload wakes it; this is the backstop

    w.in.inventory_confirmed = true;  // a reload confirms it removed: what it holds is given up, as before
    Plan done = Decide(w.Input());
    REQUIRE(done.write);
    REQUIRE(done.write->phase);
    CHECK(*done.write->phase == JobPhase::kCancelled);
    CHECK(done.write->drop_intents.size() == 2);
  }
  SECTION("a nominating job whose copies are all there goes on at the next epoch, their rows kept") {
    // Without a lease a copy runs nothing: the job does not wait for a
    // reload that may never come.
    World w;
    w.job.phase = JobPhase::kNominating;
    w.job.epoch = 1;
    w.Intent("c1", "Workload", 1);
    missing_at_start(w);
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == JobPhase::kQueued);
    CHECK_THAT(*p.write->message, Catch::Contains("not in the inventory the daemon started with"));
    CHECK(p.write->drop_intents.empty());
  }
}

TEST_CASE("step 13: an owner that answers but fails every create of the job for clusterLostTimeout counts as lost",
          "[dispatch][decide][lost]") {
  for (const char* policy : {"Requeue", "Fail", "Wait"}) {
    INFO(policy);
    World w;
    w.spec = Spec(policy);
    w.in.options.cluster_lost_timeout_ms = 60'000;
    w.OwnedBy(JobPhase::kAdmitted, "c1", 1);
    w.Workload("c1", 1).admitted = true;
    // Failing for less than the timeout: sent again, nothing else.
    w.in.job_create_failing_ms = 59'000;
    Plan before = Decide(w.Input());
    CHECK(before.step == "run");
    CHECK(Count(before, Verb::kCreate, "Job") == 1);
    CHECK((!before.write || !before.write->phase));

    w.in.job_create_failing_ms = 60'000;
    w.in.job_create_error = "HTTP 500 failed calling webhook";
    Plan after = Decide(w.Input());
    if (std::string(policy) == "Wait") {
      // Flagged, and tried on.
      CHECK(after.step == "run");
      CHECK(Count(after, Verb::kCreate, "Job") == 1);
      REQUIRE(after.write);
      CHECK_FALSE(after.write->phase);
      CHECK_THAT(*after.write->conditions_json, Catch::Contains("OwnerLost"));
      CHECK_THAT(*after.write->message, Catch::Contains("failed every try to create the job there for 60 s"));
      // Flagged once; the flag is not lifted while the creates fail, and is
      // once one does not (the owner answers again).
      w.job.conditions_json = *after.write->conditions_json;
      w.job.message = *after.write->message;
      Plan again = Decide(w.Input());
      CHECK((!again.write || !again.write->conditions_json));
      {
        // The real job seen there after all (a create whose answer failed
        // landed): the flag goes, whatever the failed tries say.
        World seen = w;
        seen.RemoteJob("c1", 1, RemoteJobState::kSuspended);
        Plan p = Decide(seen.Input());
        REQUIRE(p.write);
        CHECK(*p.write->conditions_json == "[]");
      }
      w.in.job_create_failing_ms = 0;
      Plan returned = Decide(w.Input());
      REQUIRE(returned.write);
      CHECK(*returned.write->conditions_json == "[]");
      REQUIRE_FALSE(returned.write->events.empty());
      CHECK_THAT(returned.write->events.front().message, Catch::Contains("no longer fails the job's create"));
      continue;
    }
    CHECK(after.step == "owner-lost");
    CHECK(Count(after, Verb::kCreate, "Job") == 0);
    REQUIRE(after.write);
    REQUIRE(after.write->phase);
    CHECK_THAT(*after.write->message, Catch::Contains("answers gantry's reads but has failed every try"));
    CHECK_THAT(*after.write->message, Catch::Contains("(the last: HTTP 500 failed calling webhook)"));
    if (std::string(policy) == "Requeue") {
      CHECK(*after.write->phase == JobPhase::kQueued);
      CHECK(*after.write->cluster == "");
      REQUIRE(FindIntent(*after.write, "c1", "Job"));
      CHECK_FALSE(FindIntent(*after.write, "c1", "Job")->present);  // fenced should the create land after all
      // Not a refusal: a try may have landed there, and the next run waits for
      // the view to show none. A hold: c1, which would most likely win the
      // lease and fail again, is left out of the next dispatches for a while.
      CHECK(FindIntent(*after.write, "c1", "Job")->refusal.empty());
      CHECK_THAT(FindIntent(*after.write, "c1", "Job")->hold, Catch::Contains("failed every try"));
      // Queued since now: its dispatch timeout's wait for a cluster counts from here.
      CHECK(after.write->nominated_ms == std::optional<int64_t>(w.in.now_ms));
      CHECK_THAT(*after.write->message, Catch::Contains("c1 is left out of the job's dispatches for"));
    } else {
      CHECK(*after.write->phase == JobPhase::kFailed);
    }
    // A real job seen there after all (the create landed, its answer lost):
    // it runs there, whatever the clock says.
    w.RemoteJob("c1", 1, RemoteJobState::kRunning);
    Plan seen = Decide(w.Input());
    CHECK(seen.step == "run");
    REQUIRE(seen.write);
    CHECK(*seen.write->phase == JobPhase::kRunning);
  }
}

TEST_CASE("a run of failed creates lasts from its first try to its last, and a gap, a new epoch or a success ends it",
          "[dispatch][decide][lost]") {
  ActionError e;
  NoteFailedTry(e, 1, 1'000);
  CHECK(FailingRunMs(e, 1, 1'000) == 0);
  NoteFailedTry(e, 1, 3'000);
  NoteFailedTry(e, 1, 50'000);
  CHECK(FailingRunMs(e, 1, 50'000) == 49'000);
  // Time with no try is not counted: the run ends at its last try...
  CHECK(FailingRunMs(e, 1, 100'000) == 49'000);
  // ...and is over once that is long past (the owner out of reach meanwhile).
  CHECK(FailingRunMs(e, 1, 50'000 + kFailingRunGapMs + 1) == 0);
  // A try after such a gap starts a new run.
  NoteFailedTry(e, 1, 200'000);
  CHECK(FailingRunMs(e, 1, 200'000) == 0);
  NoteFailedTry(e, 1, 230'000);
  CHECK(FailingRunMs(e, 1, 230'000) == 30'000);
  // Another epoch's run is not this one's.
  CHECK(FailingRunMs(e, 2, 230'000) == 0);
  NoteFailedTry(e, 2, 231'000);
  CHECK(FailingRunMs(e, 2, 232'000) == 0);
}

TEST_CASE("step 2: a job failed for a lost owner whose run there ended unseen tells how it ended, once, and stays "
          "Failed",
          "[dispatch][decide][lost]") {
  World w;
  w.spec = Spec("Fail");
  w.FinishedOn("c1", 1);
  w.job.phase = JobPhase::kFailed;
  w.job.message = "owner cluster c1 has been unreachable for 900 s; onClusterLoss is Fail";
  w.job.remote_status = "active 2, succeeded 0, failed 0, restarts 0";  // as last seen
  ObservedJob& run = w.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  run.summary = "active 0, succeeded 2, failed 0, restarts 0";
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  CHECK_FALSE(p.write->phase);
  CHECK(p.write->remote_status == std::optional<std::string>(run.summary));
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events[0].reason == "RunEndedUnseen");
  CHECK(p.write->events[0].cluster == "c1");
  CHECK_THAT(p.write->events[0].message, Catch::Contains("succeeded there meanwhile") &&
                                             Catch::Contains("the job stays Failed"));
  REQUIRE(p.write->conditions_json);
  CHECK_THAT(*p.write->conditions_json, Catch::Contains("RunEndedUnseen"));
  // Told once: the next pass finds the condition, whatever the run's counts
  // do meanwhile.
  w.job.conditions_json = *p.write->conditions_json;
  w.in.observed["c1"].jobs.back().summary = "active 0, succeeded 2, failed 1, restarts 0";
  Plan again = Decide(w.Input());
  CHECK((!again.write || (again.write->events.empty() && !again.write->remote_status)));
  // A failed run says why, and a kind with no summary is told too.
  World failed_run = w;
  failed_run.job.conditions_json = "[]";
  ObservedJob& f = failed_run.in.observed["c1"].jobs.back();
  f.state = RemoteJobState::kFailed;
  f.reason = "BackoffLimitExceeded";
  f.message = "Job has reached the specified backoff limit";
  f.summary = "";
  Plan told = Decide(failed_run.Input());
  REQUIRE(told.write);
  REQUIRE(told.write->events.size() == 1);
  CHECK(told.write->events[0].type == "Warning");
  CHECK_THAT(told.write->events[0].message,
             Catch::Contains("failed there meanwhile: BackoffLimitExceeded (Job has reached the specified backoff limit)"));
  CHECK_FALSE(told.write->remote_status);
  // A job that failed in its owner as seen (no loss) is not told again.
  World seen = w;
  seen.job.message = "failed in c1: BackoffLimitExceeded";
  seen.job.remote_status = "active 0, succeeded 0, failed 1, restarts 3";
  seen.in.observed["c1"].jobs.back().state = RemoteJobState::kFailed;
  Plan plain = Decide(seen.Input());
  CHECK((!plain.write || plain.write->events.empty()));
}

}  // namespace gantry::dispatch
