// Decide() step 13's gate: a job that moved on to a new owner starts there
// only once its earlier run is seen gone from a cluster that answers, so that
// a delete the old cluster answers 429 or 503 does not leave the job running
// in two clusters at once.
#include <catch2/catch.hpp>

#include "decide_world.h"

namespace gantry::dispatch {
using namespace decide_world;

namespace {

// Leased by c2 at epoch 2 a second ago; its copy there admitted, the real
// job not created yet. The epoch-1 run in c1 is withdrawn (rows absent) and
// still seen there: its delete has not gone through.
World MovedToC2() {
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c2", 2);
  w.job.lease_ms = w.in.now_ms - 1'000;
  w.Workload("c2", 2).admitted = true;
  w.Intent("c1", "Workload", 1, false);
  w.Intent("c1", "Job", 1, false);
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  return w;
}

bool Drops(const Plan& p, const std::string& cluster, const std::string& kind) {
  if (!p.write) return false;
  const auto& d = p.write->drop_intents;
  return std::find(d.begin(), d.end(), std::make_pair(cluster, kind)) != d.end();
}

}  // namespace

TEST_CASE("step 13: an earlier run in a cluster missing from the inventory at the start is waited for until a "
          "reload confirms the cluster removed",
          "[dispatch][decide][lost]") {
  // Its file moved aside, or clusters.d not mounted yet, when the daemon
  // restarted while the earlier run's pods were stopping: they may run on.
  World w = MovedToC2();
  w.in.observed.erase("c1");
  w.clusters.erase("c1");
  w.synced.erase("c1");
  w.in.inventory_confirmed = false;
  Plan wait = Decide(w.Input());
  CHECK(Count(wait, Verb::kCreate, "Job") == 0);
  CHECK_FALSE(Drops(wait, "c1", "Job"));
  REQUIRE(wait.write);
  REQUIRE(wait.write->message);
  CHECK_THAT(*wait.write->message, Catch::Contains("earlier run in c1"));

  w.in.inventory_confirmed = true;  // removed for good: nothing can stop the run there
  Plan go = Decide(w.Input());
  CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
  CHECK(Drops(go, "c1", "Job"));
}

TEST_CASE("step 13: a moved job starts in its new owner only once its earlier run is seen gone",
          "[dispatch][decide]") {
  World w = MovedToC2();
  Plan wait = Decide(w.Input());
  CHECK(wait.step == "run");
  CHECK(Count(wait, Verb::kCreate, "Job") == 0);
  CHECK(Count(wait, Verb::kDelete, "Job", "c1") == 1);  // fencing sends the delete again
  // In the foreground: the object stays until its pods are gone, so the
  // view that shows it gone shows the run stopped.
  CHECK(Find(wait, Verb::kDelete, "Job", "c1")->foreground);
  CHECK(wait.requeue_ms == w.in.options.retry_ms);
  REQUIRE(wait.write);
  REQUIRE(wait.write->message);
  CHECK_THAT(*wait.write->message, Catch::Contains("earlier run in c1"));
  REQUIRE(wait.write->events.size() == 1);
  CHECK(wait.write->events[0].reason == "WaitingForEarlierRun");
  CHECK(wait.write->events[0].cluster == "c1");

  SECTION("being deleted there already (its pods stopping): not asked again, still waited for") {
    w.in.observed["c1"].jobs[0].deleting = true;
    w.in.observed["c1"].jobs[0].k8s_uid = "job-c1";
    Plan again = Decide(w.Input());
    CHECK(Count(again, Verb::kDelete, "Job", "c1") == 0);
    CHECK(Count(again, Verb::kCreate, "Job") == 0);
    CHECK(again.requeue_ms == w.in.options.retry_ms);
  }
  SECTION("told once: the next pass neither tells it again nor creates the job") {
    w.job.message = *wait.write->message;
    Plan again = Decide(w.Input());
    CHECK((!again.write || (again.write->events.empty() && !again.write->message)));
    CHECK(Count(again, Verb::kCreate, "Job") == 0);
  }
  SECTION("seen gone: the row goes and the job is created in the same pass, its message no longer waiting") {
    w.job.message = *wait.write->message;
    w.in.observed.erase("c1");
    Plan go = Decide(w.Input());
    CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
    CHECK(Drops(go, "c1", "Job"));
    REQUIRE(go.write->message);
    CHECK(*go.write->message == "admitted by c2 at epoch 2");
  }
  SECTION("not seen, but c1's view is behind (a watch there broke): it waits for the relist") {
    w.in.observed.erase("c1");
    w.behind.insert("c1");
    Plan behind = Decide(w.Input());
    CHECK(Count(behind, Verb::kCreate, "Job") == 0);
  }
  SECTION("not seen, but c1's view is not synced yet (a restart): it waits for the list") {
    w.in.observed.erase("c1");
    w.synced.erase("c1");
    CHECK(Count(Decide(w.Input()), Verb::kCreate, "Job") == 0);
  }
  SECTION("c1 out of reach a moment (a probe failed): still waited for") {
    w.clusters["c1"].ready = false;
    w.clusters["c1"].lost_for_ms = 5'000;
    CHECK(Count(Decide(w.Input()), Verb::kCreate, "Job") == 0);
  }
  SECTION("c1 lost (out of reach for clusterLostTimeout): not waited for, as for a lost owner") {
    w.clusters["c1"].ready = false;
    w.clusters["c1"].lost_for_ms = w.in.options.cluster_lost_timeout_ms;
    CHECK(Count(Decide(w.Input()), Verb::kCreate, "Job", "c2") == 1);
  }
  SECTION("c1 refusing gantry's credentials for their own timeout: not waited for") {
    w.clusters["c1"].ready = false;
    w.clusters["c1"].credentials_refused = true;
    w.clusters["c1"].lost_for_ms = w.in.options.credentials_refused_timeout_ms - 1;
    CHECK(Count(Decide(w.Input()), Verb::kCreate, "Job") == 0);
    w.clusters["c1"].lost_for_ms = w.in.options.credentials_refused_timeout_ms;
    CHECK(Count(Decide(w.Input()), Verb::kCreate, "Job", "c2") == 1);
  }
  SECTION("c1 declared lost and silent past declaredLostGraceSeconds: not waited for") {
    w.clusters["c1"].ready = false;
    w.clusters["c1"].config.declared_lost = true;
    w.clusters["c1"].lost_for_ms = w.in.options.declared_lost_grace_ms;
    CHECK(Count(Decide(w.Input()), Verb::kCreate, "Job", "c2") == 1);
  }
  SECTION("c1 removed from the inventory: nothing can stop it there, nothing waits") {
    w.clusters.erase("c1");
    w.synced.erase("c1");
    w.in.observed.erase("c1");
    Plan go = Decide(w.Input());
    CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
  }
  SECTION("waited clusterLostTimeout from the lease: it starts, with a warning told once") {
    w.job.lease_ms = w.in.now_ms - w.in.options.cluster_lost_timeout_ms;
    Plan go = Decide(w.Input());
    CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
    CHECK(Count(go, Verb::kDelete, "Job", "c1") == 1);  // still asked to stop
    REQUIRE(go.write);
    REQUIRE(go.write->events.size() == 1);
    CHECK(go.write->events[0].reason == "EarlierRunNotSeenDeleted");
    CHECK(go.write->events[0].type == "Warning");
    // A pass later (the create not seen yet, or not sent), nothing is told again.
    w.job.message = *go.write->message;
    w.in.now_ms += 5'000;
    Plan later = Decide(w.Input());
    CHECK(Count(later, Verb::kCreate, "Job", "c2") == 1);
    CHECK((!later.write || (later.write->events.empty() && !later.write->message)));
  }
  SECTION("the wake-up comes no later than that timeout") {
    w.job.lease_ms = w.in.now_ms - w.in.options.cluster_lost_timeout_ms + 100;
    CHECK(Decide(w.Input()).requeue_ms == 100);
  }
  SECTION("a copy of the earlier epoch is no run: only the real job is waited for") {
    w.in.observed.erase("c1");
    w.in.intents.erase(std::remove_if(w.in.intents.begin(), w.in.intents.end(),
                                      [](const RemoteIntent& i) { return i.cluster == "c1" && i.kind == "Job"; }),
                       w.in.intents.end());
    w.Workload("c1", 1);
    Plan go = Decide(w.Input());
    CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
    CHECK(Count(go, Verb::kDelete, "Workload", "c1") == 1);
  }
}

TEST_CASE("step 13: an earlier owner held out after failing every create is waited for as any earlier run, its "
          "row kept as a refused one once seen gone",
          "[dispatch][decide]") {
  World w = MovedToC2();
  w.in.options.job_refusal_hold_ms = 600'000;
  RemoteIntent& held = w.in.intents.back();  // c1's real job at epoch 1
  REQUIRE(held.kind == "Job");
  held.hold = "owner cluster c1 answers gantry's reads but has failed every try to create the job there for 900 s";
  held.updated_ms = w.in.now_ms - 2'000;
  // A failed try may have landed: the hold is no refusal, and the job waits
  // for the view to show c1's run gone before it starts in c2.
  Plan wait = Decide(w.Input());
  CHECK(Count(wait, Verb::kCreate, "Job") == 0);
  CHECK(Count(wait, Verb::kDelete, "Job", "c1") == 1);
  REQUIRE(wait.write);
  CHECK_FALSE(Drops(wait, "c1", "Job"));
  CHECK_FALSE(FindIntent(*wait.write, "c1", "Job"));
  // Seen gone: the job starts in c2, and the row is not dropped but kept as
  // a refused one (nothing is there now) for the rest of the hold.
  w.in.observed.erase("c1");
  Plan go = Decide(w.Input());
  CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
  REQUIRE(go.write);
  CHECK_FALSE(Drops(go, "c1", "Job"));
  const RemoteIntent* kept = FindIntent(*go.write, "c1", "Job");
  REQUIRE(kept);
  CHECK_FALSE(kept->present);
  CHECK(kept->refusal == held.hold);
  CHECK(kept->hold == held.hold);
  // Once the hold is over, a row seen gone is dropped as any other.
  w.in.now_ms += 600'000;
  Plan later = Decide(w.Input());
  REQUIRE(later.write);
  CHECK(Drops(later, "c1", "Job"));
}

TEST_CASE("step 13: an earlier run in the new owner itself is deleted before the job is created there",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c1", 2);
  w.job.lease_ms = w.in.now_ms - 1'000;
  w.Workload("c1", 2).admitted = true;
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);  // same name, epoch 1
  Plan wait = Decide(w.Input());
  CHECK(Count(wait, Verb::kDelete, "Job", "c1") == 1);
  CHECK(Count(wait, Verb::kCreate, "Job") == 0);
  w.in.observed["c1"].jobs.clear();
  CHECK(Count(Decide(w.Input()), Verb::kCreate, "Job", "c1") == 1);
}

