// The dispatch ladder, step by step, as a pure function: each case builds
// the stored job, its intents and what the clusters show, and checks the
// plan's write and actions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <variant>

#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/remote_objects.h"
#include "decide_world.h"

namespace gantry::dispatch {
using namespace decide_world;

TEST_CASE("step 4: a queued job is nominated at epoch+1 with one intent per candidate", "[dispatch][decide]") {
  World w;
  w.in.placement = Candidates({"c1", "c3"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "nominate");
  REQUIRE(p.write);
  CHECK(p.write->expected_phase == JobPhase::kQueued);
  CHECK(*p.write->phase == JobPhase::kNominating);
  CHECK(*p.write->epoch == 1);
  CHECK(*p.write->nominated_ms == w.in.now_ms);
  REQUIRE(p.write->upsert_intents.size() == 2);
  CHECK(FindIntent(*p.write, "c1", "Workload")->present);
  CHECK(FindIntent(*p.write, "c3", "Workload")->epoch == 1);
  CHECK(Count(p, Verb::kCreate, "Workload") == 2);
  const Action& a = p.actions[0];
  CHECK(a.body["metadata"]["annotations"][kEpochAnnotation] == "1");
  CHECK(a.body["metadata"]["labels"][kJobUidLabel] == w.job.uid);
  CHECK(p.requeue_ms == w.in.options.resync_ms);  // the copies' events wake it
  // Incremental: looked at again at its first round, whatever the copies
  // say (waiting in full clusters, they may say nothing before the resync).
  w.spec.dispatch.mode = DispatchMode::kIncremental;
  w.spec.dispatch.round_seconds = 4;
  REQUIRE(w.in.options.resync_ms > 4'000);
  CHECK(Decide(w.Input()).requeue_ms == 4'000);
}

TEST_CASE("step 4: the Nominated event names the clusters left out, each reason cut short", "[dispatch][decide]") {
  World w;
  placement::Decision d = Candidates({"c1"});
  d.excluded.push_back({"c2", {placement::Filter::kQuota, "LocalQueue ml/team-a does not exist here", false}});
  // A ClusterQueue's condition message, long, ending in a two-byte character at the cut.
  d.excluded.push_back({"c3", {placement::Filter::kQuota, std::string(199, 'x') + "\xc3\xa9" + std::string(5000, 'y'), false}});
  w.in.placement = d;
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->events.size() == 1);
  const std::string& text = p.write->events.front().message;
  INFO(text);
  CHECK_THAT(text, Catch::StartsWith("epoch 1: Workload copies to c1; left out: c2: LocalQueue ml/team-a does not "
                                     "exist here; c3: "));
  CHECK_THAT(text, Catch::EndsWith(std::string(199, 'x') + "..."));  // not half of the character
  CHECK(text.size() < 400);
}

TEST_CASE("step 4: the Nominated event names the feasible clusters beyond maxCopies, or left for later rounds",
          "[dispatch][decide]") {
  World w;
  w.in.placement = decide_world::Feasible({"c1", "c2"}, {"c1", "c2", "c3"});
  w.in.max_copies = 2;
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events.front().message ==
        "epoch 1: Workload copies to c1, c2; beyond maxCopies (2), ranked lower: c3");

  World inc;
  inc.spec.dispatch.mode = DispatchMode::kIncremental;
  inc.in.placement = decide_world::Feasible({"c1"}, {"c1", "c2", "c3"});
  inc.in.max_copies = 8;
  Plan i = Decide(inc.Input());
  REQUIRE(i.write);
  REQUIRE(i.write->events.size() == 1);
  CHECK(i.write->events.front().message == "epoch 1: Workload copies to c1; later rounds: c2, c3");
}

TEST_CASE("step 4: unschedulable everywhere fails at once, no candidates now waits", "[dispatch][decide]") {
  World w;
  placement::Decision d;
  d.unschedulable = true;
  d.excluded.push_back({"c1", {placement::Filter::kQuota, "needs 64 GPUs, nominal quota is 16", true}});
  w.in.placement = d;
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  CHECK(*p.write->phase == JobPhase::kUnschedulable);
  CHECK_THAT(*p.write->message, Catch::Contains("c1: needs 64 GPUs"));

  World wait;
  placement::Decision none;
  none.excluded.push_back({"c1", {placement::Filter::kHealth, "not Ready", false}});
  wait.in.placement = none;
  Plan q = Decide(wait.Input());
  CHECK(q.actions.empty());
  CHECK(q.requeue_ms > 0);
  REQUIRE(q.write);
  CHECK_FALSE(q.write->phase);
}

TEST_CASE("an Unschedulable job is queued again once the inventory it is judged against has a cluster for it",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kUnschedulable;
  // Still no cluster for it: nothing changes.
  placement::Decision never;
  never.unschedulable = true;
  never.excluded.push_back({"c1", {placement::Filter::kRegion, "region us-west-2 not in [mars-1]", true}});
  w.in.placement = never;
  Plan stays = Decide(w.Input());
  CHECK_FALSE((stays.write && stays.write->phase));
  // An empty inventory (not known yet) tells nothing either.
  w.in.placement = placement::Decision{};
  Plan unknown = Decide(w.Input());
  CHECK_FALSE((unknown.write && unknown.write->phase));
  // c3's region corrected at a reload: queued again, saying where it may run.
  w.in.placement = Candidates({"c3"});
  Plan again = Decide(w.Input());
  REQUIRE(again.write);
  REQUIRE(again.write->phase);
  CHECK(*again.write->phase == JobPhase::kQueued);
  CHECK_THAT(*again.write->message, Catch::Contains("c3 may run it now"));
  REQUIRE(again.write->events.size() == 1);
  CHECK(again.write->events[0].reason == "Requeued");
  CHECK(again.requeue_ms == 0);
  // A cluster left out only for now (not Ready, its quota not read yet, as
  // right after a start) is no reason: once read it may be ruled out again.
  placement::Decision later;
  later.excluded.push_back({"c2", {placement::Filter::kHealth, "not Ready", false}});
  w.in.placement = later;
  Plan waits = Decide(w.Input());
  CHECK_FALSE((waits.write && waits.write->phase));
}

TEST_CASE("step 5: the first admitted copy at the current epoch takes the lease", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 2;
  for (const char* c : {"c1", "c2", "c3"}) w.Intent(c, "Workload", 2);
  w.Workload("c1", 2);
  w.Workload("c2", 2).admitted = true;
  w.Workload("c3", 1).admitted = true;  // an older epoch never wins
  w.in.placement = Candidates({"c1", "c2", "c3"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "lease");
  REQUIRE(p.write);
  CHECK(p.write->expected_epoch == 2);
  CHECK(p.write->expected_cluster.empty());
  CHECK(*p.write->phase == JobPhase::kAdmitted);
  CHECK(*p.write->cluster == "c2");
  CHECK(p.lease_losers.empty());  // c3's admitted copy is of an older epoch
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
  CHECK_FALSE(FindIntent(*p.write, "c3", "Workload")->present);
  CHECK(FindIntent(*p.write, "c2", "Workload") == nullptr);  // the winner's copy stays
  CHECK(FindIntent(*p.write, "c2", "Job")->present);
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload", "c3") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 0);
  REQUIRE(Count(p, Verb::kCreate, "Job") == 1);
  const Action& create = p.actions.back();  // after every withdrawal
  CHECK(create.cluster == "c2");
  CHECK(create.body["spec"]["suspend"] == true);
  CHECK(create.body["metadata"]["annotations"][kPrebuiltWorkloadAnnotation] == RemoteName("train", w.job.uid));
  CHECK(create.body["metadata"]["annotations"][kEpochAnnotation] == "2");
}

TEST_CASE("step 5: the clusters whose copies were admitted too are the lease's losers", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  for (const char* c : {"c1", "c2", "c3"}) w.Intent(c, "Workload", 1);
  w.Workload("c1", 1).admitted = true;
  w.Workload("c2", 1);  // pending: not a loser
  w.Workload("c3", 1).admitted = true;
  w.in.placement = Candidates({"c1", "c2", "c3"});
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "lease");
  CHECK(*p.write->cluster == "c1");
  CHECK(p.lease_losers == std::vector<std::string>{"c3"});
}

TEST_CASE("step 5: an admitted copy in an unreachable cluster does not win", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1);
  w.Workload("c1", 1).admitted = true;
  w.clusters["c1"].ready = false;
  w.in.placement = Candidates({"c1"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  CHECK_FALSE(p.write);
}

TEST_CASE("step 5: leaseOn QuotaReserved takes the lease on a copy holding quota, Admitted waits for Admitted",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  for (const char* c : {"c1", "c2"}) w.Intent(c, "Workload", 1);
  w.Workload("c1", 1).quota_reserved = true;  // its admission checks still Pending
  w.Workload("c2", 1);
  w.in.placement = Candidates({"c1", "c2"});
  Plan waits = Decide(w.Input());
  CHECK(waits.step == "copies");
  CHECK_FALSE(waits.write);

  w.in.options.lease_on_quota_reserved = true;
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "lease");
  CHECK(*p.write->cluster == "c1");
  CHECK(Count(p, Verb::kCreate, "Job", "c1") == 1);

  // Admitted: the one that admits wins, whatever the other holds.
  w.in.options.lease_on_quota_reserved = false;
  w.in.observed["c2"].workloads[0].quota_reserved = true;
  w.in.observed["c2"].workloads[0].admitted = true;
  Plan q = Decide(w.Input());
  REQUIRE(q.step == "lease");
  CHECK(*q.write->cluster == "c2");
  CHECK(q.lease_losers.empty());
}

TEST_CASE("step 5: a deactivated copy, or one whose admission check failed, does not take the lease",
          "[dispatch][decide]") {
  World w;
  w.in.options.lease_on_quota_reserved = true;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  for (const char* c : {"c1", "c2", "c3"}) w.Intent(c, "Workload", 1);
  // Kueue writes a check's Retry or Rejected before it evicts or
  // deactivates the copy: in between, the copy still holds quota.
  ObservedWorkload& retry = w.Workload("c1", 1);
  retry.quota_reserved = true;
  retry.check_failed = true;
  ObservedWorkload& inactive = w.Workload("c2", 1);
  inactive.quota_reserved = true;
  inactive.active = false;
  w.Workload("c3", 1).quota_reserved = true;
  w.in.placement = Candidates({"c1", "c2", "c3"});
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "lease");
  CHECK(*p.write->cluster == "c3");
  CHECK(p.lease_losers.empty());
}

TEST_CASE("step 6: dispatch.timeoutSeconds fails the job with per-cluster reasons", "[dispatch][decide]") {
  World w;
  w.spec.dispatch.timeout_seconds = 60;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 61'000;
  w.Intent("c1", "Workload", 1);
  w.Workload("c1", 1).message = "insufficient quota for nvidia.com/gpu";
  w.in.placement = Candidates({"c1"});
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  CHECK(*p.write->phase == JobPhase::kFailed);
  CHECK_THAT(*p.write->message, Catch::Contains("c1: insufficient quota"));
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
}

TEST_CASE("step 4: dispatch.timeoutSeconds bounds a wait in Queued for a cluster that may take the job, from when "
          "it was Queued",
          "[dispatch][decide]") {
  World w;
  w.spec.dispatch.timeout_seconds = 60;
  w.job.phase = JobPhase::kQueued;
  w.job.epoch = 0;
  w.job.created_ms = w.in.now_ms - 40'000;
  // No cluster can take it now (c1 cordoned): it waits, woken at its timeout.
  w.in.placement = Candidates({});
  w.in.placement->excluded.push_back({"c1", {placement::Filter::kCordoned, "cordoned by an operator", false}});
  Plan wait = Decide(w.Input());
  CHECK_FALSE((wait.write && wait.write->phase));
  CHECK(wait.requeue_ms == 20'000);
  // Past it: failed, saying why no cluster could take it.
  w.in.now_ms += 20'000;
  Plan failed = Decide(w.Input());
  REQUIRE(failed.write);
  REQUIRE(failed.write->phase);
  CHECK(*failed.write->phase == JobPhase::kFailed);
  CHECK_THAT(*failed.write->message, Catch::Contains("not admitted within 60 s: no cluster could take it: left out: ") &&
                                         Catch::Contains("cordoned"));
  CHECK(failed.write->message->find("waiting") == std::string::npos);
  REQUIRE_FALSE(failed.write->events.empty());
  CHECK(failed.write->events.back().reason == "DispatchTimeout");

  SECTION("waiting while the daemon was down: from the daemon's start, not the submission") {
    World d = w;
    d.in.now_ms = *ParseRfc3339("2026-12-07T10:00:00Z");
    d.job.created_ms = d.in.now_ms - 3'600'000;
    d.in.started_ms = d.in.now_ms - 5'000;
    Plan p = Decide(d.Input());
    CHECK_FALSE((p.write && p.write->phase));
    CHECK(p.requeue_ms == std::min<int64_t>(55'000, d.in.options.resync_ms));
    // Its timeout, when it comes, says so: a wait longer than the timeout.
    d.in.now_ms += 60'000;
    Plan late = Decide(d.Input());
    REQUIRE(late.write);
    REQUIRE(late.write->message);
    CHECK_THAT(*late.write->message,
               Catch::Contains("not admitted within 60 s of the daemon's start at 2026-12-07T09:59:55Z (the wait "
                               "began at 2026-12-07T09:00:00Z; a wait is counted afresh from a start)"));
  }
  SECTION("requeued (its copies withdrawn by a cordon): from the requeue, not the submission") {
    World r = w;
    r.in.now_ms = w.in.now_ms;
    r.job.epoch = 1;
    r.job.created_ms = r.in.now_ms - 3'600'000;
    r.job.nominated_ms = r.in.now_ms - 30'000;  // what Requeued wrote
    Plan p = Decide(r.Input());
    CHECK_FALSE((p.write && p.write->phase));
    CHECK(p.requeue_ms == 30'000);
  }
  SECTION("an Unschedulable job judged again long after its submission is queued with its clock started, and "
          "nominated, not failed") {
    World u;
    u.spec.dispatch.timeout_seconds = 60;
    u.job.phase = JobPhase::kUnschedulable;
    u.job.created_ms = u.in.now_ms - 3'600'000;
    u.in.placement = Candidates({"c1"});
    Plan queued = Decide(u.Input());
    REQUIRE(queued.write);
    CHECK(queued.write->phase == std::optional<JobPhase>(JobPhase::kQueued));
    CHECK(queued.write->nominated_ms == std::optional<int64_t>(u.in.now_ms));
    u.job.phase = JobPhase::kQueued;
    u.job.nominated_ms = u.in.now_ms;
    Plan nominated = Decide(u.Input());
    CHECK(nominated.step == "nominate");
    CHECK(Count(nominated, Verb::kCreate, "Workload", "c1") == 1);
    // Nominating: from its nomination, whenever it was submitted.
    u.job.phase = JobPhase::kNominating;
    u.job.epoch = 1;
    u.in.now_ms += 1'000;
    u.Intent("c1", "Workload", 1);
    u.Workload("c1", 1);
    Plan waits = Decide(u.Input());
    CHECK_FALSE((waits.write && waits.write->phase));
    // Nominated before a daemon restart long ago: from the start, so that
    // a copy admitted meanwhile can take its lease once the views sync.
    u.job.nominated_ms = u.in.now_ms - 3'600'000;
    u.in.started_ms = u.in.now_ms - 1'000;
    Plan restarted = Decide(u.Input());
    CHECK_FALSE((restarted.write && restarted.write->phase));
    u.in.started_ms = 0;
    Plan old = Decide(u.Input());
    REQUIRE(old.write);
    CHECK(old.write->phase == std::optional<JobPhase>(JobPhase::kFailed));
  }
}

TEST_CASE("step 7: Incremental adds the next round's candidates", "[dispatch][decide]") {
  World w = IncrementalWithCopyInC1();
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "widen");
  REQUIRE(p.write);
  CHECK(FindIntent(*p.write, "c2", "Workload")->present);
  CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);

  // The ranking moved (c3 now before c1) but no round is due: no new copy.
  World moved = IncrementalWithCopyInC1();
  moved.in.placement = Candidates({"c3"});
  Plan q = Decide(moved.Input());
  CHECK(q.step == "copies");
  CHECK(Count(q, Verb::kCreate, "Workload") == 0);
}

TEST_CASE("step 7: Incremental puts the next cluster in place of a deactivated copy at once", "[dispatch][decide]") {
  World w = IncrementalWithCopyInC1();
  ObservedWorkload& rejected = w.in.observed["c1"].workloads[0];
  rejected.active = false;
  rejected.evicted = true;
  w.in.placement = Candidates({"c1"});  // no round due
  for (const char* c : {"c1", "c2", "c3"}) {
    placement::RankedCluster r;
    r.cluster = c;
    w.in.placement->feasible.push_back(r);
  }
  Plan p = Decide(w.Input());
  CHECK(p.step == "widen");
  CHECK(Count(p, Verb::kCreate, "Workload") == 1);
  CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload") == 0);  // the deactivated copy stays until the lease

  // c2 has its copy: one live copy, as many as the round asks.
  w.Intent("c2", "Workload", 1);
  w.Workload("c2", 1);
  Plan q = Decide(w.Input());
  CHECK(q.step == "copies");
  CHECK(Count(q, Verb::kCreate, "Workload") == 0);
}

TEST_CASE("step 8: every copy deactivated requeues the job for the next epoch, not at once, and one that may "
          "still be admitted is waited for",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - w.in.options.redispatch_after_rejection_ms;
  for (const char* c : {"c1", "c2"}) {
    w.Intent(c, "Workload", 1);
    ObservedWorkload& wl = w.Workload(c, 1);
    wl.active = false;
    wl.evicted = true;
    wl.reason = "DeactivatedDueToAdmissionCheck";
    wl.message = "The workload is deactivated due to AdmissionCheck in Rejected state: \"prov\"";
  }
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "deactivated");
  REQUIRE(p.write);
  CHECK(p.write->expected_phase == JobPhase::kNominating);
  CHECK(*p.write->phase == JobPhase::kQueued);
  CHECK_FALSE(p.write->epoch);  // the next nomination moves it on
  CHECK_THAT(*p.write->message, Catch::Contains("c1: DeactivatedDueToAdmissionCheck") &&
                                    Catch::Contains("c2: DeactivatedDueToAdmissionCheck"));
  CHECK(p.write->events.at(0).reason == "Deactivated");
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
  CHECK_FALSE(FindIntent(*p.write, "c2", "Workload")->present);
  CHECK(p.requeue_ms == 0);

  // Deactivated by hand there and not evicted yet: told as such, not by the
  // quota its conditions still tell of.
  World by_hand = w;
  for (ObservedWorkload& wl : by_hand.in.observed["c2"].workloads) {
    wl.evicted = false;
    wl.reason = "Pending";
    wl.message = "couldn't assign flavors to pod set main";
  }
  Plan told = Decide(by_hand.Input());
  REQUIRE(told.write);
  CHECK_THAT(*told.write->message, Catch::Contains("c2: spec.active: false") && !Catch::Contains("flavors"));

  // Rejected at once: the epoch runs its shortest length first, so that a
  // check that always rejects does not start an epoch on every pass.
  World young = w;
  young.job.nominated_ms = w.in.now_ms - 1'000;
  Plan wait = Decide(young.Input());
  CHECK(wait.step == "deactivated");
  CHECK_FALSE(wait.write);
  CHECK(wait.actions.empty());
  CHECK(wait.requeue_ms == w.in.options.redispatch_after_rejection_ms - 1'000);

  // Rejected again and again: each epoch waits twice as long as the one
  // before, up to the cap, before the next.
  for (auto [epoch, floor_ms] : std::vector<std::pair<int64_t, int64_t>>{
           {2, 20'000}, {3, 40'000}, {7, 600'000}, {60, 600'000}}) {
    World later = w;
    later.job.epoch = epoch;
    later.job.nominated_ms = w.in.now_ms - 1'000;
    for (RemoteIntent& i : later.in.intents) i.epoch = epoch;
    for (auto& [cluster, seen] : later.in.observed) {
      for (auto& wl : seen.workloads) wl.epoch = epoch;
    }
    INFO("epoch " << epoch);
    Plan held = Decide(later.Input());
    CHECK(held.step == "deactivated");
    CHECK_FALSE(held.write);
    CHECK(held.requeue_ms == floor_ms - 1'000);
  }

  // Nothing else wakes a job whose every copy was deactivated: its wait
  // ends at its dispatch timeout, if that comes first (step 6 then fails it).
  World timed = w;
  timed.job.epoch = 3;
  for (RemoteIntent& i : timed.in.intents) i.epoch = 3;
  for (auto& [cluster, seen] : timed.in.observed) {
    for (auto& wl : seen.workloads) wl.epoch = 3;
  }
  timed.job.nominated_ms = w.in.now_ms - 1'000;
  timed.spec.dispatch.timeout_seconds = 30;
  Plan capped = Decide(timed.Input());
  CHECK(capped.step == "deactivated");
  CHECK(capped.requeue_ms == 29'000);

  // A copy still pending, or in a cluster out of sight, may yet be admitted.
  World live = w;
  live.in.observed["c2"].workloads[0].active = true;
  live.in.observed["c2"].workloads[0].evicted = false;
  CHECK(Decide(live.Input()).step == "copies");
  World unseen = w;
  unseen.clusters["c2"].ready = false;
  CHECK(Decide(unseen.Input()).step == "copies");
}

TEST_CASE("step 9: a missing copy is created again, nothing happens while one is pending", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1);
  w.Intent("c2", "Workload", 1);
  w.Workload("c1", 1);
  w.synced.erase("c2");  // cannot conclude absence there
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.actions.empty());
  w.synced.insert("c2");
  Plan q = Decide(w.Input());
  CHECK(Count(q, Verb::kCreate, "Workload", "c2") == 1);
  CHECK_FALSE(q.write);
}

TEST_CASE("steps 9 and 13: an object created but not yet seen is not created again", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1);
  w.Intent("c2", "Workload", 1);
  w.in.placement = Candidates({"c1", "c2"});
  w.in.expected = {{"c1", "Workload"}};  // created a moment ago; its watch event is not in
  Plan copies = Decide(w.Input());
  CHECK(Count(copies, Verb::kCreate, "Workload", "c1") == 0);
  CHECK(Count(copies, Verb::kCreate, "Workload", "c2") == 1);
  // Only the awaited copy missing: nothing to do now, but a look again soon
  // (it is created again once the expectation lapses), not at the resync.
  w.Workload("c2", 1);
  Plan awaiting = Decide(w.Input());
  CHECK(awaiting.actions.empty());
  CHECK(awaiting.requeue_ms == DecideOptions{}.retry_ms);
  w.in.expected.clear();
  w.Workload("c1", 1);
  CHECK(Decide(w.Input()).requeue_ms == DecideOptions{}.resync_ms);  // all seen: the resync

  World o;
  o.OwnedBy(JobPhase::kAdmitted, "c1", 1);
  o.Workload("c1", 1).admitted = true;
  o.in.expected = {{"c1", "Job"}};
  Plan run = Decide(o.Input());
  CHECK(run.step == "run");
  CHECK(run.actions.empty());
  CHECK(run.requeue_ms == DecideOptions{}.retry_ms);
  o.in.expected.clear();  // lapsed: created again
  CHECK(Count(Decide(o.Input()), Verb::kCreate, "Job", "c1") == 1);
}

TEST_CASE("step 1: fencing deletes older epochs, and jobs and copies outside the owner", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kRunning;
  w.job.epoch = 3;
  w.job.cluster = "c2";
  w.Intent("c2", "Workload", 3);
  w.Intent("c2", "Job", 3);
  w.Workload("c2", 3).admitted = true;
  w.RemoteJob("c2", 3, RemoteJobState::kRunning);
  w.RemoteJob("c1", 2, RemoteJobState::kRunning);  // a zombie from epoch 2
  w.Workload("c1", 2).admitted = true;
  w.RemoteJob("c3", 3, RemoteJobState::kSuspended);  // cannot be: never outside the owner
  Plan p = Decide(w.Input());
  CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(p, Verb::kDelete, "Job", "c3") == 1);
  CHECK(Count(p, Verb::kDelete, "Job", "c2") == 0);
  CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 0);
  CHECK(p.actions.front().verb == Verb::kDelete);

