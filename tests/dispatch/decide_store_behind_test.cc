// Decide() step 0: a store behind the clusters (its database restored from
// an older copy). A run of the job's at an epoch the store has not reached,
// or leased where the store holds no lease, takes the lease; it is never
// deleted for a stray and the job dispatched again beside it.
#include <catch2/catch.hpp>

#include "decide_world.h"

namespace gantry::dispatch {
using namespace decide_world;

namespace {

bool HasEvent(const Plan& p, const std::string& reason) {
  if (!p.write) return false;
  return std::any_of(p.write->events.begin(), p.write->events.end(),
                     [&](const JobEvent& e) { return e.reason == reason; });
}

// The plan's write applied to the world's job and rows, as the store would.
void Apply(World& w, const Plan& p) {
  REQUIRE(p.write);
  const DispatchUpdate& u = *p.write;
  if (u.phase) w.job.phase = *u.phase;
  if (u.epoch) w.job.epoch = *u.epoch;
  if (u.cluster) w.job.cluster = *u.cluster;
  if (u.lease_ms) w.job.lease_ms = *u.lease_ms;
  for (const RemoteIntent& i : u.upsert_intents) {
    std::erase_if(w.in.intents, [&](const RemoteIntent& r) { return r.cluster == i.cluster && r.kind == i.kind; });
    w.in.intents.push_back(i);
    w.in.intents.back().job_uid = w.job.uid;
  }
}

}  // namespace

TEST_CASE("step 0: a run at an epoch the store has not reached takes the lease, and is not run again",
          "[dispatch][decide][restore]") {
  // Restored from a copy taken before the job's first dispatch: Queued at
  // epoch 0. Since then c1 leased it at epoch 1 and runs it.
  World w;
  w.spec = Spec("Fail");
  w.job.phase = JobPhase::kQueued;
  w.job.epoch = 0;
  w.Workload("c1", 1).admitted = true;
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan p = Decide(w.Input());
  CHECK(p.step == "store-behind");
  CHECK(p.actions.empty());  // nothing deleted, nothing created
  REQUIRE(p.write);
  CHECK(p.write->expected_epoch == 0);  // guarded: the job as read
  CHECK(p.write->phase == JobPhase::kAdmitted);
  CHECK(p.write->epoch == 1);
  CHECK(p.write->cluster == "c1");
  CHECK(HasEvent(p, "StoreBehind"));
  CHECK_THAT(*p.write->message, Catch::Contains("did not know of the job's run in c1 at epoch 1"));
  const RemoteIntent* job_row = FindIntent(*p.write, "c1", "Job");
  REQUIRE(job_row);
  CHECK(job_row->present);
  CHECK(job_row->epoch == 1);
  CHECK(job_row->created_ms > 0);  // an at-most-once job's run is there: never created again
  REQUIRE(FindIntent(*p.write, "c1", "Workload"));
  CHECK(FindIntent(*p.write, "c1", "Workload")->epoch == 1);

  // The next pass goes on as for any leased job: Running, nothing deleted
  // or created.
  Apply(w, p);
  Plan next = Decide(w.Input());
  CHECK(next.step != "store-behind");
  CHECK(Count(next, Verb::kDelete, "Job") == 0);
  CHECK(Count(next, Verb::kCreate, "Job") == 0);
  CHECK(Count(next, Verb::kCreate, "Workload") == 0);
  REQUIRE(next.write);
  CHECK(next.write->phase == JobPhase::kRunning);

  SECTION("a run that succeeded in that history finishes the job, not run again") {
    w.in.observed["c1"].jobs[0].state = RemoteJobState::kSucceeded;
    Plan done = Decide(w.Input());
    REQUIRE(done.write);
    CHECK(done.write->phase == JobPhase::kSucceeded);
    CHECK(Count(done, Verb::kCreate, "Job") == 0);
  }
}

TEST_CASE("step 0: a run listed in a cluster that is not Ready takes the lease too, and the owner is then waited for",
          "[dispatch][decide][restore]") {
  World w;
  w.spec = Spec("Wait");
  w.job.phase = JobPhase::kQueued;
  w.RemoteJob("c2", 1, RemoteJobState::kRunning);
  w.clusters["c2"].ready = false;  // its probe timed out; its lists came
  Plan p = Decide(w.Input());
  CHECK(p.step == "store-behind");
  REQUIRE(p.write);
  CHECK(p.write->cluster == "c2");
  Apply(w, p);
  Plan next = Decide(w.Input());
  CHECK(Count(next, Verb::kCreate, "Workload") == 0);
  CHECK(Count(next, Verb::kCreate, "Job") == 0);
  CHECK(Count(next, Verb::kDelete, "Job") == 0);
  CHECK((!next.write || !next.write->phase || *next.write->phase == JobPhase::kAdmitted));
}

TEST_CASE("step 0: the newest run of a history the store lost is taken, and the stored owner's older one fenced",
          "[dispatch][decide][restore]") {
  // Restored with the job Running in c1 at epoch 1; since then c1 was lost,
  // the job requeued and leased by c2 at epoch 2, and c1 answers again.
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 1);
  w.Workload("c1", 1).admitted = true;
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  w.Workload("c2", 2).admitted = true;
  w.RemoteJob("c2", 2, RemoteJobState::kRunning);
  Plan p = Decide(w.Input());
  CHECK(p.step == "store-behind");
  CHECK(p.actions.empty());
  REQUIRE(p.write);
  CHECK(p.write->cluster == "c2");
  CHECK(p.write->epoch == 2);
  CHECK(p.write->expected_cluster == "c1");
  // c1's rows are withdrawn with the lease it lost.
  const RemoteIntent* c1_job = FindIntent(*p.write, "c1", "Job");
  REQUIRE(c1_job);
  CHECK_FALSE(c1_job->present);
  Apply(w, p);
  Plan next = Decide(w.Input());
  CHECK(Count(next, Verb::kDelete, "Job", "c1") == 1);  // the older epoch's run: fenced
  CHECK(Count(next, Verb::kDelete, "Job", "c2") == 0);
  CHECK(Count(next, Verb::kCreate, "Job") == 0);
}