TEST_CASE("step 13: past clusterLostTimeout, an earlier run's object in the new owner itself still holds the "
          "job's name: the job waits on, and says why once",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c1", 2);
  w.job.lease_ms = w.in.now_ms - w.in.options.cluster_lost_timeout_ms - 1'000;
  w.Workload("c1", 2).admitted = true;
  w.Intent("c1", "Job", 1, false);
  ObservedJob& old = w.RemoteJob("c1", 1, RemoteJobState::kRunning);  // same name, epoch 1
  old.deleting = true;  // its pods stuck stopping (a node gone NotReady)
  old.k8s_uid = "job-c1-epoch-1";
  Plan wait = Decide(w.Input());
  // A create would answer 409 under the older object's name.
  CHECK(Count(wait, Verb::kCreate, "Job") == 0);
  CHECK(wait.requeue_ms == w.in.options.retry_ms);
  REQUIRE(wait.write);
  REQUIRE(wait.write->message);
  CHECK_THAT(*wait.write->message, Catch::Contains("earlier run in c1") && Catch::Contains("holds the name"));
  REQUIRE(wait.write->events.size() == 1);
  CHECK(wait.write->events[0].reason == "EarlierRunNotSeenDeleted");
  CHECK(wait.write->events[0].type == "Warning");

  SECTION("told once: a later pass writes nothing and still creates nothing") {
    w.job.message = *wait.write->message;
    w.in.now_ms += 60'000;
    Plan later = Decide(w.Input());
    CHECK(Count(later, Verb::kCreate, "Job") == 0);
    CHECK((!later.write || (later.write->events.empty() && !later.write->message)));
  }
  SECTION("once it is gone, the job is created there and no longer says it waits") {
    w.job.message = *wait.write->message;
    w.in.observed["c1"].jobs.clear();
    Plan go = Decide(w.Input());
    CHECK(Count(go, Verb::kCreate, "Job", "c1") == 1);
    REQUIRE(go.write);
    REQUIRE(go.write->message);
    CHECK(*go.write->message == "admitted by c1 at epoch 2");
  }
}