  // A loser's copy at the current epoch with no row: its create landed after
  // its withdrawal was confirmed. It would hold quota in c3 while the job runs.
  w.Workload("c3", 3).admitted = true;
  Plan stray = Decide(w.Input());
  CHECK(Count(stray, Verb::kDelete, "Workload", "c3") == 1);
  CHECK(Count(stray, Verb::kDelete, "Workload", "c2") == 0);
}

TEST_CASE("step 1: an earlier run deleted while the job's new run holds the lease asks for how it ended",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kRunning, "c2", 2);
  w.Workload("c2", 2).admitted = true;
  w.RemoteJob("c2", 2, RemoteJobState::kRunning);
  // Shown running: the view may be behind; the delete's answer tells.
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  auto job_deletes = [](const Plan& p, const std::string& cluster) {
    std::vector<const Action*> out;
    for (const Action& a : p.actions) {
      if (a.verb == Verb::kDelete && a.kind == "Job" && a.cluster == cluster) out.push_back(&a);
    }
    return out;
  };
  Plan p = Decide(w.Input());
  auto deletes = job_deletes(p, "c1");
  REQUIRE(deletes.size() == 1);
  CHECK(deletes[0]->tell_end_when_deleted);

  // Not while nobody holds the lease (an earlier run that succeeded is then the job's end: step 1, first).
  World queued;
  queued.job.phase = JobPhase::kQueued;
  queued.job.epoch = 2;
  queued.RemoteJob("c1", 1, RemoteJobState::kFailed);
  Plan unleased = Decide(queued.Input());
  const auto queued_deletes = job_deletes(unleased, "c1");
  REQUIRE(queued_deletes.size() == 1);  // (not a loop over none)
  CHECK_FALSE(queued_deletes[0]->tell_end_when_deleted);

  ObservedJob ended;
  ended.epoch = 1;
  ended.state = RemoteJobState::kSucceeded;
  ended.reason = "CompletionsReached";
  CHECK(EarlierRunEndedText(w.job, "c1", ended) ==
        "the run in c1 at epoch 1, out of gantry's sight when the job was dispatched again, succeeded there "
        "meanwhile: CompletionsReached; its objects are deleted, and the job's run at epoch 2 in c2 goes on");
}

