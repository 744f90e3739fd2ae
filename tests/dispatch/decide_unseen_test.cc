// Decide() with rows in a cluster that answers but keeps gantry from
// listing what they name (kDeleteUnseen): the objects are withdrawn by name,
// the engine reading each first, instead of waiting until the cluster lets
// gantry list them again. A view only not synced yet is waited for.
#include <catch2/catch.hpp>

#include "decide_world.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry::dispatch {
using namespace decide_world;

namespace {

// c1 answers, but its lists of Workloads and Jobs are refused (told).
void RefuseLists(World& w) {
  w.clusters["c1"].watch_refused = "listing jobs answered 403: forbidden";
  w.clusters["c1"].watch_refused_for_ms = 60'000;
  w.synced.erase("c1");
}

// How many deletes by name the plan sends, anywhere.
int UnseenDeletes(const Plan& p) {
  return Count(p, Verb::kDeleteUnseen, "Workload") + Count(p, Verb::kDeleteUnseen, "Job");
}

// Running at epoch 3 in c2; c1, which refuses gantry its lists, holds the
// epoch-2 rows, withdrawn.
void MovedOnFromC1(World& w) {
  w.OwnedBy(JobPhase::kRunning, "c2", 3);
  w.Workload("c2", 3).admitted = true;
  w.RemoteJob("c2", 3, RemoteJobState::kRunning);
  w.Intent("c1", "Workload", 2, false);
  w.Intent("c1", "Job", 2, false);
  RefuseLists(w);
}

}  // namespace