TEST_CASE("step 13: where gantry may not list the earlier run's cluster, a read by name that finds it gone lets "
          "the job start",
          "[dispatch][decide]") {
  World w = MovedToC2();
  w.in.observed.erase("c1");
  w.clusters["c1"].watch_refused = "listing jobs answered 403: forbidden";
  w.clusters["c1"].watch_refused_for_ms = 60'000;
  w.synced.erase("c1");
  for (RemoteIntent& i : w.in.intents) {
    if (i.cluster == "c1") i.updated_ms = w.in.now_ms - 10'000;
  }
  Plan wait = Decide(w.Input());
  CHECK(Count(wait, Verb::kCreate, "Job") == 0);
  REQUIRE(Count(wait, Verb::kDeleteUnseen, "Job", "c1") == 1);
  CHECK(Find(wait, Verb::kDeleteUnseen, "Job", "c1")->foreground);

  w.in.read_gone[{"c1", "Job"}] = w.in.now_ms - 10'000 + w.in.options.not_found_confirms_after_ms;
  Plan go = Decide(w.Input());
  CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
  CHECK(Drops(go, "c1", "Job"));
}

TEST_CASE("step 13: a first dispatch has no earlier run and is created at once", "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c1", 1);
  w.job.lease_ms = w.in.now_ms;
  w.Workload("c1", 1).admitted = true;
  Plan p = Decide(w.Input());
  CHECK(Count(p, Verb::kCreate, "Job", "c1") == 1);
  CHECK_FALSE(p.write);
}