TEST_CASE("step 2: a finished job's earlier run in another cluster, deleted, asks for how it ended: the job may have "
          "run twice",
          "[dispatch][decide]") {
  // Succeeded at epoch 2 in c2; c1, out of sight when the job moved on, is
  // back and shows the epoch-1 run (ended, or not: the delete's answer tells).
  World w;
  w.OwnedBy(JobPhase::kSucceeded, "c2", 2);
  w.job.finished_ms = w.in.now_ms - 1'000;
  w.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  w.RemoteJob("c2", 2, RemoteJobState::kSucceeded);
  auto tells = [](const Plan& p, const std::string& cluster) {
    int n = 0, told = 0;
    for (const Action& a : p.actions) {
      if (a.verb != Verb::kDelete || a.kind != "Job" || a.cluster != cluster) continue;
      ++n;
      told += a.tell_end_when_deleted ? 1 : 0;
    }
    return std::make_pair(n, told);
  };
  Plan p = Decide(w.Input());
  CHECK(tells(p, "c1") == std::make_pair(1, 1));
  CHECK(tells(p, "c2").second == 0);  // the job's own run
  ObservedJob ended;
  ended.epoch = 1;
  ended.state = RemoteJobState::kSucceeded;
  ended.reason = "CompletionsReached";
  CHECK(EarlierRunEndedText(w.job, "c1", ended) ==
        "the run in c1 at epoch 1, out of gantry's sight when the job was dispatched again, succeeded there "
        "meanwhile: CompletionsReached; its objects are deleted, and the job had succeeded at epoch 2 in c2: it "
        "ran twice");
  SECTION("not where the job's end came from: an earlier run that succeeded unseen is its own end there") {
    w.job.cluster = "c1";
    CHECK(tells(Decide(w.Input()), "c1") == std::make_pair(1, 0));
  }
  SECTION("not for a cancelled job") {
    w.job.phase = JobPhase::kCancelled;
    CHECK(tells(Decide(w.Input()), "c1") == std::make_pair(1, 0));
  }
}

TEST_CASE("step 1: a copy of an epoch newer than the job's is deleted, unless a run of that epoch is beside it",
          "[dispatch][decide]") {
  // Nominating at epoch 1 with a copy in c1; an operator raised its
  // gantry.dev/epoch to 7: it holds the name (and quota) the job's copy needs.
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 5'000;
  w.Intent("c1", "Workload", 1);
  w.Workload("c1", 7).admitted = true;
  w.in.resource = "jobs.batch";
  Plan p = Decide(w.Input());
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
  // No lease on it either: not this epoch's admission.
  CHECK((!p.write || !p.write->phase || *p.write->phase != JobPhase::kAdmitted));

  SECTION("with a real job of epoch 7 in c1: the copy is that run's, which takes the lease (step 0)") {
    w.RemoteJob("c1", 7, RemoteJobState::kRunning);
    Plan q = Decide(w.Input());
    CHECK(q.step == "store-behind");
    CHECK(Count(q, Verb::kDelete, "Workload", "c1") == 0);
    CHECK(Count(q, Verb::kDelete, "Job", "c1") == 0);
  }
  SECTION("the current epoch's copy is kept") {
    w.in.observed["c1"].workloads[0].epoch = 1;
    CHECK(Count(Decide(w.Input()), Verb::kDelete, "Workload") == 0);
  }
  SECTION("the owner's copy of a leased job's run, its epoch edited there: kept, and the run goes on") {
    w.job.phase = JobPhase::kRunning;
    w.job.cluster = "c1";
    w.Intent("c1", "Job", 1);
    w.RemoteJob("c1", 1, RemoteJobState::kRunning);
    Plan q = Decide(w.Input());
    CHECK(Count(q, Verb::kDelete, "Workload", "c1") == 0);
    CHECK(Count(q, Verb::kDelete, "Job", "c1") == 0);
  }
  SECTION("of a kind gantry does not watch (its run beside would not show): kept") {
    w.in.resource.clear();
    CHECK(Count(Decide(w.Input()), Verb::kDelete, "Workload") == 0);
  }
}

TEST_CASE("step 10: an unreachable owner is waited for, then onClusterLoss applies", "[dispatch][decide]") {
  for (const char* policy : {"Requeue", "Fail", "Wait"}) {
    World w;
    w.spec = Spec(policy);
    w.in.options.cluster_lost_timeout_ms = 60'000;
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    w.clusters["c1"].ready = false;
    w.clusters["c1"].lost_for_ms = 30'000;
    Plan before = Decide(w.Input());
    CHECK_FALSE(before.write);
    CHECK(before.requeue_ms > 0);
    w.clusters["c1"].lost_for_ms = 60'000;
    Plan after = Decide(w.Input());
    INFO(policy);
    REQUIRE(after.write);
    CHECK(after.actions.empty());  // nothing can reach the lost cluster
    if (std::string(policy) == "Requeue") {
      CHECK(*after.write->phase == JobPhase::kQueued);
      CHECK(*after.write->cluster == "");
      CHECK_FALSE(FindIntent(*after.write, "c1", "Job")->present);
    } else if (std::string(policy) == "Fail") {
      CHECK(*after.write->phase == JobPhase::kFailed);
    } else {
      CHECK_FALSE(after.write->phase);
      CHECK_THAT(*after.write->conditions_json, Catch::Contains("OwnerLost"));
    }
  }
}

TEST_CASE("step 10: the job's conditions are read, not searched: a message that names a reason is not that reason",
          "[dispatch][decide]") {
  World w;
  w.spec = Spec("Wait");
  w.in.options.cluster_lost_timeout_ms = 60'000;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.clusters["c1"].ready = false;
  w.clusters["c1"].lost_for_ms = 60'000;
  nlohmann::json c = {{"type", "OwnerUnreachable"}, {"status", "True"}, {"reason", "Unreachable"},
                      {"message", "not OwnerLost yet, nor CredentialsRefused"}};
  w.job.conditions_json = nlohmann::json::array({c}).dump();
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->conditions_json);
  CHECK(nlohmann::json::parse(*p.write->conditions_json)[0]["reason"] == "OwnerLost");
}