TEST_CASE("step 0: a Nominating job whose own epoch's real job is seen had its lease written, and lost",
          "[dispatch][decide][restore]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 3;
  w.job.nominated_ms = w.in.now_ms - 5'000;
  w.Intent("c1", "Workload", 3);
  w.Intent("c2", "Workload", 3);
  w.Workload("c1", 3);
  w.Workload("c2", 3).admitted = true;
  w.RemoteJob("c2", 3, RemoteJobState::kSuspended);
  Plan p = Decide(w.Input());
  CHECK(p.step == "store-behind");
  REQUIRE(p.write);
  CHECK(p.write->cluster == "c2");
  CHECK(p.write->epoch == 3);
  Apply(w, p);
  Plan next = Decide(w.Input());
  CHECK(Count(next, Verb::kDelete, "Workload", "c1") == 1);  // the other copy: withdrawn
  CHECK(Count(next, Verb::kDelete, "Job", "c2") == 0);
  CHECK(Count(next, Verb::kCreate, "Job") == 0);
}

TEST_CASE("step 0 takes no run a normal history leaves: a requeued job's leftover, or one being deleted",
          "[dispatch][decide][restore]") {
  World w;
  SECTION("a Queued job's run of its own epoch is its last dispatch's leftover: deleted, not taken") {
    w.job.phase = JobPhase::kQueued;
    w.job.epoch = 2;
    w.RemoteJob("c1", 2, RemoteJobState::kRunning);
    Plan p = Decide(w.Input());
    CHECK(p.step != "store-behind");
    CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);
  }
  SECTION("a newer run being deleted is not taken, and the next nomination's epoch is past it") {
    w.job.phase = JobPhase::kQueued;
    w.job.epoch = 0;
    w.RemoteJob("c1", 4, RemoteJobState::kRunning).deleting = true;
    w.in.placement = Candidates({"c2"});
    Plan p = Decide(w.Input());
    CHECK(p.step != "store-behind");
    REQUIRE(p.write);
    REQUIRE(p.write->epoch);
    CHECK(*p.write->epoch == 5);
    const Action* create = Find(p, Verb::kCreate, "Workload", "c2");
    REQUIRE(create);
    CHECK(create->epoch == 5);
  }
  SECTION("a copy of a newer epoch alone (no run) is not taken either; the nomination passes it") {
    w.job.phase = JobPhase::kQueued;
    w.job.epoch = 1;
    w.Workload("c3", 6);
    w.in.resource = "jobs.batch";
    w.in.placement = Candidates({"c2"});
    Plan p = Decide(w.Input());
    CHECK(p.step != "store-behind");
    REQUIRE(p.write);
    REQUIRE(p.write->epoch);
    CHECK(*p.write->epoch == 7);
  }
  SECTION("the owner's own run at the lease's epoch: nothing to take") {
    w.OwnedBy(JobPhase::kRunning, "c1", 2);
    w.Workload("c1", 2).admitted = true;
    w.RemoteJob("c1", 2, RemoteJobState::kRunning);
    CHECK(Decide(w.Input()).step != "store-behind");
  }
}

}  // namespace gantry::dispatch

namespace gantry::dispatch {
using namespace decide_world;

TEST_CASE("after the start nothing is decided until every cluster that may answer is listed, for a while at most",
          "[dispatch][decide][restore]") {
  // A restored store: the job Queued at epoch 0, its run (epoch 1) in c3,
  // whose objects are not listed yet; c1 could take the job.
  World w;
  w.job.phase = JobPhase::kQueued;
  w.in.placement = Candidates({"c1"});
  w.in.since_start_ms = 2'000;
  w.synced.erase("c3");
  Plan p = Decide(w.Input());
  CHECK(p.step == "start-listing");
  CHECK(p.waiting_for == std::vector<std::string>{"c3"});
  CHECK(UnlistedAtStart(w.Input()) == p.waiting_for);  // what the engine asks before it places the job
  CHECK(p.actions.empty());
  CHECK_FALSE(p.write);
  CHECK(p.requeue_ms > 0);
  SECTION("one not Ready is waited for too: a slow cluster's probe times out while its lists come") {
    w.clusters["c3"].ready = false;
    CHECK(Decide(w.Input()).step == "start-listing");
  }
  SECTION("not one gantry cannot reach, or that refuses gantry the list") {
    SECTION("its credentials do not load") { w.clusters["c3"].unusable = "its credentials do not load"; }
    SECTION("it refuses the list") { w.clusters["c3"].watch_refused = "403"; }
    CHECK(Decide(w.Input()).step == "nominate");
  }
  SECTION("once listed, the job is decided as ever") {
    w.synced.insert("c3");
    CHECK(Decide(w.Input()).step == "nominate");
  }
  SECTION("and not longer than start_listing_ms after the start") {
    w.in.since_start_ms = w.in.options.start_listing_ms;
    CHECK(Decide(w.Input()).step == "nominate");
    CHECK(UnlistedAtStart(w.Input()).empty());
  }
  SECTION("measured on the monotonic clock: a wall clock stepped back an hour does not stretch it") {
    w.in.started_ms = w.in.now_ms + 3'600'000;
    w.in.since_start_ms = w.in.options.start_listing_ms;
    CHECK(Decide(w.Input()).step == "nominate");
  }
}

}  // namespace gantry::dispatch