TEST_CASE("step 5: the lease is taken but the real job waits while the earlier run may still go on",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 2;
  w.Intent("c2", "Workload", 2);
  w.Workload("c2", 2).admitted = true;
  w.Intent("c1", "Job", 1, false);
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);
  Plan lease = Decide(w.Input());
  CHECK(lease.step == "lease");
  REQUIRE(lease.write);
  CHECK(*lease.write->phase == JobPhase::kAdmitted);
  CHECK(*lease.write->cluster == "c2");
  CHECK(*lease.write->lease_ms == w.in.now_ms);
  CHECK_THAT(*lease.write->message, Catch::Contains("earlier run in c1"));
  CHECK(std::any_of(lease.write->events.begin(), lease.write->events.end(),
                    [](const JobEvent& e) { return e.reason == "WaitingForEarlierRun"; }));
  const RemoteIntent* row = FindIntent(*lease.write, "c2", "Job");
  REQUIRE(row);  // recorded now; step 13 creates it
  CHECK(row->present);
  CHECK(Count(lease, Verb::kCreate, "Job") == 0);
  CHECK(Count(lease, Verb::kDelete, "Job", "c1") == 1);
  CHECK(lease.requeue_ms == w.in.options.retry_ms);

  w.in.observed.erase("c1");
  Plan go = Decide(w.Input());
  CHECK(go.step == "lease");
  CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
}

TEST_CASE("a cancelled job's runs, its current one and an earlier one, are deleted in the background",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  w.Workload("c1", 2).admitted = true;
  w.RemoteJob("c1", 2, RemoteJobState::kRunning);
  w.RemoteJob("c2", 1, RemoteJobState::kRunning);  // the epoch-1 run, still there
  w.job.phase = JobPhase::kCancelling;
  Plan cancel = Decide(w.Input());
  REQUIRE(Find(cancel, Verb::kDelete, "Job", "c1"));
  CHECK_FALSE(Find(cancel, Verb::kDelete, "Job", "c1")->foreground);
  CHECK_FALSE(Find(cancel, Verb::kDelete, "Workload", "c1")->foreground);
  REQUIRE(Find(cancel, Verb::kDelete, "Job", "c2"));
  CHECK_FALSE(Find(cancel, Verb::kDelete, "Job", "c2")->foreground);  // nothing runs after a cancel
}

TEST_CASE("a requeued job's run (evicted, its rows withdrawn) is deleted in the foreground", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kQueued;  // requeued at epoch 1; the next dispatch uses epoch 2
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1, false);
  w.Intent("c1", "Job", 1, false);
  w.Workload("c1", 1).evicted = true;
  w.RemoteJob("c1", 1, RemoteJobState::kSuspended);
  Plan p = Decide(w.Input());
  REQUIRE(Find(p, Verb::kDelete, "Job", "c1"));
  CHECK(Find(p, Verb::kDelete, "Job", "c1")->foreground);
  CHECK_FALSE(Find(p, Verb::kDelete, "Workload", "c1")->foreground);  // a copy runs nothing

  // The pass that finishes the job (still Running as it decides) deletes in the background.
  World ending;
  ending.OwnedBy(JobPhase::kRunning, "c1", 1);
  ending.Workload("c1", 1).admitted = true;
  ending.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  Plan finish = Decide(ending.Input());
  CHECK(finish.step == "finish");
  REQUIRE(Find(finish, Verb::kDelete, "Job", "c1"));
  CHECK_FALSE(Find(finish, Verb::kDelete, "Job", "c1")->foreground);

  World done;
  done.FinishedOn("c1", 1);
  done.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  Plan cleanup = Decide(done.Input());
  REQUIRE(Find(cleanup, Verb::kDelete, "Job", "c1"));
  CHECK_FALSE(Find(cleanup, Verb::kDelete, "Job", "c1")->foreground);
}

}  // namespace gantry::dispatch