TEST_CASE("step 10: a Wait job's OwnerLost condition is lifted when its owner answers again (stale condition)",
          "[dispatch][decide]") {
  World w;
  w.spec = Spec("Wait");
  w.in.options.cluster_lost_timeout_ms = 60'000;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.Workload("c1", 1).admitted = true;
  ObservedJob& j = w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  w.job.remote_status = j.summary;
  w.clusters["c1"].ready = false;
  w.clusters["c1"].lost_for_ms = 60'000;
  Plan lost = Decide(w.Input());
  REQUIRE(lost.write);
  REQUIRE(lost.write->conditions_json);
  w.job.conditions_json = *lost.write->conditions_json;
  w.job.message = *lost.write->message;
  CHECK_FALSE(Decide(w.Input()).write);  // flagged once

  // Back, still running: the flag goes, the job runs on at the same epoch.
  w.clusters["c1"].ready = true;
  w.clusters["c1"].lost_for_ms = 0;
  Plan back = Decide(w.Input());
  REQUIRE(back.write);
  CHECK(*back.write->conditions_json == "[]");
  CHECK(*back.write->message == "running in c1");
  CHECK_FALSE(back.write->phase);
  CHECK_FALSE(back.write->epoch);
  REQUIRE(back.write->events.size() == 1);
  CHECK(back.write->events[0].reason == "ClusterReturned");
  CHECK(back.actions.empty());

  // Back, and it finished meanwhile: Succeeded, without the flag.
  w.in.observed["c1"].jobs[0].state = RemoteJobState::kSucceeded;
  Plan done = Decide(w.Input());
  REQUIRE(done.write);
  CHECK(*done.write->phase == JobPhase::kSucceeded);
  CHECK(*done.write->conditions_json == "[]");
  CHECK_THAT(*done.write->message, Catch::Contains("succeeded in c1"));
  CHECK_THAT(*done.write->message, !Catch::Contains("before gantry saw it"));  // no time given
  // It ended long before it was seen: its own time is told, as the job's
  // completionTime is when gantry saw the end.
  const int64_t now_was = w.in.now_ms;
  w.in.now_ms = *ParseRfc3339("2026-12-07T12:05:03Z");
  w.in.observed["c1"].jobs[0].ended_ms = *ParseRfc3339("2026-12-07T10:05:03Z");
  Plan late = Decide(w.Input());
  REQUIRE(late.write);
  CHECK_THAT(*late.write->message,
             Catch::Contains("; the run ended at 2026-12-07T10:05:03Z by c1's clock, 2h before gantry saw it"));
  w.in.observed["c1"].jobs[0].ended_ms = w.in.now_ms - 5'000;  // just now: nothing to tell
  CHECK_THAT(*Decide(w.Input()).write->message, !Catch::Contains("before gantry saw it"));
  // Just now by gantry's clock, from a cluster whose clock is 2 minutes
  // behind: not late; the offset its probes measured is taken off.
  w.clusters["c1"].clock_offset_ms = -120'000;
  w.in.observed["c1"].jobs[0].ended_ms = w.in.now_ms - 125'000;
  CHECK_THAT(*Decide(w.Input()).write->message, !Catch::Contains("before gantry saw it"));
  // Really late from that cluster: told, with its clock's offset.
  w.in.observed["c1"].jobs[0].ended_ms = w.in.now_ms - 3'720'000;
  CHECK_THAT(*Decide(w.Input()).write->message,
             Catch::Contains("by c1's clock, 1h before gantry saw it (that clock is 2m behind gantry's)"));
  // Not measured yet (a probe since the start has not told it): in step, as said.
  w.clusters["c1"].clock_offset_ms.reset();
  CHECK_THAT(*Decide(w.Input()).write->message,
             Catch::Contains("before gantry saw it (if that clock is in step with gantry's: its offset is not "
                             "measured yet)"));
  w.in.now_ms = now_was;
  w.in.observed["c1"].jobs[0].ended_ms = 0;

  // Never flagged: no extra write (its create on record, as it is once seen).
  w.job.conditions_json = "[]";
  w.in.observed["c1"].jobs[0].state = RemoteJobState::kRunning;
  for (RemoteIntent& i : w.in.intents) {
    if (i.kind == "Job") i.created_ms = 1'000;
  }
  CHECK_FALSE(Decide(w.Input()).write);
}

TEST_CASE("step 10: an owner that refuses the credentials waits its own timeout, and the job says why",
          "[dispatch][decide]") {
  for (const char* policy : {"Requeue", "Fail", "Wait"}) {
    INFO(policy);
    World w;
    w.spec = Spec(policy);
    w.in.options.cluster_lost_timeout_ms = 60'000;
    w.in.options.credentials_refused_timeout_ms = 3'600'000;
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    w.Workload("c1", 1).admitted = true;
    ObservedJob& j = w.RemoteJob("c1", 1, RemoteJobState::kRunning);
    w.job.remote_status = j.summary;
    w.job.message = "running in c1";
    w.clusters["c1"].ready = false;
    w.clusters["c1"].credentials_refused = true;
    w.clusters["c1"].lost_for_ms = 10 * 60'000;  // past clusterLostTimeout
    Plan refused = Decide(w.Input());
    CHECK(refused.step == "owner-lost");
    CHECK(refused.actions.empty());
    CHECK(refused.requeue_ms == DecideOptions{}.resync_ms);  // woken when it ends; only the timeout is looked out for
    REQUIRE(refused.write);
    CHECK_FALSE(refused.write->phase);  // still Running, same epoch, same owner
    CHECK_FALSE(refused.write->epoch);
    CHECK_FALSE(refused.write->cluster);
    CHECK_THAT(*refused.write->conditions_json, Catch::Contains("CredentialsRefused"));
    CHECK_THAT(*refused.write->message, Catch::Contains("refuses gantry's credentials"));
    REQUIRE(refused.write->events.size() == 1);
    CHECK(refused.write->events[0].reason == "CredentialsRefused");
    w.job.conditions_json = *refused.write->conditions_json;
    w.job.message = *refused.write->message;
    CHECK_FALSE(Decide(w.Input()).write);  // flagged once

    // Working credentials again: the flag goes, the job runs on.
    World back_world = w;
    back_world.clusters["c1"].ready = true;
    back_world.clusters["c1"].credentials_refused = false;
    back_world.clusters["c1"].lost_for_ms = 0;
    Plan back = Decide(back_world.Input());
    REQUIRE(back.write);
    CHECK(*back.write->conditions_json == "[]");
    CHECK(*back.write->message == "running in c1");
    CHECK_FALSE(back.write->epoch);

    // Ready again but not synced yet: the flag stays until the watches catch up.
    World resyncing = back_world;
    resyncing.synced.erase("c1");
    CHECK_FALSE(Decide(resyncing.Input()).write);

    // Unreachable for another reason now: the flag says so instead, and is
    // lifted when the owner answers.
    World cut = w;
    cut.clusters["c1"].credentials_refused = false;
    cut.clusters["c1"].lost_for_ms = 30'000;
    Plan unflagged = Decide(cut.Input());
    REQUIRE(unflagged.write);
    CHECK_THAT(*unflagged.write->conditions_json, !Catch::Contains("CredentialsRefused"));
    CHECK_THAT(*unflagged.write->conditions_json, Catch::Contains("OwnerUnreachable"));
    CHECK(*unflagged.write->message == "owner cluster c1 unreachable");
    CHECK_FALSE(unflagged.write->phase);
    cut.job.conditions_json = *unflagged.write->conditions_json;
    cut.job.message = *unflagged.write->message;
    CHECK_FALSE(Decide(cut.Input()).write);  // said once
    cut.clusters["c1"].ready = true;
    cut.clusters["c1"].lost_for_ms = 0;
    Plan returned = Decide(cut.Input());
    REQUIRE(returned.write);
    CHECK(*returned.write->conditions_json == "[]");
    CHECK(*returned.write->message == "running in c1");

    // Refusing past its own timeout: onClusterLoss applies, saying why.
    w.clusters["c1"].lost_for_ms = 3'600'000;
    Plan lost = Decide(w.Input());
    REQUIRE(lost.write);
    const std::string said = lost.write->message ? *lost.write->message : "";
    CHECK_THAT(said, Catch::Contains("has refused gantry's credentials for 3600 s"));
    if (std::string(policy) == "Requeue") CHECK(*lost.write->phase == JobPhase::kQueued);
    if (std::string(policy) == "Fail") CHECK(*lost.write->phase == JobPhase::kFailed);
    if (std::string(policy) == "Wait") CHECK_THAT(*lost.write->conditions_json, Catch::Contains("OwnerLost"));

    // 0: never lost while it refuses.
    w.in.options.credentials_refused_timeout_ms = 0;
    w.clusters["c1"].lost_for_ms = 1'000 * 3'600'000LL;
    CHECK_FALSE(Decide(w.Input()).write);
  }
}

TEST_CASE("step 10: an owner that refuses gantry a watch of the job's objects holds the job, with a condition that "
          "is lifted when it allows it again",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.clusters["c1"].watch_refused = "listing workloads answered 403: forbidden";
  w.clusters["c1"].watch_refused_for_ms = 60'000;
  w.synced.erase("c1");  // the observer unsyncs a cluster that refuses a list
  Plan p = Decide(w.Input());
  CHECK(p.step == "owner-lost");
  REQUIRE(p.write);
  CHECK_FALSE(p.write->phase);  // nothing moves: the cluster answers, the job most likely runs on
  CHECK(p.actions.empty());
  REQUIRE(p.write->conditions_json);
  CHECK(nlohmann::json::parse(*p.write->conditions_json)[0]["reason"] == "WatchRefused");
  CHECK(p.write->message->find("403") == std::string::npos);  // the details are the cluster's, not the job's
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events[0].reason == "WatchRefused");

  // Flagged already: nothing new is written.
  w.job.conditions_json = *p.write->conditions_json;
  w.job.message = *p.write->message;
  Plan again = Decide(w.Input());
  CHECK_FALSE(again.write);
  CHECK(again.requeue_ms == w.in.options.resync_ms);  // woken when it ends; only the timeout is looked out for

  // Refusing past credentialsRefusedTimeout, or past the grace of a cluster
  // declared lost: onClusterLoss applies, as for refused credentials.
  World past = w;
  past.clusters["c1"].watch_refused_for_ms = past.in.options.credentials_refused_timeout_ms;
  Plan moved = Decide(past.Input());
  REQUIRE(moved.write);
  REQUIRE(moved.write->phase);
  CHECK(*moved.write->phase == JobPhase::kQueued);
  CHECK_THAT(*moved.write->message, Catch::Contains("has not let gantry list what it watches there"));
  World declared = w;
  declared.clusters["c1"].config.declared_lost = true;
  Plan declared_moved = Decide(declared.Input());
  REQUIRE(declared_moved.write);
  REQUIRE(declared_moved.write->phase);
  CHECK(*declared_moved.write->phase == JobPhase::kQueued);

  // Now out of reach (the observer keeps its reason meanwhile): the flag says so instead.
  World gone = w;
  gone.clusters["c1"].ready = false;
  gone.clusters["c1"].lost_for_ms = 1'000;
  Plan out = Decide(gone.Input());
  REQUIRE(out.write);
  CHECK(nlohmann::json::parse(*out.write->conditions_json)[0]["reason"] == "Unreachable");

  // Allowed again and synced: the condition is lifted.
  World back = w;
  back.clusters["c1"].watch_refused.clear();
  back.synced.insert("c1");
  back.Workload("c1", 1).admitted = true;
  back.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan lifted = Decide(back.Input());
  REQUIRE(lifted.write);
  CHECK(*lifted.write->conditions_json == "[]");
}