TEST_CASE("a cancel withdraws the job's objects by name from a cluster that refuses gantry their list",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  w.job.phase = JobPhase::kCancelling;
  RefuseLists(w);
  Plan p = Decide(w.Input());
  CHECK(p.step == "cancel");
  CHECK(Count(p, Verb::kDeleteUnseen, "Workload", "c1") == 1);
  CHECK(Count(p, Verb::kDeleteUnseen, "Job", "c1") == 1);
  CHECK(Count(p, Verb::kDelete, "Job") == 0);
  const Action* job = Find(p, Verb::kDeleteUnseen, "Job", "c1");
  REQUIRE(job);
  CHECK(job->epoch == 2);
  CHECK(job->path == "/apis/batch/v1/namespaces/team-a/jobs/" + RemoteName("train", w.job.uid));
  const Action* copy = Find(p, Verb::kDeleteUnseen, "Workload", "c1");
  REQUIRE(copy);
  CHECK(copy->path == WorkloadPath(inventory::KueueApiVersion::kV1beta2, "team-a", RemoteName("train", w.job.uid)));
  // The rows stay until the cluster shows the objects gone: the job waits,
  // saying for what, and looks again soon.
  REQUIRE(p.write);
  CHECK(p.write->drop_intents.empty());
  CHECK_FALSE(p.write->phase);
  CHECK_THAT(*p.write->message, Catch::Contains("waiting for cluster(s) c1 to confirm deletion"));
  CHECK(p.requeue_ms == w.in.options.retry_ms);

  SECTION("not while the view is only not synced yet (a restart): that is waited for") {
    w.clusters["c1"].watch_refused.clear();
    w.clusters["c1"].watch_refused_for_ms = 0;
    Plan q = Decide(w.Input());
    CHECK(UnseenDeletes(q) == 0);
  }
  SECTION("not to a cluster out of reach") {
    w.clusters["c1"].ready = false;
    w.clusters["c1"].lost_for_ms = 1'000;
    Plan q = Decide(w.Input());
    CHECK(q.actions.empty());
  }
  SECTION("a refusal of the job's kind alone is enough (its JobSets, say)") {
    w.spec.template_object = {{"apiVersion", "jobset.x-k8s.io/v1alpha2"}, {"kind", "JobSet"}};
    w.clusters["c1"].watch_refused.clear();
    w.clusters["c1"].kind_refused["jobsets"] = {"listing jobsets answered 500", 60'000};
    w.in.resource = "jobsets";
    Plan q = Decide(w.Input());
    CHECK(Count(q, Verb::kDeleteUnseen, "Workload", "c1") == 1);
    const Action* jobset = Find(q, Verb::kDeleteUnseen, "Job", "c1");
    REQUIRE(jobset);
    CHECK(jobset->path == "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets/" + RemoteName("train", w.job.uid));
    // Another kind's refusal there does not concern this job's view.
    w.clusters["c1"].kind_refused.clear();
    w.clusters["c1"].kind_refused["trainjobs"] = {"listing trainjobs answered 500", 60'000};
    Plan other = Decide(w.Input());
    CHECK(UnseenDeletes(other) == 0);
  }
  SECTION("not in a cluster declared lost: the cancel completes without it, as before") {
    w.clusters["c1"].config.declared_lost = true;
    Plan q = Decide(w.Input());
    CHECK(UnseenDeletes(q) == 0);
    REQUIRE(q.write);
    REQUIRE(q.write->phase);
    CHECK(*q.write->phase == JobPhase::kCancelled);
  }
}

TEST_CASE("a finished job's objects kept for finishedRetentionSeconds are not withdrawn by name before their time",
          "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kSucceeded, "c1", 1);
  w.job.finished_ms = w.in.now_ms - 1'000;
  w.in.options.finished_retention_ms = 60'000;
  RefuseLists(w);
  Plan kept = Decide(w.Input());
  CHECK(UnseenDeletes(kept) == 0);
  // Their time is up: withdrawn by name.
  w.job.finished_ms = w.in.now_ms - 61'000;
  Plan due = Decide(w.Input());
  CHECK(Count(due, Verb::kDeleteUnseen, "Workload", "c1") == 1);
  CHECK(Count(due, Verb::kDeleteUnseen, "Job", "c1") == 1);
}

TEST_CASE("a lease's losers in a cluster that refuses gantry the list are withdrawn there by name",
          "[dispatch][decide]") {
  // Admitted in c2; c1's copy was marked absent by the lease.
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c2", 1);
  w.Workload("c2", 1).admitted = true;
  w.Intent("c1", "Workload", 1, false);
  RefuseLists(w);
  Plan p = Decide(w.Input());
  const Action* loser = Find(p, Verb::kDeleteUnseen, "Workload", "c1");
  REQUIRE(loser);
  CHECK(loser->epoch == 1);
  CHECK(Count(p, Verb::kDeleteUnseen, "Workload", "c2") == 0);
}

TEST_CASE("a lease's loser copy created and not seen since holds its row, and is read and deleted by name once its "
          "expectation has lapsed: the view may come from a watch gone silent",
          "[dispatch][decide]") {
  // Admitted in c2; c1's copy, created (201) and never seen, was marked
  // absent by the lease. c1 answers, and its view is current but empty.
  World w;
  w.OwnedBy(JobPhase::kAdmitted, "c2", 1);
  w.Workload("c2", 1).admitted = true;
  w.Intent("c1", "Workload", 1, false);
  w.in.unseen_copies = {{"c1", 1}};
  auto drops = [](const Plan& p, const std::string& cluster) {
    if (!p.write) return false;
    const auto& d = p.write->drop_intents;
    return std::find(d.begin(), d.end(), std::make_pair(cluster, std::string("Workload"))) != d.end();
  };
  Plan p = Decide(w.Input());
  const Action* loser = Find(p, Verb::kDeleteUnseen, "Workload", "c1");
  REQUIRE(loser);
  CHECK(loser->epoch == 1);
  CHECK_FALSE(drops(p, "c1"));
  CHECK(Count(p, Verb::kDeleteUnseen, "Workload", "c2") == 0);

  SECTION("not while its create is young: a moment after it, the view may just not show it yet; looked at again "
          "once it is not") {
    w.in.created_lately = {{{"c1", "Workload"}, w.in.now_ms + 7'000}};
    Plan q = Decide(w.Input());
    CHECK(UnseenDeletes(q) == 0);
    CHECK_FALSE(drops(q, "c1"));
    // Running in c2, nothing else due: without it, the job would wait for
    // its backstop.
    w.job.phase = JobPhase::kRunning;
    w.RemoteJob("c2", 1, RemoteJobState::kRunning);
    Plan running = Decide(w.Input());
    CHECK(UnseenDeletes(running) == 0);
    CHECK(running.requeue_ms == 7'001);
    CHECK_FALSE(running.backstop);
    w.in.unseen_copies.clear();
    CHECK(Decide(w.Input()).requeue_ms > 7'001);
  }
  SECTION("nor when the job has moved to a later epoch since that young create") {
    w.job.epoch = 2;
    w.job.phase = JobPhase::kQueued;
    w.job.cluster.clear();
    w.in.created_lately = {{{"c1", "Workload"}, w.in.now_ms + 3'000}};
    Plan q = Decide(w.Input());
    CHECK(Count(q, Verb::kDeleteUnseen, "Workload", "c1") == 0);
    CHECK_FALSE(drops(q, "c1"));
    w.in.created_lately.clear();  // older: read and deleted by name
    CHECK(Count(Decide(w.Input()), Verb::kDeleteUnseen, "Workload", "c1") == 1);
  }
  SECTION("seen: deleted as the view shows it, not read by name") {
    w.in.unseen_copies.clear();
    w.Workload("c1", 1);
    Plan q = Decide(w.Input());
    CHECK(Count(q, Verb::kDelete, "Workload", "c1") == 1);
    CHECK(UnseenDeletes(q) == 0);
  }
  SECTION("its hold over (seen, or created long enough ago) and the view empty: the row is dropped") {
    w.in.unseen_copies.clear();
    Plan q = Decide(w.Input());
    CHECK(drops(q, "c1"));
    CHECK(UnseenDeletes(q) == 0);
  }
  SECTION("read gone by name long enough after the row was withdrawn: the row is dropped") {
    w.in.intents.back().updated_ms = w.in.now_ms - 130'000;
    w.in.read_gone = {{{"c1", "Workload"}, w.in.now_ms - 1'000}};
    Plan q = Decide(w.Input());
    CHECK(drops(q, "c1"));
    CHECK(UnseenDeletes(q) == 0);
  }
  SECTION("not to a cluster out of reach") {
    w.clusters["c1"].ready = false;
    w.clusters["c1"].lost_for_ms = 1'000;
    Plan q = Decide(w.Input());
    CHECK(UnseenDeletes(q) == 0);
    CHECK_FALSE(drops(q, "c1"));
  }
}

TEST_CASE("a job moved on from an owner that refuses gantry their list has its old objects withdrawn there by name",
          "[dispatch][decide]") {
  // Moved past credentialsRefusedTimeout: epoch 3 runs in c2; c1's epoch-2
  // rows are marked absent (their objects may still run there).
  World w;
  MovedOnFromC1(w);
  Plan p = Decide(w.Input());
  const Action* zombie = Find(p, Verb::kDeleteUnseen, "Job", "c1");
  REQUIRE(zombie);
  CHECK(zombie->epoch == 2);  // the engine deletes nothing newer than the row
  CHECK(Count(p, Verb::kDeleteUnseen, "Workload", "c1") == 1);
  CHECK(Count(p, Verb::kDeleteUnseen, "Job", "c2") == 0);  // the owner's, synced, are its own business
  CHECK(Count(p, Verb::kDelete, "Job") == 0);
  CHECK(p.requeue_ms == w.in.options.retry_ms);
  // A refused copy's row names nothing of the job's: nothing to withdraw.
  World refused = w;
  refused.in.intents.pop_back();
  refused.in.intents.pop_back();
  refused.Intent("c1", "Workload", 2, false);
  refused.in.intents.back().refusal = "cluster c1 refused Workload team-a/train: HTTP 403 denied";
  CHECK(Decide(refused.Input()).actions.empty());
}

TEST_CASE("a cancel completes once its objects, withdrawn long enough, are read gone by name where the list is refused",
          "[dispatch][decide][cancel]") {
  // Cancelling; an earlier pass marked c1's rows absent 130 s ago, and
  // deleted their objects by name. A lookup has since found both gone.
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  w.job.phase = JobPhase::kCancelling;
  for (RemoteIntent& i : w.in.intents) {
    i.present = false;
    i.updated_ms = w.in.now_ms - 130'000;
  }
  RefuseLists(w);
  const int64_t read_at = w.in.now_ms - 5'000;
  w.in.read_gone[{"c1", "Workload"}] = read_at;
  w.in.read_gone[{"c1", "Job"}] = read_at;
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  CHECK(p.write->drop_intents.size() == 2);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kCancelled);
  CHECK(UnseenDeletes(p) == 0);  // nothing more to ask there

  SECTION("not when the lookup came sooner after the withdrawal than notFoundConfirmsAfterSeconds") {
    // A create sent before the withdrawal could still land after that read.
    w.in.read_gone[{"c1", "Job"}] = w.in.now_ms - 130'000 + w.in.options.not_found_confirms_after_ms - 1;
    Plan q = Decide(w.Input());
    REQUIRE(q.write);
    REQUIRE(q.write->drop_intents.size() == 1);
    CHECK(q.write->drop_intents[0] == std::make_pair(std::string("c1"), std::string("Workload")));
    CHECK_FALSE(q.write->phase);  // still waiting for c1
    CHECK(Count(q, Verb::kDeleteUnseen, "Job", "c1") == 1);  // asked again (when due: the engine's UnseenAsks)
    CHECK(Count(q, Verb::kDeleteUnseen, "Workload", "c1") == 0);
  }
  SECTION("not for a row withdrawn again after the read (updated since)") {
    for (RemoteIntent& i : w.in.intents) i.updated_ms = read_at + 1;
    Plan q = Decide(w.Input());
    CHECK((!q.write || q.write->drop_intents.empty()));
    CHECK(UnseenDeletes(q) == 2);
  }
  SECTION("not in a cluster that lets gantry list again: its view says, not a read by name") {
    w.clusters["c1"].watch_refused.clear();
    w.clusters["c1"].watch_refused_for_ms = 0;
    w.synced.insert("c1");
    w.RemoteJob("c1", 2, RemoteJobState::kRunning);  // the view shows the job still there
    Plan q = Decide(w.Input());
    REQUIRE(q.write);
    REQUIRE(q.write->drop_intents.size() == 1);
    CHECK(q.write->drop_intents[0].second == "Workload");
    CHECK_FALSE(q.write->phase);
    CHECK(Count(q, Verb::kDelete, "Job", "c1") == 1);
  }
  SECTION("not in a cluster out of reach") {
    w.clusters["c1"].ready = false;
    w.clusters["c1"].lost_for_ms = 1'000;
    Plan q = Decide(w.Input());
    CHECK((!q.write || q.write->drop_intents.empty()));
  }
}

TEST_CASE("a row still wanted is never dropped by a read that found its object gone", "[dispatch][decide]") {
  World w;
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  for (RemoteIntent& i : w.in.intents) i.updated_ms = w.in.now_ms - 600'000;
  RefuseLists(w);
  w.in.read_gone[{"c1", "Workload"}] = w.in.now_ms - 1'000;
  w.in.read_gone[{"c1", "Job"}] = w.in.now_ms - 1'000;
  Plan p = Decide(w.Input());
  CHECK((!p.write || p.write->drop_intents.empty()));
}

TEST_CASE("an old epoch's rows where the list is refused are dropped once read gone by name", "[dispatch][decide]") {
  // Moved on from c1 (epoch 2) to c2 (epoch 3); c1's rows were withdrawn
  // 200 s ago and their objects since read gone.
  World w;
  MovedOnFromC1(w);
  for (RemoteIntent& i : w.in.intents) i.updated_ms = w.in.now_ms - 200'000;
  w.in.read_gone[{"c1", "Workload"}] = w.in.now_ms - 10'000;
  w.in.read_gone[{"c1", "Job"}] = w.in.now_ms - 10'000;
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  CHECK(p.write->drop_intents.size() == 2);
  for (const auto& d : p.write->drop_intents) CHECK(d.first == "c1");
  CHECK(UnseenDeletes(p) == 0);
}

}  // namespace gantry::dispatch