namespace gantry::dispatch {
using namespace decide_world;

TEST_CASE("step 1: a job dispatched again whose earlier run is seen to have succeeded meanwhile Succeeds, not run "
          "again",
          "[dispatch][decide][lost]") {
  // Requeued when c1 was lost, Nominating at epoch 2 with a copy waiting in
  // c1; c1 answers again, showing the epoch-1 run completed while cut off.
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 2;
  w.job.nominated_ms = w.in.now_ms - 5'000;
  w.Intent("c1", "Workload", 2);
  w.Workload("c1", 2);
  w.Intent("c1", "Job", 1, false);
  ObservedJob& earlier = w.RemoteJob("c1", 1, RemoteJobState::kSucceeded);
  earlier.reason = "Complete";
  earlier.summary = "active 0, succeeded 1, failed 0";

  SECTION("succeeded: the job ends as that run did, and everything of it is withdrawn") {
    Plan p = Decide(w.Input());
    CHECK(p.step == "earlier-run");
    REQUIRE(p.write);
    CHECK(p.write->phase == JobPhase::kSucceeded);
    CHECK(p.write->cluster == std::optional<std::string>("c1"));
    CHECK(p.write->remote_status == std::optional<std::string>("active 0, succeeded 1, failed 0"));
    REQUIRE(p.write->message);
    CHECK_THAT(*p.write->message, Catch::Contains("succeeded in c1 at epoch 1"));
    REQUIRE_FALSE(p.write->events.empty());
    CHECK(p.write->events[0].reason == "Succeeded");
    CHECK(p.write->events[0].cluster == "c1");
    CHECK(p.write->expected_phase == JobPhase::kNominating);  // guarded: a lease meanwhile wins
    CHECK(Count(p, Verb::kCreate, "Job") == 0);
    CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);
    CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);
  }
  SECTION("Queued, between its epochs: the same") {
    w.job.phase = JobPhase::kQueued;
    CHECK(Decide(w.Input()).step == "earlier-run");
  }
  SECTION("Queued at the epoch it was sent back from (the next dispatch moves it on): the same") {
    w.job.phase = JobPhase::kQueued;
    w.job.epoch = 1;
    w.in.intents.clear();  // its rows as the requeue left them
    w.Intent("c1", "Workload", 1, false);
    w.Intent("c1", "Job", 1, false);
    w.in.observed["c1"].workloads.clear();
    CHECK(Decide(w.Input()).step == "earlier-run");
  }
  SECTION("not seen ended in a view that is behind: left for the relist, not deleted, while no run may start") {
    w.in.observed["c1"].jobs[0].state = RemoteJobState::kRunning;
    w.behind = {"c1"};
    Plan wait = Decide(w.Input());
    CHECK(wait.step != "earlier-run");
    CHECK(Count(wait, Verb::kDelete, "Job", "c1") == 0);
    w.behind.clear();  // listed again, still running: fenced
    CHECK(Count(Decide(w.Input()), Verb::kDelete, "Job", "c1") == 1);
  }
  SECTION("a verdict that would end the job waits for the relist too: its cleanup would delete that run") {
    w.in.observed["c1"].jobs[0].state = RemoteJobState::kRunning;
    w.behind = {"c1"};
    auto ends_now = [&](const Plan& p) {
      return p.write && p.write->phase && (IsFinal(*p.write->phase) || *p.write->phase == JobPhase::kUnschedulable);
    };
    const bool timeout = GENERATE(true, false);
    if (timeout) {
      w.spec.dispatch.timeout_seconds = 1;  // nominated 5 s ago
    } else {  // Unschedulable, while Queued
      w.job.phase = JobPhase::kQueued;
      w.in.placement = Candidates({});
      w.in.placement->unschedulable = true;
      w.in.placement->excluded.push_back({"c2", {placement::Filter::kQuota, "too small", true}});
    }
    INFO((timeout ? "dispatch timeout" : "Unschedulable"));
    Plan wait = Decide(w.Input());
    CHECK_FALSE(ends_now(wait));
    CHECK(Count(wait, Verb::kDelete, "Job", "c1") == 0);
    CHECK(wait.requeue_ms == w.in.options.retry_ms);
    REQUIRE(wait.write);
    REQUIRE(wait.write->message);
    CHECK_THAT(*wait.write->message, Catch::Contains("waiting for c1 to list its objects again"));
    w.job.message = *wait.write->message;  // told once
    CHECK_FALSE(Decide(w.Input()).write);
    SECTION("listed again, still running: the verdict goes") {
      w.behind.clear();
      Plan verdict = Decide(w.Input());
      CHECK(ends_now(verdict));
    }
    SECTION("listed again, succeeded: the job Succeeds as that run did") {
      w.behind.clear();
      w.in.observed["c1"].jobs[0].state = RemoteJobState::kSucceeded;
      CHECK(Decide(w.Input()).step == "earlier-run");
    }
    SECTION("behind for relist_wait_ms (its lists keep failing): the verdict goes") {
      w.clusters["c1"].behind_for_ms = w.in.options.relist_wait_ms;
      CHECK(ends_now(Decide(w.Input())));
    }
  }
  SECTION("past its dispatch timeout, waiting for that relist, it takes no lease: the lease would fence the run") {
    w.in.observed["c1"].jobs[0].state = RemoteJobState::kRunning;
    w.behind = {"c1"};
    w.spec.dispatch.timeout_seconds = 1;
    w.Intent("c2", "Workload", 2);
    w.Workload("c2", 2).admitted = true;
    Plan wait = Decide(w.Input());
    CHECK((!wait.write || !wait.write->phase));
    CHECK((!wait.write || !wait.write->cluster));
    CHECK(Count(wait, Verb::kCreate, "Job") == 0);
    CHECK(Count(wait, Verb::kDelete, "Job", "c1") == 0);
    w.spec.dispatch.timeout_seconds = 3600;  // within it: the lease goes, as before
    Plan lease = Decide(w.Input());
    REQUIRE(lease.write);
    CHECK(lease.write->cluster == std::optional<std::string>("c2"));
  }
  SECTION("leased: fenced even in a view that is behind, so that its delete is out before the earlier-run gate "
          "may let the new run start") {
    w.in.observed["c1"].jobs[0].state = RemoteJobState::kRunning;
    w.behind = {"c1"};
    w.job.phase = JobPhase::kAdmitted;
    w.job.cluster = "c2";
    w.job.lease_ms = w.in.now_ms - 1'000;
    w.Intent("c2", "Workload", 2);
    w.Intent("c2", "Job", 2);
    w.Workload("c2", 2).admitted = true;
    CHECK(Count(Decide(w.Input()), Verb::kDelete, "Job", "c1") == 1);
  }
  SECTION("failed there: dispatched again, as a loss under Requeue asks") {
    w.in.observed["c1"].jobs[0].state = RemoteJobState::kFailed;
    Plan p = Decide(w.Input());
    CHECK(p.step != "earlier-run");
    CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);  // fenced
  }
  SECTION("leased at the new epoch: a run of it may have been created, even while the job says it waits for "
          "the earlier run, and that run goes on") {
    w.job.phase = JobPhase::kAdmitted;
    w.job.cluster = "c2";
    w.job.lease_ms = w.in.now_ms - 1'000;
    w.job.message = "admitted by c2 at epoch 2";  // the gate let it go, or never held it (c1 lost then)
    w.Intent("c2", "Workload", 2);
    w.Intent("c2", "Job", 2);
    w.Workload("c2", 2).admitted = true;
    CHECK(Decide(w.Input()).step != "earlier-run");
    // The gate says it waits again (the earlier run turned up), which it
    // also does after a create it sent went unseen.
    w.job.message = "admitted by c2 at epoch 2; starts there once its earlier run in c1 is seen deleted";
    CHECK(Decide(w.Input()).step != "earlier-run");
  }
  SECTION("an object with the job's labels and another name, or no epoch, is not taken for its run") {
    SECTION("another name") { w.in.observed["c1"].jobs[0].name = "copied-by-hand"; }
    SECTION("another namespace") { w.in.observed["c1"].jobs[0].ns = "team-b"; }
    SECTION("no epoch") { w.in.observed["c1"].jobs[0].epoch = 0; }
    CHECK(Decide(w.Input()).step != "earlier-run");
  }
  SECTION("running at the new epoch: it runs on") {
    w.job.phase = JobPhase::kRunning;
    w.job.cluster = "c2";
    w.Intent("c2", "Workload", 2);
    w.Intent("c2", "Job", 2);
    w.Workload("c2", 2).admitted = true;
    w.RemoteJob("c2", 2, RemoteJobState::kRunning);
    CHECK(Decide(w.Input()).step != "earlier-run");
  }
  SECTION("seen in a cluster that does not answer now: not taken") {
    w.clusters["c1"].ready = false;
    CHECK(Decide(w.Input()).step != "earlier-run");
  }
}

}  // namespace gantry::dispatch