TEST_CASE("steps 11-13: eviction requeues, the real job is created, runs and finishes", "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c1", 1);
  ObservedWorkload& wl = w.Workload("c1", 1);
  wl.admitted = true;
  Plan create = Decide(w.Input());
  CHECK(create.step == "run");
  CHECK(Count(create, Verb::kCreate, "Job", "c1") == 1);

  ObservedJob& j = w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  j.summary = "active 2";
  Plan run = Decide(w.Input());
  REQUIRE(run.write);
  CHECK(*run.write->phase == JobPhase::kRunning);
  CHECK(*run.write->remote_status == "active 2");

  w.in.observed["c1"].workloads[0].evicted = true;
  Plan evicted = Decide(w.Input());
  REQUIRE(evicted.write);
  CHECK(*evicted.write->phase == JobPhase::kQueued);
  CHECK(evicted.write->events.at(0).reason == "Evicted");

  w.in.observed["c1"].workloads[0].evicted = false;
  w.in.observed["c1"].jobs[0].state = RemoteJobState::kFailed;
  w.in.observed["c1"].jobs[0].reason = "BackoffLimitExceeded";
  Plan failed = Decide(w.Input());
  REQUIRE(failed.write);
  CHECK(*failed.write->phase == JobPhase::kFailed);
  CHECK_THAT(*failed.write->message, Catch::Contains("BackoffLimitExceeded"));
  CHECK_FALSE(FindIntent(*failed.write, "c1", "Job")->present);
  // The same pass withdraws the job and its Workload (after the write that
  // marks them absent), and looks again if no confirmation wakes it.
  CHECK(Count(failed, Verb::kDelete, "Job", "c1") == 1);
  CHECK(Count(failed, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(failed.requeue_ms > 0);
}

TEST_CASE("step 11: an evicted at-most-once job fails instead of running twice (evicted at-most-once requeued)",
          "[dispatch][decide]") {
  for (const char* policy : {"Fail", "Wait"}) {
    INFO(policy);
    World w;
    w.spec = Spec(policy);
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    ObservedWorkload& wl = w.Workload("c1", 1);
    wl.evicted = true;
    wl.reason = "Preempted";
    w.RemoteJob("c1", 1, RemoteJobState::kSuspended);
    Plan evicted = Decide(w.Input());
    CHECK(evicted.step == "evicted");
    REQUIRE(evicted.write);
    CHECK(*evicted.write->phase == JobPhase::kFailed);
    CHECK_FALSE(evicted.write->epoch);
    CHECK_THAT(*evicted.write->message, Catch::Contains("Preempted") && Catch::Contains("at-most-once"));
    CHECK(evicted.write->events.at(0).reason == "Evicted");
    CHECK_FALSE(FindIntent(*evicted.write, "c1", "Job")->present);

    // Admitted, the Workload gone and no job seen: it may still have run.
    w.job.phase = JobPhase::kAdmitted;
    w.in.observed["c1"] = ClusterObservation{};
    Plan gone = Decide(w.Input());
    REQUIRE(gone.write);
    CHECK(*gone.write->phase == JobPhase::kFailed);
    CHECK(gone.write->events.at(0).reason == "WorkloadGone");
  }
}

TEST_CASE("step 11: an admission check Rejected on the owner after a lease at QuotaReserved is an eviction",
          "[dispatch][decide]") {
  for (const char* policy : {"Requeue", "Fail"}) {
    INFO(policy);
    World w;
    w.spec = Spec(policy);
    w.in.options.lease_on_quota_reserved = true;
    w.OwnedBy(JobPhase::kAdmitted, "c1", 1);
    ObservedWorkload& wl = w.Workload("c1", 1);
    wl.quota_reserved = true;
    w.RemoteJob("c1", 1, RemoteJobState::kSuspended);  // waits for Admitted
    CHECK(Decide(w.Input()).step == "run");

    // Kueue deactivates the copy: evicted, quota released, spec.active false.
    wl.quota_reserved = false;
    wl.active = false;
    wl.evicted = true;
    wl.reason = "DeactivatedDueToAdmissionCheck";
    Plan p = Decide(w.Input());
    CHECK(p.step == "evicted");
    REQUIRE(p.write);
    CHECK(*p.write->phase == (std::string(policy) == "Requeue" ? JobPhase::kQueued : JobPhase::kFailed));
    CHECK_THAT(*p.write->message, Catch::Contains("DeactivatedDueToAdmissionCheck"));
    CHECK(p.write->events.at(0).reason == "Evicted");
    CHECK_FALSE(FindIntent(*p.write, "c1", "Job")->present);

    // Deactivated, its eviction not written yet: an eviction all the same.
    World early = w;
    early.in.observed["c1"].workloads[0].evicted = false;
    Plan q = Decide(early.Input());
    CHECK(q.step == "evicted");
    REQUIRE(q.write);
    CHECK(*q.write->phase == *p.write->phase);

    // Rejected soon after the epoch began: a job that may be dispatched
    // again waits out the epoch's floor first (as in step 8), so that a
    // check that rejects it every time does not make an epoch every few
    // seconds; an at-most-once job fails at once as before.
    World soon = w;
    soon.job.epoch = 2;
    for (RemoteIntent& i : soon.in.intents) i.epoch = 2;
    soon.in.observed["c1"].workloads[0].epoch = 2;
    soon.in.observed["c1"].jobs[0].epoch = 2;
    soon.job.nominated_ms = soon.in.now_ms - 2'000;
    Plan r = Decide(soon.Input());
    CHECK(r.step == "evicted");
    if (std::string(policy) == "Requeue") {
      CHECK_FALSE(r.write);
      CHECK(r.requeue_ms == 2 * soon.in.options.redispatch_after_rejection_ms - 2'000);
      soon.in.now_ms += r.requeue_ms;
      Plan due = Decide(soon.Input());
      REQUIRE(due.write);
      CHECK(*due.write->phase == JobPhase::kQueued);

      // Rejected while Running (its checks had passed, then one failed): no
      // loop to hold back, requeued at once.
      World running = soon;
      running.in.now_ms -= r.requeue_ms;  // 2 s into the epoch again
      running.job.phase = JobPhase::kRunning;
      Plan now = Decide(running.Input());
      REQUIRE(now.write);
      CHECK(*now.write->phase == JobPhase::kQueued);
    } else {
      REQUIRE(r.write);
      CHECK(*r.write->phase == JobPhase::kFailed);
    }
  }
}

TEST_CASE("steps 2-3: cancel withdraws everywhere and completes only when every cluster confirmed",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kCancelling;
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1);
  w.Intent("c2", "Workload", 1);
  w.Workload("c1", 1);
  w.clusters["c2"].ready = false;  // partitioned
  Plan p = Decide(w.Input());
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
  REQUIRE(p.write);
  CHECK_FALSE(p.write->phase);
  CHECK_THAT(*p.write->message, Catch::Contains("c2"));
  CHECK(p.requeue_ms > 0);

  // Both marked absent, c1 shows nothing now, c2 is back and shows nothing.
  World done;
  done.job.phase = JobPhase::kCancelling;
  done.job.epoch = 1;
  done.Intent("c1", "Workload", 1, false);
  done.Intent("c2", "Workload", 1, false);
  Plan q = Decide(done.Input());
  REQUIRE(q.write);
  CHECK(*q.write->phase == JobPhase::kCancelled);
  CHECK(q.write->drop_intents.size() == 2);

  World never;  // cancelled before any dispatch
  never.job.phase = JobPhase::kCancelling;
  Plan r = Decide(never.Input());
  REQUIRE(r.write);
  CHECK(*r.write->phase == JobPhase::kCancelled);
}

TEST_CASE("a job that ends other than by its run's end says its remote summary is from before the end",
          "[dispatch][decide]") {
  const std::string running = "active 1, succeeded 0, failed 0";
  SECTION("cancelled") {
    World w;
    w.job.phase = JobPhase::kCancelling;
    w.job.epoch = 1;
    w.job.remote_status = running;
    w.Intent("c1", "Workload", 1, false);
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    CHECK(*p.write->phase == JobPhase::kCancelled);
    REQUIRE(p.write->remote_status);
    CHECK(*p.write->remote_status == "when last seen, before the job ended: " + running);
    // Said once: a summary that says so already is left as it is.
    w.job.remote_status = *p.write->remote_status;
    Plan again = Decide(w.Input());
    REQUIRE(again.write);
    CHECK_FALSE(again.write->remote_status);
  }
  SECTION("evicted, at most once") {
    World w;
    w.spec = Spec("Fail");
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    w.job.remote_status = running;
    ObservedWorkload& wl = w.Workload("c1", 1);
    wl.evicted = true;
    wl.reason = "Preempted";
    ObservedJob& suspended = w.RemoteJob("c1", 1, RemoteJobState::kSuspended);
    Plan evicted = Decide(w.Input());
    REQUIRE(evicted.write);
    CHECK(*evicted.write->phase == JobPhase::kFailed);
    REQUIRE(evicted.write->remote_status);
    CHECK(*evicted.write->remote_status == "when last seen, before the job ended: " + running);
    // The owner's view in this pass shows newer counts than the job has stored: those.
    suspended.summary = "active 0, succeeded 0, failed 1";
    Plan newer = Decide(w.Input());
    REQUIRE(newer.write);
    REQUIRE(newer.write->remote_status);
    CHECK(*newer.write->remote_status == "when last seen, before the job ended: active 0, succeeded 0, failed 1");
  }
  SECTION("the run's own end seen: its summary, as it ended") {
    World w;
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    w.job.remote_status = running;
    w.Workload("c1", 1);
    w.RemoteJob("c1", 1, RemoteJobState::kSucceeded).summary = "active 0, succeeded 1, failed 0";
    Plan done = Decide(w.Input());
    REQUIRE(done.write);
    CHECK(*done.write->phase == JobPhase::kSucceeded);
    REQUIRE(done.write->remote_status);
    CHECK(*done.write->remote_status == "active 0, succeeded 1, failed 0");
  }
}

TEST_CASE("step 2: a finished job's rows are dropped once its cluster shows nothing", "[dispatch][decide]") {
  World w;
  w.FinishedOn("c1", 1);
  w.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  Plan p = Decide(w.Input());
  CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);
  REQUIRE(p.write);
  REQUIRE(p.write->drop_intents.size() == 1);
  CHECK(p.write->drop_intents[0].second == "Workload");
  CHECK(p.requeue_ms > 0);
}

TEST_CASE("step 2: a withdrawn copy created a moment ago and not seen yet keeps its row until it is seen or lapses",
          "[dispatch][decide]") {
  // The lease went to c1 right after the copy in c2 was created: c2's view
  // (a watch resuming after c2 came back) does not show the copy yet.
  World w;
  w.FinishedOn("c1", 1);
  w.Intent("c2", "Workload", 1, false);
  w.in.expected = {{"c2", "Workload"}};
  Plan p = Decide(w.Input());
  const bool c2_dropped = p.write && std::count(p.write->drop_intents.begin(), p.write->drop_intents.end(),
                                                std::make_pair(std::string("c2"), std::string("Workload"))) > 0;
  CHECK_FALSE(c2_dropped);
  CHECK(p.requeue_ms > 0);  // looked at again, not forgotten

  // Seen now: deleted, then confirmed gone.
  w.in.expected.clear();
  w.Workload("c2", 1);
  Plan seen = Decide(w.Input());
  CHECK(Count(seen, Verb::kDelete, "Workload", "c2") == 1);

  // The expectation lapsed and the view still shows nothing: the row goes.
  World lapsed;
  lapsed.FinishedOn("c1", 1);
  lapsed.Intent("c2", "Workload", 1, false);
  Plan q = Decide(lapsed.Input());
  REQUIRE(q.write);
  CHECK(std::count(q.write->drop_intents.begin(), q.write->drop_intents.end(),
                   std::make_pair(std::string("c2"), std::string("Workload"))) == 1);
}

TEST_CASE("step 2: a withdrawn copy's row stays while its cluster's view is behind, and goes once it is current",
          "[dispatch][decide]") {
  // c2's watches broke and have not relisted yet: a copy created there since
  // would not show, and the expectation of it may have lapsed meanwhile.
  World w;
  w.FinishedOn("c1", 1);
  w.Intent("c2", "Workload", 1, false);
  w.behind = {"c2"};
  auto dropped = [](const Plan& p, const char* cluster) {
    return p.write && std::count(p.write->drop_intents.begin(), p.write->drop_intents.end(),
                                 std::make_pair(std::string(cluster), std::string("Workload"))) > 0;
  };
  Plan p = Decide(w.Input());
  CHECK_FALSE(dropped(p, "c2"));
  CHECK(dropped(p, "c1"));  // c1's view is current: its rows go
  CHECK(p.requeue_ms > 0);  // looked at again, not forgotten

  // Relisted, still nothing there: confirmed gone.
  w.behind.clear();
  Plan q = Decide(w.Input());
  CHECK(dropped(q, "c2"));

  // A cancel waiting on such a cluster says which.
  World cancel;
  cancel.job.phase = JobPhase::kCancelling;
  cancel.job.epoch = 1;
  cancel.Intent("c2", "Workload", 1, false);
  cancel.behind = {"c2"};
  Plan c = Decide(cancel.Input());
  REQUIRE(c.write);
  CHECK_FALSE(c.write->phase);
  CHECK(*c.write->message == "waiting for cluster(s) c2 to confirm deletion");
  cancel.behind.clear();
  Plan done = Decide(cancel.Input());
  REQUIRE(done.write);
  CHECK(done.write->phase == JobPhase::kCancelled);
}

TEST_CASE("step 12 with finishedRetentionSeconds: the owner keeps the finished job's objects until its time is up",
          "[dispatch][decide]") {
  World w;
  w.in.options.finished_retention_ms = 60'000;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.Workload("c1", 1).finished = true;
  w.RemoteJob("c1", 1, RemoteJobState::kFailed);
  w.Workload("c2", 1);  // a straggler copy elsewhere still goes
  w.Intent("c2", "Workload", 1, false);
  Plan finish = Decide(w.Input());
  REQUIRE(finish.step == "finish");
  REQUIRE(finish.write);
  CHECK(*finish.write->phase == JobPhase::kFailed);
  CHECK(finish.write->upsert_intents.empty());  // the owner's rows stay present
  CHECK(Count(finish, Verb::kDelete, "Workload", "c1") == 0);
  CHECK(Count(finish, Verb::kDelete, "Job", "c1") == 0);
  CHECK(Count(finish, Verb::kDelete, "Workload", "c2") == 1);
  CHECK(std::any_of(finish.write->events.begin(), finish.write->events.end(),
                    [](const JobEvent& e) { return e.reason == "Retained"; }));

  // Step 2 while the time runs: nothing to do but wait for its end.
  w.job.phase = JobPhase::kFailed;
  w.job.finished_ms = w.in.now_ms;
  w.in.observed["c2"].workloads.clear();
  w.in.now_ms += 10'000;
  Plan wait = Decide(w.Input());
  CHECK(wait.actions.empty());
  REQUIRE(wait.write);  // the straggler's row, confirmed gone
  CHECK(wait.write->upsert_intents.empty());
  CHECK(wait.write->drop_intents == std::vector<std::pair<std::string, std::string>>{{"c2", "Workload"}});
  CHECK(wait.requeue_ms == 50'000);

  // Its time is up: withdrawn like any finished job.
  w.in.intents.erase(std::remove_if(w.in.intents.begin(), w.in.intents.end(),
                                    [](const RemoteIntent& i) { return i.cluster == "c2"; }),
                     w.in.intents.end());
  w.in.now_ms += 50'000;
  Plan done = Decide(w.Input());
  CHECK(Count(done, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(done, Verb::kDelete, "Job", "c1") == 1);
  REQUIRE(done.write);
  CHECK(done.write->upsert_intents.size() == 2);  // marked absent
  CHECK(done.requeue_ms == w.in.options.retry_ms);
}

TEST_CASE("step 3: a job that ended in its owner before its cancel was acted on keeps its result and retention",
          "[dispatch][decide]") {
  World w;
  w.in.options.finished_retention_ms = 60'000;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.job.phase = JobPhase::kCancelling;  // the cancel committed after the job ended there, before a pass saw it
  w.Workload("c1", 1).finished = true;
  w.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kSucceeded);
  CHECK(Count(p, Verb::kDelete, "Job", "c1") == 0);  // kept for finishedRetentionSeconds
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 0);
  std::vector<std::string> reasons;
  for (const auto& e : p.write->events) reasons.push_back(e.reason);
  CHECK(std::find(reasons.begin(), reasons.end(), "Succeeded") != reasons.end());
  CHECK(std::find(reasons.begin(), reasons.end(), "CancelTooLate") != reasons.end());

  SECTION("a kind gantry has no adapter for, whose end only its finished Workload tells: the same") {
    World generic;
    generic.OwnedBy(JobPhase::kRunning, "c1", 1);
    generic.job.phase = JobPhase::kCancelling;
    ObservedWorkload& wl = generic.Workload("c1", 1);
    wl.finished = true;
    wl.reason = "Succeeded";
    Plan q = Decide(generic.Input());
    REQUIRE(q.write);
    REQUIRE(q.write->phase);
    CHECK(*q.write->phase == JobPhase::kSucceeded);
  }

  // Once a cancel pass withdrew the job (its rows absent), an end seen after
  // is the cancel's own doing: the job is cancelled, its objects deleted.
  for (RemoteIntent& i : w.in.intents) i.present = false;
  Plan cancelled = Decide(w.Input());
  CHECK(Count(cancelled, Verb::kDelete, "Job", "c1") == 1);
  CHECK_FALSE((cancelled.write && cancelled.write->phase && *cancelled.write->phase == JobPhase::kSucceeded));
}