namespace gantry::dispatch {
using namespace decide_world;

TEST_CASE("a real job created and not seen since holds its withdrawn row, at any epoch, until a silent watch would "
          "be found dead: no copy goes there, nothing starts elsewhere, and a cancel waits",
          "[dispatch][decide]") {
  // Created in c1 at epoch 1 (answered 201), and the job sent back since
  // (evicted, say). c1's view of its jobs is current, but may come from a
  // watch gone silent not yet found dead: it shows nothing.
  World w;
  w.job.phase = JobPhase::kQueued;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 60'000;
  w.Intent("c1", "Workload", 1, false);
  w.Intent("c1", "Job", 1, false);
  w.in.placement = Candidates({"c1"});

  SECTION("unseen since its create: the row stays, and no copy goes to c1") {
    w.in.unseen_runs = {{"c1", 1}};
    Plan wait = Decide(w.Input());
    CHECK(Count(wait, Verb::kCreate, "Workload") == 0);
    CHECK_FALSE(Drops(wait, "c1", "Job"));
    CHECK(Drops(wait, "c1", "Workload"));  // a copy's row is not held so
    CHECK(wait.requeue_ms > 0);
    CHECK(wait.requeue_ms <= w.in.options.retry_ms);
    CHECK(EarlierRunsHoldingCopies(w.Input()) == std::vector<std::string>{"c1"});
  }
  SECTION("another epoch's run, or none (seen, or created long enough ago): the current view confirms it gone") {
    w.in.unseen_runs = {{"c1", 2}, {"c2", 1}};
    Plan go = Decide(w.Input());
    CHECK(Drops(go, "c1", "Job"));
    CHECK(Count(go, Verb::kCreate, "Workload", "c1") == 1);
  }
  SECTION("the job moved on and leased elsewhere: it does not start there meanwhile") {
    w.job.phase = JobPhase::kAdmitted;
    w.job.epoch = 2;
    w.job.cluster = "c2";
    w.job.lease_ms = w.in.now_ms - 1'000;
    w.Intent("c2", "Workload", 2);
    w.Intent("c2", "Job", 2);
    w.Workload("c2", 2).admitted = true;
    w.in.unseen_runs = {{"c1", 1}};
    Plan wait = Decide(w.Input());
    CHECK(Count(wait, Verb::kCreate, "Job") == 0);
    CHECK_FALSE(Drops(wait, "c1", "Job"));
    w.in.unseen_runs.clear();
    Plan go = Decide(w.Input());
    CHECK(Count(go, Verb::kCreate, "Job", "c2") == 1);
  }
  SECTION("a cancel is not done while the run may go on there") {
    w.job.phase = JobPhase::kCancelling;
    w.in.placement.reset();
    w.in.unseen_runs = {{"c1", 1}};
    Plan wait = Decide(w.Input());
    CHECK((!wait.write || !wait.write->phase));
    CHECK_FALSE(Drops(wait, "c1", "Job"));
    CHECK(wait.requeue_ms == w.in.options.retry_ms);
    w.in.unseen_runs.clear();
    Plan done = Decide(w.Input());
    REQUIRE(done.write);
    REQUIRE(done.write->phase);
    CHECK(*done.write->phase == JobPhase::kCancelled);
  }
}

TEST_CASE("step 4: no Workload copy goes to a cluster while an earlier run of the job may still be there: the run "
          "would adopt the copy, which has the name its label names, and start again under its admission",
          "[dispatch][decide][lost]") {
  // Requeued after c1 was lost (Queued at epoch 1); c1 answers again and
  // shows the epoch-1 run, which fencing deletes in this pass.
  World w;
  w.job.phase = JobPhase::kQueued;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 60'000;  // sent back a minute ago
  w.Intent("c1", "Workload", 1, false);
  w.Intent("c1", "Job", 1, false);
  w.RemoteJob("c1", 1, RemoteJobState::kRunning);

  SECTION("its only candidate: it waits, saying why, and looks again soon") {
    w.in.placement = Candidates({"c1"});
    Plan wait = Decide(w.Input());
    CHECK(Count(wait, Verb::kCreate, "Workload") == 0);
    CHECK(Count(wait, Verb::kDelete, "Job", "c1") == 1);  // fenced
    CHECK((!wait.write || !wait.write->phase));
    REQUIRE(wait.write);
    REQUIRE(wait.write->message);
    CHECK_THAT(*wait.write->message, Catch::Contains("its earlier run in c1 is not seen deleted yet"));
    CHECK(wait.requeue_ms == w.in.options.retry_ms);
    SECTION("seen gone, its row dropped: the copy goes there") {
      w.in.observed.erase("c1");
      w.in.intents.clear();
      Plan go = Decide(w.Input());
      CHECK(Count(go, Verb::kCreate, "Workload", "c1") == 1);
    }
    SECTION("not seen any more, its row not confirmed gone (the view behind): still not") {
      w.in.observed.erase("c1");
      w.behind = {"c1"};
      CHECK(Count(Decide(w.Input()), Verb::kCreate, "Workload") == 0);
    }
  }
  SECTION("placement's only pick: the next feasible cluster takes its place, as Widen would") {
    w.in.placement = Candidates({"c1"});
    for (const char* c : {"c1", "c2"}) {
      placement::RankedCluster r;
      r.cluster = c;
      w.in.placement->feasible.push_back(r);
    }
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);
    CHECK(Count(p, Verb::kCreate, "Workload", "c1") == 0);
  }
  SECTION("gantry explain's view: c1 is held back while the run may be there, and not once it is gone") {
    CHECK(EarlierRunsHoldingCopies(w.Input()) == std::vector<std::string>{"c1"});
    w.in.observed.erase("c1");
    w.behind = {"c1"};  // not seen, in a view that may miss it: its row is not confirmed gone
    CHECK(EarlierRunsHoldingCopies(w.Input()) == std::vector<std::string>{"c1"});
    w.behind.clear();  // a current view without it
    CHECK(EarlierRunsHoldingCopies(w.Input()).empty());
  }
  SECTION("its wait is told as an event too, once") {
    w.in.placement = Candidates({"c1"});
    Plan wait = Decide(w.Input());
    REQUIRE(wait.write);
    REQUIRE(wait.write->events.size() == 1);
    CHECK(wait.write->events[0].reason == "WaitingForEarlierRun");
    CHECK(wait.write->events[0].cluster == "c1");
  }
  SECTION("waited clusterLostTimeout since it was queued: told as a Warning, once") {
    w.in.placement = Candidates({"c1"});
    w.in.started_ms = 0;
    w.job.nominated_ms = w.in.now_ms - w.in.options.cluster_lost_timeout_ms + 1;
    Plan before = Decide(w.Input());
    REQUIRE(before.write);
    REQUIRE(before.write->events.size() == 1);
    CHECK(before.write->events[0].reason == "WaitingForEarlierRun");
    w.job.message = *before.write->message;
    w.job.nominated_ms -= 1;
    Plan overdue = Decide(w.Input());
    REQUIRE(overdue.write);
    REQUIRE(overdue.write->events.size() == 1);
    CHECK(overdue.write->events[0].reason == "EarlierRunNotSeenDeleted");
    CHECK(overdue.write->events[0].type == "Warning");
    CHECK(overdue.write->events[0].cluster == "c1");
    CHECK_THAT(*overdue.write->message, Catch::Contains("(clusterLostTimeout)"));
    CHECK(Count(overdue, Verb::kCreate, "Workload") == 0);
    w.job.message = *overdue.write->message;
    Plan again = Decide(w.Input());
    CHECK((!again.write || again.write->events.empty()));
  }
  SECTION("the view behind past relist_wait_ms: the run is deleted, not left for a relist that does not come") {
    w.in.placement = Candidates({"c1"});
    w.behind = {"c1"};
    CHECK(Count(Decide(w.Input()), Verb::kDelete, "Job", "c1") == 0);  // waits for the relist
    w.clusters["c1"].behind_for_ms = w.in.options.relist_wait_ms;
    CHECK(Count(Decide(w.Input()), Verb::kDelete, "Job", "c1") == 1);
  }
  SECTION("Nominating, every other candidate refused its copy: it waits for c1, not Failed") {
    w.job.phase = JobPhase::kNominating;
    w.job.epoch = 2;
    w.job.nominated_ms = w.in.now_ms - 1'000;
    w.Intent("c2", "Workload", 2, false);
    w.in.intents.back().refusal = "cluster c2 refused Workload team-a/x: HTTP 403 forbidden";
    w.in.placement = Candidates({"c1", "c2"});
    Plan p = Decide(w.Input());
    CHECK((!p.write || !p.write->phase));
  }
  SECTION("a cluster gantry has not listed yet (an earlier run there would not show): no copy, waiting") {
    w.in.observed.erase("c1");
    w.in.intents.clear();
    w.synced.erase("c3");
    w.in.placement = Candidates({"c3"});
    Plan wait = Decide(w.Input());
    CHECK(Count(wait, Verb::kCreate, "Workload") == 0);
    REQUIRE(wait.write);
    REQUIRE(wait.write->message);
    CHECK_THAT(*wait.write->message, Catch::Contains("gantry has not listed c3 yet"));
    CHECK(wait.requeue_ms == w.in.options.retry_ms);
    // Just after the daemon's start, while every view syncs: no write.
    w.in.since_start_ms = 1'000;
    Plan starting = Decide(w.Input());
    CHECK_FALSE(starting.write);
    CHECK(starting.requeue_ms == w.in.options.retry_ms);
  }
  SECTION("another candidate: the copy goes there only") {
    w.in.placement = Candidates({"c1", "c2"});
    Plan p = Decide(w.Input());
    CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);
    CHECK(Count(p, Verb::kCreate, "Workload", "c1") == 0);
    // The Nominated event names it, and why.
    REQUIRE(p.write);
    const auto nominated = std::find_if(p.write->events.begin(), p.write->events.end(),
                                        [](const JobEvent& e) { return e.reason == "Nominated"; });
    REQUIRE(nominated != p.write->events.end());
    CHECK_THAT(nominated->message, Catch::Contains("held back: c1 (its earlier run there is not seen deleted yet)"));
    SECTION("Nominating at epoch 2: no copy is added in c1 while the run is there, one once it is gone") {
      w.job.phase = JobPhase::kNominating;
      w.job.epoch = 2;
      w.job.nominated_ms = w.in.now_ms - 1'000;
      w.Intent("c2", "Workload", 2);
      w.Workload("c2", 2);
      CHECK(Count(Decide(w.Input()), Verb::kCreate, "Workload", "c1") == 0);
      w.in.observed["c1"].jobs.clear();
      w.in.intents.erase(std::remove_if(w.in.intents.begin(), w.in.intents.end(),
                                        [](const RemoteIntent& i) { return i.cluster == "c1"; }),
                         w.in.intents.end());
      CHECK(Count(Decide(w.Input()), Verb::kCreate, "Workload", "c1") == 1);
    }
  }
}

}  // namespace gantry::dispatch