TEST_CASE("retention keeps nothing for a cancelled job, a job whose copy still runs, or a job from before it",
          "[dispatch][decide]") {
  auto kept_objects = [](World& w) {
    Plan p = Decide(w.Input());
    return 2 - Count(p, Verb::kDelete, "Workload", "c1") - Count(p, Verb::kDelete, "Job", "c1");
  };
  auto finished_world = [](JobPhase phase, RemoteJobState state, int64_t finished_ms) {
    World w;
    w.in.options.finished_retention_ms = 60'000;
    w.OwnedBy(phase, "c1", 1);
    w.job.finished_ms = finished_ms;
    w.Workload("c1", 1).finished = true;
    w.RemoteJob("c1", 1, state);
    return w;
  };
  World kept = finished_world(JobPhase::kSucceeded, RemoteJobState::kSucceeded, 990'000);
  CHECK(kept_objects(kept) == 2);  // the baseline: both kept
  World cancelled = finished_world(JobPhase::kCancelled, RemoteJobState::kSucceeded, 990'000);
  CHECK(kept_objects(cancelled) == 0);
  // Failed for its lost owner (onClusterLoss Fail), whose copy runs on there.
  World zombie = finished_world(JobPhase::kFailed, RemoteJobState::kRunning, 990'000);
  CHECK(kept_objects(zombie) == 0);
  // Finished before schema 006: no finish time, nothing kept.
  World old = finished_world(JobPhase::kSucceeded, RemoteJobState::kSucceeded, 0);
  CHECK(kept_objects(old) == 0);
  // An older epoch's job in the owner is fenced as ever.
  World stale = finished_world(JobPhase::kSucceeded, RemoteJobState::kSucceeded, 990'000);
  stale.RemoteJob("c1", 0, RemoteJobState::kRunning);
  Plan p = Decide(stale.Input());
  CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);
  // Without the setting nothing waits.
  World off = finished_world(JobPhase::kSucceeded, RemoteJobState::kSucceeded, 990'000);
  off.in.options.finished_retention_ms = 0;
  CHECK(kept_objects(off) == 0);

  // The owner out of sight (or not synced yet after a restart): what an
  // earlier pass kept (its rows present) stays kept, and nothing is written.
  World unseen = finished_world(JobPhase::kSucceeded, RemoteJobState::kSucceeded, 990'000);
  unseen.clusters["c1"].ready = false;
  Plan wait = Decide(unseen.Input());
  CHECK((!wait.write || wait.write->upsert_intents.empty()));
  CHECK(wait.requeue_ms == 50'000);

  // Failed for a lost owner: nothing is kept, whatever may still run there.
  World lost;
  lost.spec = Spec("Fail");
  lost.in.options.finished_retention_ms = 60'000;
  lost.OwnedBy(JobPhase::kRunning, "c1", 1);
  lost.clusters["c1"].ready = false;
  lost.clusters["c1"].lost_for_ms = lost.in.options.cluster_lost_timeout_ms;
  Plan fail = Decide(lost.Input());
  REQUIRE(fail.write);
  CHECK(*fail.write->phase == JobPhase::kFailed);
  CHECK(fail.write->upsert_intents.size() == 2);  // both marked absent
  CHECK(std::none_of(fail.write->events.begin(), fail.write->events.end(),
                     [](const JobEvent& e) { return e.reason == "Retained"; }));
}

TEST_CASE("step 12 for a generic kind: the owner's finished Workload ends the job, whatever its status says",
          "[dispatch][decide]") {
  auto running_with_finished_workload = [](const char* api_version, const char* kind, const char* reason) {
    World w;
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    ObservedWorkload& wl = w.Workload("c1", 1);
    wl.admitted = true;
    wl.finished = true;
    wl.reason = reason;
    ObservedJob& j = w.RemoteJob("c1", 1, RemoteJobState::kRunning);  // no Complete/Failed condition
    j.api_version = api_version;
    j.kind = kind;
    return w;
  };
  // A RayJob says it is done in status.jobDeploymentStatus, which Kueue
  // reads to finish the Workload; gantry reads the Workload.
  World ray = running_with_finished_workload("ray.io/v1", "RayJob", "Succeeded");
  Plan done = Decide(ray.Input());
  CHECK(done.step == "finish");
  REQUIRE(done.write);
  CHECK(*done.write->phase == JobPhase::kSucceeded);
  CHECK(Count(done, Verb::kDelete, "Job", "c1") == 1);  // withdrawn like a Job
  World failed = running_with_finished_workload("ray.io/v1", "RayJob", "Failed");
  Plan f = Decide(failed.Input());
  REQUIRE(f.write);
  CHECK(*f.write->phase == JobPhase::kFailed);
  // A batch Job says it with its own conditions: a finished Workload alone
  // does not end it (Kueue may finish a prebuilt Workload for other reasons).
  World batch = running_with_finished_workload("batch/v1", "Job", "OutOfSync");
  Plan run = Decide(batch.Input());
  CHECK(run.step == "run");
  CHECK((!run.write || !run.write->phase));
  // For a generic kind only Succeeded is a success: OutOfSync, FailedToStart
  // or OwnerNotFound end it as failed, not succeeded.
  for (const char* reason : {"OutOfSync", "FailedToStart", "OwnerNotFound"}) {
    INFO(reason);
    World other = running_with_finished_workload("ray.io/v1", "RayJob", reason);
    Plan p = Decide(other.Input());
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == JobPhase::kFailed);
  }
}

TEST_CASE("a job's own finishedRetentionSeconds takes the place of the daemon's, in both directions",
          "[dispatch][decide]") {
  auto finishing = [](int64_t daemon_ms, std::optional<int32_t> job_seconds) {
    World w;
    w.in.options.finished_retention_ms = daemon_ms;
    w.spec.finished_retention_seconds = job_seconds;
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    w.Workload("c1", 1).finished = true;
    w.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
    return w;
  };
  auto retained_event = [](const Plan& p) -> std::string {
    for (const JobEvent& e : p.write->events) {
      if (e.reason == "Retained") return e.message;
    }
    return "";
  };

  // The daemon keeps nothing; this job asks for 30 s.
  World longer = finishing(0, 30);
  Plan finish = Decide(longer.Input());
  REQUIRE(finish.step == "finish");
  REQUIRE(finish.write);
  CHECK(Count(finish, Verb::kDelete, "Workload", "c1") == 0);
  CHECK(Count(finish, Verb::kDelete, "Job", "c1") == 0);
  CHECK(retained_event(finish).find("for 30 s") != std::string::npos);
  longer.job.phase = JobPhase::kSucceeded;
  longer.job.finished_ms = longer.in.now_ms;
  longer.in.now_ms += 10'000;
  Plan wait = Decide(longer.Input());
  CHECK(wait.actions.empty());
  CHECK(wait.requeue_ms == 20'000);  // the job's 30 s, not the daemon's 0
  longer.in.now_ms += 20'000;
  Plan done = Decide(longer.Input());
  CHECK(Count(done, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(done, Verb::kDelete, "Job", "c1") == 1);

  // The daemon keeps an hour; this job asks for 0: deleted at once.
  World none = finishing(3'600'000, 0);
  Plan at_once = Decide(none.Input());
  REQUIRE(at_once.step == "finish");
  CHECK(Count(at_once, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(at_once, Verb::kDelete, "Job", "c1") == 1);
  CHECK(retained_event(at_once).empty());

  // Unset: the daemon's setting holds.
  World daemon = finishing(3'600'000, std::nullopt);
  Plan kept = Decide(daemon.Input());
  CHECK(Count(kept, Verb::kDelete, "Workload", "c1") == 0);
  CHECK(retained_event(kept).find("for 3600 s") != std::string::npos);

  // Unset, and the template asks the worker to delete the Job 45 s after it
  // finished (ttlSecondsAfterFinished, never sent): the engine keeps its
  // objects those 45 s itself. Its own retention, where set, still wins.
  World ttl = finishing(0, std::nullopt);
  ttl.spec.template_object["spec"]["ttlSecondsAfterFinished"] = 45;
  Plan by_ttl = Decide(ttl.Input());
  CHECK(Count(by_ttl, Verb::kDelete, "Job", "c1") == 0);
  CHECK(retained_event(by_ttl).find("for 45 s") != std::string::npos);
  World own = finishing(0, 0);
  own.spec.template_object["spec"]["ttlSecondsAfterFinished"] = 45;
  CHECK(Count(Decide(own.Input()), Verb::kDelete, "Job", "c1") == 1);
}

TEST_CASE("a job whose owner's Kueue will never start it fails or moves instead of waiting Admitted forever",
          "[dispatch][decide]") {
  auto leased = [](JobPhase phase) {
    World w;
    w.OwnedBy(phase, "c1", 1);
    ObservedWorkload& wl = w.Workload("c1", 1);
    wl.admitted = true;
    w.RemoteJob("c1", 1, RemoteJobState::kSuspended);
    return w;
  };
  // Its copy in c1 finished by Kueue, for reason.
  auto finished = [](World& w, const char* reason, const char* message) {
    ObservedWorkload& wl = w.in.observed["c1"].workloads[0];
    wl.finished = true;
    wl.reason = reason;
    wl.message = message;
  };
  SECTION("Kueue finished the Workload before the job started (OutOfSync): failed, saying so, not dispatched again") {
    World w = leased(JobPhase::kAdmitted);
    finished(w, "OutOfSync", "The prebuilt workload is out of sync with its user job");
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == JobPhase::kFailed);
    CHECK(p.write->message->find("before the job started (OutOfSync") != std::string::npos);
    CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);  // nothing kept of a run that never was
    CHECK(Count(p, Verb::kCreate, "Workload") == 0);
  }
  SECTION("its Workload finished for the job's own end while the view of the job is behind: it ended so") {
    World w = leased(JobPhase::kRunning);
    finished(w, "Succeeded", "Job finished successfully");
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == JobPhase::kSucceeded);
    finished(w, "Failed", "Job failed");
    Plan failed = Decide(w.Input());
    REQUIRE(failed.write);
    REQUIRE(failed.write->phase);
    CHECK(*failed.write->phase == JobPhase::kFailed);
    CHECK(failed.write->events.back().reason == "Failed");  // its run's end, not NotStarted
  }
  SECTION("its Workload is gone and the job waits suspended: moved like a Workload gone with its job") {
    World w = leased(JobPhase::kRunning);
    w.in.observed["c1"].workloads.clear();
    w.spec.on_cluster_loss = OnClusterLoss::kRequeue;
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    REQUIRE(p.write->phase);
    CHECK(*p.write->phase == JobPhase::kQueued);  // dispatched again, at epoch 2
    CHECK(p.write->events.back().reason == "WorkloadGone");
    CHECK(p.write->message->find("where its job waits suspended") != std::string::npos);
    // At most once: failed instead.
    w.spec.on_cluster_loss = OnClusterLoss::kFail;
    Plan f = Decide(w.Input());
    REQUIRE(f.write);
    REQUIRE(f.write->phase);
    CHECK(*f.write->phase == JobPhase::kFailed);
  }
  SECTION("a job just created, its Workload admitted: waits to be started, as before") {
    World w = leased(JobPhase::kAdmitted);
    Plan p = Decide(w.Input());
    CHECK(p.step == "run");
    CHECK((!p.write || !p.write->phase));
  }
}

TEST_CASE("which writes may be lost: only those a later pass makes again and no action depends on",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c1", 1);
  w.Workload("c1", 1).admitted = true;
  // Creating the real job: its intent is recorded before the create.
  Plan create = Decide(w.Input());
  REQUIRE(create.step == "run");
  CHECK_FALSE(MayBeLost(create, w.in.intents));

  // Admitted -> Running, nothing sent: observed again after a loss.
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan run = Decide(w.Input());
  REQUIRE(run.write);
  REQUIRE(run.actions.empty());
  CHECK(MayBeLost(run, w.in.intents));
  // Not for an at-most-once job: Running is what says it ran.
  CHECK_FALSE(MayBeLost(run, w.in.intents, true));

  // The same write with anything more is durable.
  auto changed = [&](auto change) {
    Plan p = run;
    change(p);
    return MayBeLost(p, w.in.intents);
  };
  CHECK_FALSE(changed([&](Plan& p) { p.actions = create.actions; }));
  CHECK_FALSE(changed([](Plan& p) { p.write->epoch = 2; }));
  CHECK_FALSE(changed([](Plan& p) { p.write->cluster = "c2"; }));
  CHECK_FALSE(changed([](Plan& p) { p.write->lease_ms = 5; }));
  CHECK_FALSE(changed([](Plan& p) { p.write->nominated_ms = 5; }));
  CHECK_FALSE(changed([](Plan& p) { p.write->phase = JobPhase::kSucceeded; }));
  CHECK_FALSE(changed([](Plan& p) { p.write->phase = JobPhase::kQueued; }));
  CHECK_FALSE(changed([&](Plan& p) { p.write->upsert_intents.push_back(w.in.intents[0]); }));
  // Dropping a row whose object should exist is durable; one marked absent not.
  CHECK_FALSE(changed([](Plan& p) { p.write->drop_intents.emplace_back("c1", "Job"); }));
  CHECK(changed([](Plan& p) { p.write->drop_intents.emplace_back("c2", "Workload"); }));
  CHECK(changed([](Plan& p) { p.write->phase.reset(); }));
  Plan no_write = run;
  no_write.write.reset();
  CHECK_FALSE(MayBeLost(no_write, w.in.intents));

  // A finished job's confirmed-absent rows, dropped with nothing sent.
  World f;
  f.FinishedOn("c1", 1);
  Plan drop = Decide(f.Input());
  REQUIRE(drop.write);
  REQUIRE(drop.write->drop_intents.size() == 2);
  REQUIRE(drop.actions.empty());
  CHECK(MayBeLost(drop, f.in.intents));
  // The step that marks them absent and sends the deletes is durable.
  World g;
  g.OwnedBy(JobPhase::kRunning, "c1", 1);
  g.Workload("c1", 1).admitted = true;
  g.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  Plan finish = Decide(g.Input());
  REQUIRE(finish.write);
  REQUIRE(*finish.write->phase == JobPhase::kSucceeded);
  CHECK_FALSE(MayBeLost(finish, g.in.intents));
}

TEST_CASE("the backstop stretches past its budget of passes a second, never below resync_ms nor past an hour", "[dispatch][decide]") {
  CHECK(BackstopMs(30'000, 0, 100) == 30'000);
  CHECK(BackstopMs(30'000, 3'000, 100) == 30'000);  // 100 passes a second exactly
  CHECK(BackstopMs(30'000, 3'001, 100) == 30'010);
  CHECK(BackstopMs(30'000, 100'000, 100) == 1'000'000);  // 100,000 waiting: each every 1,000 s
  CHECK(BackstopMs(30'000, 100'000, 0) == 30'000);       // 0: never stretched
  CHECK(BackstopMs(5'000, 100'000, 1'000) == 100'000);
  CHECK(BackstopMs(30'000, 1'000'000, 100) == kMaxBackstopMs);
  CHECK(BackstopMs(30'000, 1'000'000, 1) == kMaxBackstopMs);
}

TEST_CASE("a failed action is retried after a quarter second, doubling to retry_ms, not before Retry-After up to it",
          "[dispatch][decide]") {
  CHECK(ActionRetryMs(1, 2'000, 0) == 250);
  CHECK(ActionRetryMs(2, 2'000, 0) == 500);
  CHECK(ActionRetryMs(3, 2'000, 0) == 1'000);
  CHECK(ActionRetryMs(4, 2'000, 0) == 2'000);
  CHECK(ActionRetryMs(50, 2'000, 0) == 2'000);
  CHECK(ActionRetryMs(1'000'000, 2'000, 0) == 2'000);
  CHECK(ActionRetryMs(0, 2'000, 0) == 250);
  CHECK(ActionRetryMs(1, 100, 0) == 100);            // a retry_ms below the first step
  CHECK(ActionRetryMs(1, 2'000, 1'000) == 1'000);    // the cluster's Retry-After: 1 s
  CHECK(ActionRetryMs(4, 2'000, 1'000) == 2'000);
  CHECK(ActionRetryMs(1, 2'000, 3'600'000) == 2'000);  // a long Retry-After waits retry_ms at most
}

TEST_CASE("only copies waiting for admission and a running job wait on the backstop, no other step", "[dispatch][decide]") {
  constexpr int64_t kBackstop = 500'000;  // stretched: apart from resync_ms (30 s)
  auto stretched = [](World& w) {
    w.in.options.backstop_ms = kBackstop;
    w.in.options.preemption_gate_ms = 0;
  };
  auto running_in_c1 = [](World& w) {
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    w.Workload("c1", 1).admitted = true;
    w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  };
  SECTION("a nomination is looked at again after resync_ms: the next pass sets the job's own timers") {
    World w;
    stretched(w);
    w.in.placement = Candidates({"c1", "c2"});
    Plan p = Decide(w.Input());
    CHECK(p.step == "nominate");
    CHECK(p.requeue_ms == w.in.options.resync_ms);
    CHECK_FALSE(p.backstop);
  }
  SECTION("no cluster can take a queued job now: resync_ms (a capacity readable again wakes nothing)") {
    World w;
    stretched(w);
    w.in.placement = Candidates({});
    Plan p = Decide(w.Input());
    CHECK(p.requeue_ms == w.in.options.resync_ms);
    CHECK_FALSE(p.backstop);
  }
  SECTION("AllAtOnce copies seen, pending admission: the backstop") {
    World w;
    stretched(w);
    w.job.phase = JobPhase::kNominating;
    w.job.epoch = 1;
    w.Intent("c1", "Workload", 1);
    w.Workload("c1", 1);
    Plan p = Decide(w.Input());
    CHECK(p.step == "copies");
    CHECK(p.actions.empty());
    CHECK(p.requeue_ms == kBackstop);
    CHECK(p.backstop);
  }
  SECTION("an Incremental round due sooner than the backstop: its own timer") {
    World w = IncrementalWithCopyInC1();
    stretched(w);
    Plan p = Decide(w.Input());
    CHECK(p.step == "copies");
    CHECK(p.requeue_ms == 20'000);  // nominated at 0, now 1,000 s: the next 60 s round in 20 s
    CHECK_FALSE(p.backstop);
  }
  SECTION("a running job with a withdrawn copy still shown elsewhere: its delete, and a retry") {
    World w;
    stretched(w);
    running_in_c1(w);
    w.Intent("c2", "Workload", 1, false);  // the lease's loser, withdrawn
    w.Workload("c2", 1);                   // and still there
    Plan p = Decide(w.Input());
    CHECK(p.step == "run");
    CHECK(Count(p, Verb::kDelete, "Workload", "c2") == 1);
    CHECK(p.requeue_ms == w.in.options.retry_ms);
    CHECK_FALSE(p.backstop);
  }
  SECTION("a job running in its owner: the backstop") {
    World w;
    stretched(w);
    running_in_c1(w);
    Plan p = Decide(w.Input());
    CHECK(p.step == "run");
    CHECK(p.requeue_ms == kBackstop);
    CHECK(p.backstop);
  }
}

// An Unschedulable job holds no lease: its passes only withdraw what is left
// of its copies (an old epoch's, or one seen again when a cluster returns),
// whatever its onClusterLoss. Before, it fell through to the lease holder's
// steps with no owner, which read as "owner removed from the inventory":
// Failed (Fail), requeued with a ClusterLost event (Requeue), or polled for
// ever with its copy left holding quota (Wait).
TEST_CASE("an Unschedulable job only withdraws its copies, whatever its onClusterLoss", "[dispatch][decide]") {
  for (const char* policy : {"Fail", "Wait", "Requeue"}) {
    CAPTURE(policy);
    World w;
    w.spec = Spec(policy);
    w.job.phase = JobPhase::kUnschedulable;
    w.job.epoch = 1;
    w.Workload("c1", 1);
    Plan p = Decide(w.Input());
    CHECK(p.step != "owner-lost");
    CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
    CHECK(Count(p, Verb::kCreate, "Workload") == 0);
    if (p.write) {
      CHECK_FALSE(p.write->phase);
      CHECK(p.write->events.empty());
    }
  }
}

// Its owner removed, a Requeue job pinned there is Unschedulable; the
// cluster added back shows its run still there, which the job deletes
// before it is queued again. In the foreground: deleted in the background,
// the object went at once while its pods stopped, and the next run started
// beside them (found by trial 30).
TEST_CASE("an Unschedulable job deletes the run it left in the foreground and its next run waits for it",
          "[dispatch][decide]") {
  World w;
  w.spec = Spec("Requeue");
  w.job.phase = JobPhase::kUnschedulable;
  w.job.epoch = 1;
  w.in.placement = Candidates({"c1"});
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan first = Decide(w.Input());
  REQUIRE(Count(first, Verb::kDelete, "Job", "c1") == 1);
  CHECK(Find(first, Verb::kDelete, "Job", "c1")->foreground);
  CHECK_FALSE((first.write && first.write->phase));
  // Its pods stopping: not asked again, and the job is queued; a pod that
  // never stops must not keep it from every other cluster.
  w.in.observed["c1"].jobs.back().deleting = true;
  Plan stopping = Decide(w.Input());
  CHECK(Count(stopping, Verb::kDelete, "Job") == 0);
  REQUIRE(stopping.write);
  REQUIRE(stopping.write->phase);
  CHECK(*stopping.write->phase == JobPhase::kQueued);
  // Queued, it sends c1 no copy while that run is there.
  w.job.phase = JobPhase::kQueued;
  Plan next = Decide(w.Input());
  CHECK(Count(next, Verb::kCreate, "Workload", "c1") == 0);
  CHECK(Count(next, Verb::kCreate, "Job") == 0);
}

// An at-most-once job seen running whose real job then vanished from its
// owner (deleted there) is not created again: that would be a second run.
// A Requeue job's is created again, at the same epoch.
TEST_CASE("a running at-most-once job whose real job vanished fails, and a Requeue job gets it created again",
          "[dispatch][decide]") {
  for (const char* policy : {"Fail", "Wait", "Requeue"}) {
    CAPTURE(policy);
    World w;
    w.spec = Spec(policy);
    w.OwnedBy(JobPhase::kRunning, "c1", 1);
    ObservedWorkload& wl = w.Workload("c1", 1);
    wl.quota_reserved = true;
    wl.admitted = true;
    Plan p = Decide(w.Input());
    if (std::string(policy) == "Requeue") {
      CHECK(Count(p, Verb::kCreate, "Job", "c1") == 1);
      CHECK((!p.write || !p.write->phase));
    } else {
      CHECK(Count(p, Verb::kCreate, "Job") == 0);
      REQUIRE(p.write);
      REQUIRE(p.write->phase);
      CHECK(*p.write->phase == JobPhase::kFailed);
      CHECK_THAT(*p.write->message, Catch::Contains("vanished from c1"));
    }
  }
}

// The world's job, its template naming WorkloadPriorityClass `name`.
JobSpec SpecWithClass(const std::string& name) {
  std::string doc = kDoc;
  doc.replace(doc.find("%POLICY%"), 8, "Requeue");
  const std::string plain = "    kind: Job\n    spec:";
  doc.replace(doc.find(plain), plain.size(),
              "    kind: Job\n    metadata: {labels: {kueue.x-k8s.io/priority-class: " + name + "}}\n    spec:");
  auto parsed = ParseJobDocument(doc, DocumentFormat::kYaml, std::nullopt);
  REQUIRE(std::holds_alternative<JobSpec>(parsed));
  return std::get<JobSpec>(parsed);
}

// Kueue reads the job's kueue.x-k8s.io/priority-class label only when it
// builds the Workload itself: a copy carries the class's value in its
// cluster, and none goes where that value is not known.
TEST_CASE("step 4: a job naming a WorkloadPriorityClass gets copies only where its value is known, carrying it",
          "[dispatch][decide]") {
  World w;
  w.spec = SpecWithClass("prod");
  auto classes = [](std::map<std::string, int32_t> known) {
    auto q = std::make_shared<placement::ClusterQueues>();
    q->priority_classes_known = true;
    q->priority_classes = std::move(known);
    return q;
  };
  w.clusters["c1"].queues = classes({{"prod", 9000}});
  w.clusters["c2"].queues = classes({{"prod", 100}});
  w.clusters["c3"].queues = classes({{"dev", 1}});  // the inventory changed since placement read it
  w.in.placement = Candidates({"c1", "c2", "c3"});
  Plan nominated = Decide(w.Input());
  CHECK(Count(nominated, Verb::kCreate, "Workload") == 2);
  const Action* c1 = Find(nominated, Verb::kCreate, "Workload", "c1");
  const Action* c2 = Find(nominated, Verb::kCreate, "Workload", "c2");
  REQUIRE(c1);
  REQUIRE(c2);
  CHECK(c1->body["spec"]["priority"] == 9000);  // each cluster's own value
  CHECK(c2->body["spec"]["priority"] == 100);
  CHECK(c1->body["spec"]["priorityClassRef"]["name"] == "prod");
  CHECK(Count(nominated, Verb::kCreate, "Workload", "c3") == 0);

  // Where no candidate knows it, the job waits, saying why.
  w.in.placement = Candidates({"c3"});
  Plan waiting = Decide(w.Input());
  CHECK(waiting.actions.empty());
  REQUIRE(waiting.write);
  CHECK_FALSE(waiting.write->phase);
  CHECK_THAT(*waiting.write->message,
             Catch::Contains("the value of its WorkloadPriorityClass prod is not known in c3; waiting"));
}

// A job no cluster can take now says why in its message, cluster by
// cluster: a class or a LocalQueue that exists nowhere (a typo) shows in
// gantry status, not only in gantry explain.
TEST_CASE("step 4: a job no cluster can take now waits with each cluster's reason in its message",
          "[dispatch][decide]") {
  World w;
  w.spec = SpecWithClass("prod-hihg");
  placement::Decision d;
  // By name, as placement gives them: eight ruled out for good (not in its
  // allowlist) before the two it waits for.
  for (const char* c : {"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"}) {
    d.excluded.push_back({c, placement::Exclusion{placement::Filter::kAllowlist, "not in allowlist", true}});
  }
  for (const char* c : {"c1", "c2"}) {
    d.excluded.push_back({c, placement::Exclusion{placement::Filter::kPriorityClass,
                                                  "WorkloadPriorityClass prod-hihg does not exist here", false}});
  }
  w.in.placement = d;
  Plan waiting = Decide(w.Input());
  CHECK(waiting.actions.empty());
  REQUIRE(waiting.write);
  CHECK_FALSE(waiting.write->phase);
  // What it waits for comes first, not cut off behind the eight.
  CHECK_THAT(*waiting.write->message,
             Catch::StartsWith("no cluster can take it now; waiting (see gantry explain); left out: c1: "
                               "WorkloadPriorityClass prod-hihg does not exist here; c2: WorkloadPriorityClass "
                               "prod-hihg does not exist here; a1: not in allowlist; "));
  CHECK_THAT(*waiting.write->message, Catch::EndsWith("a6: not in allowlist; and 2 more (see gantry explain)"));
}

// An empty label names no class, as Kueue reads it (a template that leaves
// it blank): accepted, and copies go where no class is known.
TEST_CASE("step 4: a job whose priority-class label is empty names no class", "[dispatch][decide]") {
  World w;
  w.spec = SpecWithClass("\"\"");
  w.in.placement = Candidates({"c1", "c2"});
  Plan nominated = Decide(w.Input());
  CHECK(Count(nominated, Verb::kCreate, "Workload") == 2);
  const Action* c1 = Find(nominated, Verb::kCreate, "Workload", "c1");
  REQUIRE(c1);
  CHECK_FALSE(c1->body["spec"].contains("priorityClassRef"));
}

// A copy gone from a cluster where the job's class has no known value any
// more is not made again there; withdrawn, it no longer holds the job to
// that cluster (Widen counts the copies left).
TEST_CASE("step 9: a copy gone where its WorkloadPriorityClass's value is no longer known is withdrawn",
          "[dispatch][decide]") {
  World w;
  w.spec = SpecWithClass("prod");
  auto q = std::make_shared<placement::ClusterQueues>();
  q->priority_classes_known = true;
  q->priority_classes = {{"prod", 10}};
  w.clusters["c2"].queues = q;  // c1: its classes unknown now
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  for (const char* c : {"c1", "c2"}) w.Intent(c, "Workload", 1);
  w.Workload("c2", 1);  // c1 shows no copy, and none is expected there
  w.in.placement = Candidates({"c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  CHECK(Count(p, Verb::kCreate, "Workload", "c1") == 0);
  REQUIRE(p.write);
  REQUIRE(FindIntent(*p.write, "c1", "Workload"));
  CHECK_FALSE(FindIntent(*p.write, "c1", "Workload")->present);
  REQUIRE(p.write->events.size() == 1);
  CHECK_THAT(p.write->events[0].message,
             Catch::Contains("c1 (its copy is gone, and the value of WorkloadPriorityClass prod is not known there)"));

  // Its only copy, and no other cluster to widen to: the job is dispatched
  // again (placement decides where, when one can take it).
  World alone = w;
  alone.in.observed.clear();
  alone.in.intents.clear();
  alone.Intent("c1", "Workload", 1);
  alone.in.placement = Candidates({"c1"});
  Plan again = Decide(alone.Input());
  INFO(again.step << ": " << (again.write && again.write->message ? *again.write->message : ""));
  REQUIRE(again.write);
  REQUIRE(again.write->phase);
  CHECK(*again.write->phase == JobPhase::kQueued);
  REQUIRE(again.write->events.size() >= 1);
  CHECK(again.write->events[0].reason == "PriorityClassUnknown");
}

}  // namespace gantry::dispatch
