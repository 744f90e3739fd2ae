// Decide() with Workload copies that their candidate refused (the engine
// records the cluster's answer in the row: RemoteIntent::refusal).
#include <fmt/format.h>

#include "decide_world.h"

namespace gantry::dispatch {
namespace {

using decide_world::Candidates;
using decide_world::Count;
using decide_world::Feasible;
using decide_world::World;

// The row the engine writes when cluster refused the copy at epoch.
void Refused(World& w, const std::string& cluster, int64_t epoch, const std::string& answer) {
  w.Intent(cluster, "Workload", epoch, false);
  w.in.intents.back().refusal = answer;
}

}  // namespace

TEST_CASE("step 9: a refused copy is not created again while another candidate is left", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 forbidden");
  w.Intent("c2", "Workload", 1);
  w.Workload("c2", 1);
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  CHECK(Count(p, Verb::kCreate, "Workload") == 0);
  // Its row stays: it is what keeps c1 from being asked again.
  CHECK((!p.write || p.write->drop_intents.empty()));
  CHECK(p.requeue_ms > 0);
}

TEST_CASE("step 9: every candidate refused its copy: the job fails with each answer", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 2;
  Refused(w, "c1", 2, "cluster c1 refused Workload team-a/x: HTTP 403 denied by policy");
  Refused(w, "c2", 2, "Workload team-a/x already exists in cluster c2 and was not created by gantry");
  Refused(w, "c3", 1, "an older epoch's answer");  // not this epoch's: not named, and its row goes
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kFailed);
  const std::string message = p.write->message.value_or("");
  CHECK(message.find("every candidate cluster refused") != std::string::npos);
  CHECK(message.find("c1: cluster c1 refused Workload team-a/x: HTTP 403 denied by policy") != std::string::npos);
  CHECK(message.find("c2: Workload team-a/x already exists") != std::string::npos);
  CHECK(message.find("older epoch") == std::string::npos);
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events[0].reason == "Refused");
  CHECK(p.write->events[0].type == "Warning");
  const auto& drops = p.write->drop_intents;
  CHECK(std::find(drops.begin(), drops.end(), std::make_pair(std::string("c3"), std::string("Workload"))) !=
        drops.end());

  // The next pass (the job final) drops this epoch's rows too, wherever the cluster is.
  w.job.phase = JobPhase::kFailed;
  w.in.intents.pop_back();
  w.synced.erase("c1");
  w.clusters["c2"].ready = false;
  Plan cleanup = Decide(w.Input());
  REQUIRE(cleanup.write);
  CHECK(cleanup.write->drop_intents.size() == 2);
  CHECK(cleanup.requeue_ms == -1);  // nothing left anywhere
}

TEST_CASE("step 9: a refused copy and one in a removed cluster: dispatched again, not failed", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 404 namespaces \"team-a\" not found");
  w.Intent("c9", "Workload", 1);  // c9 is no longer in the inventory
  w.in.placement = Candidates({"c1"});
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kQueued);
}

TEST_CASE("step 7: Incremental asks the next feasible cluster in place of one that refused, never it again",
          "[dispatch][decide]") {
  World w;
  w.spec.dispatch.mode = DispatchMode::kIncremental;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 422 invalid");
  w.in.placement = Feasible({"c1"}, {"c1", "c2", "c3"});  // c1 still ranks first
  Plan p = Decide(w.Input());
  CHECK(p.step == "widen");
  CHECK(Count(p, Verb::kCreate, "Workload") == 1);
  CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);

  // c2 and c3 refused too, and no cluster is left to ask: the job fails.
  Refused(w, "c2", 1, "cluster c2 refused Workload team-a/x: HTTP 422 invalid");
  Refused(w, "c3", 1, "cluster c3 refused Workload team-a/x: HTTP 422 invalid");
  Plan q = Decide(w.Input());
  CHECK(q.step == "copies");
  REQUIRE(q.write);
  REQUIRE(q.write->phase);
  CHECK(*q.write->phase == JobPhase::kFailed);
}

TEST_CASE("step 4: at the next epoch a cluster that refused before is a candidate again", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kQueued;  // requeued after epoch 1 (an eviction, say)
  w.job.epoch = 1;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 forbidden");
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "nominate");
  CHECK(Count(p, Verb::kCreate, "Workload", "c1") == 1);
  REQUIRE(p.write);
  const RemoteIntent* row = decide_world::FindIntent(*p.write, "c1", "Workload");
  REQUIRE(row);
  CHECK(row->present);
  CHECK(row->epoch == 2);
  CHECK(row->refusal.empty());
}

TEST_CASE("step 4: an owner that refused the job's real job is left out of its dispatches for a while",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kQueued;  // requeued by the engine after c1 answered the create 403
  w.job.epoch = 1;
  w.in.options.job_refusal_hold_ms = 600'000;
  w.Intent("c1", "Job", 1, false);
  w.in.intents.back().refusal = "cluster c1 refused Job team-a/x: HTTP 403 forbidden";
  w.in.intents.back().updated_ms = w.in.now_ms - 60'000;
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "nominate");
  CHECK(Count(p, Verb::kCreate, "Workload", "c1") == 0);
  CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);
  REQUIRE(p.write);
  CHECK(p.write->drop_intents.empty());  // the row is what holds c1 back

  // AllAtOnce's widening does not add it either.
  World n = w;
  n.job.phase = JobPhase::kNominating;
  n.job.epoch = 2;
  n.Intent("c2", "Workload", 2);
  n.Workload("c2", 2);
  n.in.placement = Feasible({"c1", "c2"}, {"c1", "c2"});
  Plan widen = Decide(n.Input());
  CHECK(Count(widen, Verb::kCreate, "Workload", "c1") == 0);
  CHECK((!widen.write || widen.write->drop_intents.empty()));

  // Only c1 can take it now, and c3 (not Ready) may later: the job waits,
  // saying why, and is looked at again when c1's time is out.
  World only = w;
  only.in.placement = Candidates({"c1"});
  only.in.placement->excluded.push_back({"c3", {placement::Filter::kHealth, "not Ready", false}});
  Plan wait = Decide(only.Input());
  CHECK(Count(wait, Verb::kCreate, "Workload") == 0);
  REQUIRE(wait.write);
  REQUIRE(wait.write->message);
  CHECK_FALSE(wait.write->phase);
  CHECK_THAT(*wait.write->message, Catch::Contains("no cluster can take it now") &&
                                       Catch::Contains("cluster c1 refused Job team-a/x: HTTP 403") &&
                                       Catch::Contains("each left out for 10 min"));
  CHECK(wait.requeue_ms == only.in.options.resync_ms);  // a backstop: 9 min are left
  only.in.now_ms += 535'000;
  CHECK(Decide(only.Input()).requeue_ms == 5'000);  // woken when its time is out

  // Its time out, c1 is asked again.
  only.in.now_ms += 5'000;
  Plan again = Decide(only.Input());
  CHECK(Count(again, Verb::kCreate, "Workload", "c1") == 1);

  // No cluster left to take it, now or later (c3 is in another region): it
  // fails with c1's answer rather than go round again.
  World none = w;
  none.in.placement = Candidates({"c1"});
  none.in.placement->excluded.push_back({"c3", {placement::Filter::kRegion, "region us-east-1 not allowed", true}});
  Plan failed = Decide(none.Input());
  REQUIRE(failed.write);
  REQUIRE(failed.write->phase);
  CHECK(*failed.write->phase == JobPhase::kFailed);
  CHECK_THAT(*failed.write->message, Catch::Contains("every cluster that can take the job refused to create it") &&
                                         Catch::Contains("HTTP 403"));
  // A cancelled job drops the row at once: it waits for nothing.
  World cancelling = w;
  cancelling.job.phase = JobPhase::kCancelling;
  Plan cancelled = Decide(cancelling.Input());
  REQUIRE(cancelled.write);
  CHECK(cancelled.write->phase == std::optional<JobPhase>(JobPhase::kCancelled));
  CHECK(cancelled.write->drop_intents.size() == 1);
}

TEST_CASE("step 4: an owner held out after failing every create is left out for a while, its run still deleted "
          "and waited for",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kQueued;  // requeued by step 13: c1 failed every create of the real job
  w.job.epoch = 1;
  w.in.options.job_refusal_hold_ms = 600'000;
  w.Intent("c1", "Workload", 1, false);
  w.Intent("c1", "Job", 1, false);
  const std::string why = "owner cluster c1 answers gantry's reads but has failed every try to create the job there";
  w.in.intents.back().hold = why;
  w.in.intents.back().updated_ms = w.in.now_ms - 60'000;
  // A try that failed (a timeout) landed after all: c1 shows the job.
  w.RemoteJob("c1", 1, RemoteJobState::kSuspended);
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "nominate");
  CHECK(Count(p, Verb::kCreate, "Workload", "c1") == 0);
  CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);
  CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);  // withdrawn as any other row
  REQUIRE(p.write);
  auto drops_job = [](const Plan& plan) {
    const auto& d = plan.write->drop_intents;
    return std::find(d.begin(), d.end(), std::make_pair(std::string("c1"), std::string("Job"))) != d.end();
  };
  CHECK_FALSE(drops_job(p));
  const RemoteIntent* row = decide_world::FindIntent(*p.write, "c1", "Job");
  CHECK((!row || row->refusal.empty()));  // not "nothing there" while c1 shows it

  // A cancel waits for c1 to show it gone: a hold is no refusal.
  World cancelling = w;
  cancelling.job.phase = JobPhase::kCancelling;
  Plan cancel = Decide(cancelling.Input());
  CHECK(Count(cancel, Verb::kDelete, "Job", "c1") == 1);
  CHECK((!cancel.write || !cancel.write->phase));
  cancelling.in.observed.erase("c1");
  Plan cancelled = Decide(cancelling.Input());
  REQUIRE(cancelled.write);
  CHECK(cancelled.write->phase == std::optional<JobPhase>(JobPhase::kCancelled));

  // Seen gone while the hold is on: the row becomes a refused one and keeps
  // c1 out; it is not dropped.
  w.in.observed.erase("c1");
  Plan gone = Decide(w.Input());
  CHECK(Count(gone, Verb::kCreate, "Workload", "c1") == 0);
  REQUIRE(gone.write);
  CHECK_FALSE(drops_job(gone));
  row = decide_world::FindIntent(*gone.write, "c1", "Job");
  REQUIRE(row);
  CHECK(row->refusal == why);

  // Only c1 can take it, and nothing else ever will: unlike a refusal, a
  // hold does not fail the job; it waits out the hold, saying why.
  World only = w;
  only.in.placement = Candidates({"c1"});
  only.in.placement->excluded.push_back({"c3", {placement::Filter::kRegion, "region us-east-1 not allowed", true}});
  Plan wait = Decide(only.Input());
  REQUIRE(wait.write);
  CHECK_FALSE(wait.write->phase);
  REQUIRE(wait.write->message);
  CHECK_THAT(*wait.write->message, Catch::Contains("no cluster can take it now") && Catch::Contains(why) &&
                                       Catch::Contains("each left out for 10 min"));
  CHECK(wait.requeue_ms == only.in.options.resync_ms);
  // Its time out, c1 is asked again.
  only.in.now_ms += 540'000;
  CHECK(Count(Decide(only.Input()), Verb::kCreate, "Workload", "c1") == 1);
}

TEST_CASE("a cluster held out is one that may take the job later: a refusal elsewhere does not fail the job",
          "[dispatch][decide]") {
  const std::string why = "owner cluster c1 answers gantry's reads but has failed every try to create the job there";
  World w;
  w.in.options.job_refusal_hold_ms = 600'000;
  // c1's run at epoch 1 seen gone: its row is refused and held.
  w.Intent("c1", "Job", 1, false);
  w.in.intents.back().hold = why;
  w.in.intents.back().refusal = why;
  w.in.intents.back().updated_ms = w.in.now_ms - 60'000;

  SECTION("step 9: the only copy of the epoch refused, c1 held: the job waits for c1, not fails") {
    w.job.phase = JobPhase::kNominating;
    w.job.epoch = 2;
    w.job.nominated_ms = w.in.now_ms - 1'000;
    Refused(w, "c2", 2, "cluster c2 refused Workload team-a/x: HTTP 403 forbidden");
    w.in.placement = Candidates({"c1", "c2"});
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    CHECK_FALSE(p.write->phase);
    REQUIRE(p.write->message);
    CHECK_THAT(*p.write->message, Catch::Contains("waiting for c1"));
    CHECK(p.requeue_ms <= 540'000);
    // The hold over, c1 gets a copy at this epoch.
    w.in.now_ms += 540'000;
    CHECK(Count(Decide(w.Input()), Verb::kCreate, "Workload", "c1") == 1);
  }
  SECTION("step 4: c2 refused the real job, c1 held and not Ready now: the job waits, not fails") {
    w.job.phase = JobPhase::kQueued;
    w.job.epoch = 2;
    w.Intent("c2", "Job", 2, false);
    w.in.intents.back().refusal = "cluster c2 refused Job team-a/x: HTTP 403 forbidden";
    w.in.intents.back().updated_ms = w.in.now_ms - 1'000;
    w.in.placement = Candidates({"c2"});
    w.in.placement->excluded.push_back({"c1", {placement::Filter::kHealth, "not Ready", false}});
    Plan p = Decide(w.Input());
    REQUIRE(p.write);
    CHECK_FALSE(p.write->phase);
    CHECK_THAT(*p.write->message, Catch::Contains("no cluster can take it now"));
  }
  SECTION("a held row in a cluster removed from the inventory is dropped, not kept as refused") {
    World r;
    r.in.options.job_refusal_hold_ms = 600'000;
    r.job.phase = JobPhase::kQueued;
    r.job.epoch = 1;
    r.Intent("c1", "Job", 1, false);
    r.in.intents.back().hold = why;
    r.in.intents.back().updated_ms = r.in.now_ms - 1'000;
    r.clusters.erase("c1");
    r.synced.erase("c1");
    r.in.inventory_confirmed = true;
    r.in.placement = Candidates({"c2"});
    Plan p = Decide(r.Input());
    REQUIRE(p.write);
    const auto& d = p.write->drop_intents;
    CHECK(std::find(d.begin(), d.end(), std::make_pair(std::string("c1"), std::string("Job"))) != d.end());
    const RemoteIntent* row = decide_world::FindIntent(*p.write, "c1", "Job");
    CHECK((!row || row->refusal.empty()));
  }
}

TEST_CASE("step 6: the timeout's reasons name the candidates that refused", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.spec.dispatch.timeout_seconds = 60;
  w.job.nominated_ms = w.in.now_ms - 61'000;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 forbidden");
  w.Intent("c2", "Workload", 1);
  w.Workload("c2", 1);
  w.in.placement = Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "timeout");
  REQUIRE(p.write);
  const std::string message = p.write->message.value_or("");
  CHECK(message.find("c1: refused the Workload copy (cluster c1 refused Workload team-a/x: HTTP 403 forbidden)") !=
        std::string::npos);
  CHECK(message.find("c2: not admitted") != std::string::npos);
}

TEST_CASE("step 7: AllAtOnce asks the feasible clusters beyond its candidates in place of those that refused",
          "[dispatch][decide]") {
  World w;  // AllAtOnce, the default
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 denied by policy");
  Refused(w, "c2", 1, "cluster c2 refused Workload team-a/x: HTTP 403 denied by policy");
  w.clusters["c4"] = w.clusters["c3"];
  w.clusters["c4"].config.name = "c4";
  w.synced.insert("c4");
  // maxCopies 2 chose c1 and c2 of the four feasible clusters.
  w.in.placement = Feasible({"c1", "c2"}, {"c1", "c2", "c3", "c4"});
  w.in.max_copies = 2;
  Plan p = Decide(w.Input());
  CHECK(p.step == "widen");
  CHECK(Count(p, Verb::kCreate, "Workload") == 2);
  CHECK(Count(p, Verb::kCreate, "Workload", "c3") == 1);
  CHECK(Count(p, Verb::kCreate, "Workload", "c4") == 1);
  REQUIRE(p.write);
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events[0].message.find("in place of the clusters that refused") != std::string::npos);

  // A deactivated copy keeps its slot (step 8 and its backoff deal with it):
  // only the refused one is replaced.
  World mixed = w;
  mixed.in.intents.pop_back();  // c2 did not refuse: its copy was deactivated
  mixed.Intent("c2", "Workload", 1);
  ObservedWorkload& rejected = mixed.Workload("c2", 1);
  rejected.active = false;
  Plan m = Decide(mixed.Input());
  CHECK(m.step == "widen");
  CHECK(Count(m, Verb::kCreate, "Workload") == 1);
  CHECK(Count(m, Verb::kCreate, "Workload", "c3") == 1);

  // Without refusals, AllAtOnce adds nothing beyond maxCopies...
  World plain;
  plain.job.phase = JobPhase::kNominating;
  plain.job.epoch = 1;
  plain.Intent("c1", "Workload", 1);
  plain.Workload("c1", 1);
  plain.in.placement = Feasible({"c1"}, {"c1", "c2", "c3"});
  plain.in.max_copies = 1;
  CHECK(Decide(plain.Input()).step == "copies");
}

TEST_CASE("step 7: AllAtOnce adds a copy in a cluster that can take the job only after its nomination",
          "[dispatch][decide]") {
  // Nominated to c1 alone (c2 was full, or not Ready); c1 is full now and
  // c2 is not: the job is not left waiting on c1 alone.
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1);
  w.Workload("c1", 1);
  w.in.placement = Feasible({"c2"}, {"c2"});
  Plan p = Decide(w.Input());
  CHECK(p.step == "widen");
  CHECK(Count(p, Verb::kCreate, "Workload") == 1);
  CHECK(Count(p, Verb::kCreate, "Workload", "c2") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload") == 0);  // c1's copy stays: c1 may free up first
  REQUIRE(p.write);
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events[0].message ==
        "Workload copies added to c2, feasible for the job now (whether there is room, its Kueue's quota decides)");
  REQUIRE(p.write->upsert_intents.size() == 1);
  CHECK(p.write->upsert_intents[0].epoch == 1);  // the same epoch: no new nomination

  // Once c2's copy is out, nothing more: each cluster gets one copy an epoch.
  w.Intent("c2", "Workload", 1);
  w.Workload("c2", 1);
  CHECK(Decide(w.Input()).step == "copies");

  // While a copy holds quota (its admission checks pending, say), no copy
  // is added: the cluster may be provisioning for it.
  World holding;
  holding.job.phase = JobPhase::kNominating;
  holding.job.epoch = 1;
  holding.Intent("c1", "Workload", 1);
  holding.Workload("c1", 1).quota_reserved = true;
  holding.in.placement = Feasible({"c2"}, {"c2"});
  Plan held = Decide(holding.Input());
  CHECK(held.step == "copies");
  CHECK(Count(held, Verb::kCreate, "Workload") == 0);
  // ... unless that copy is on its way out (evicted: its quota goes back),
  // or out of sight (its cluster unreachable: nothing known holds quota).
  World evicted = holding;
  evicted.in.observed["c1"].workloads[0].evicted = true;
  CHECK(Count(Decide(evicted.Input()), Verb::kCreate, "Workload", "c2") == 1);
  World unseen = holding;
  unseen.clusters["c1"].ready = false;
  CHECK(Count(Decide(unseen.Input()), Verb::kCreate, "Workload", "c2") == 1);
  // A refused copy is still replaced while another holds quota, but only
  // up to placement's candidates (here c1 and c3 of the feasible c1..c4).
  World refused = holding;
  refused.Intent("c2", "Workload", 1, false);
  refused.in.intents.back().refusal = "cluster c2 refused Workload team-a/x: HTTP 403 denied by policy";
  refused.in.placement = Feasible({"c1", "c3"}, {"c1", "c3", "c4"});
  Plan replaced = Decide(refused.Input());
  CHECK(replaced.step == "widen");
  CHECK(Count(replaced, Verb::kCreate, "Workload") == 1);
  CHECK(Count(replaced, Verb::kCreate, "Workload", "c3") == 1);

  // At maxCopies, a cluster that can take the job now gets no copy.
  World full;
  full.job.phase = JobPhase::kNominating;
  full.job.epoch = 1;
  full.Intent("c1", "Workload", 1);
  full.Workload("c1", 1);
  full.in.placement = Feasible({"c2"}, {"c2"});
  full.in.max_copies = 1;
  CHECK(Decide(full.Input()).step == "copies");
}

TEST_CASE("step 9: every cluster asked refused, one cannot take the job only for now: it waits, not fails",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 1'000;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 forbidden");
  w.in.placement = Feasible({"c1"}, {"c1"});
  w.in.placement->excluded.push_back({"c2", {placement::Filter::kHealth, "not Ready", false}});
  w.in.placement->excluded.push_back({"c3", {placement::Filter::kRegion, "region us-east-1 not allowed", true}});
  Plan p = Decide(w.Input());
  CHECK(p.step == "copies");
  REQUIRE(p.write);
  CHECK_FALSE(p.write->phase);
  CHECK(p.write->message.value_or("").find("waiting for c2") != std::string::npos);
  CHECK(p.requeue_ms > 0);
  CHECK(p.requeue_ms <= w.in.options.resync_ms);
  CHECK(p.actions.empty());
  auto fails = [](const Plan& plan) { return plan.write && plan.write->phase == JobPhase::kFailed; };

  // Not for ever: clusterLostTimeout after the nomination, it fails.
  World late = w;
  late.job.nominated_ms = late.in.now_ms - late.in.options.cluster_lost_timeout_ms;
  CHECK(fails(Decide(late.Input())));
  // Not for a cluster out of reach that long.
  World lost = w;
  lost.clusters["c2"].lost_for_ms = lost.in.options.cluster_lost_timeout_ms;
  CHECK(fails(Decide(lost.Input())));
  // Nor for one that refused at this epoch too, now cordoned.
  World cordoned = w;
  Refused(cordoned, "c2", 1, "cluster c2 refused Workload team-a/x: HTTP 403 forbidden");
  CHECK(fails(Decide(cordoned.Input())));
  // Only permanent exclusions left: it fails.
  w.in.placement->excluded.erase(w.in.placement->excluded.begin());
  CHECK(fails(Decide(w.Input())));
}

TEST_CASE("steps 5 and 3: refused rows never hold a lease or a cancel back, and go after the epoch's nomination ends",
          "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  Refused(w, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 forbidden");
  w.Intent("c2", "Workload", 1);
  w.Workload("c2", 1).admitted = true;
  w.in.placement = Candidates({"c1", "c2"});
  Plan lease = Decide(w.Input());
  CHECK(lease.step == "lease");
  REQUIRE(lease.write);
  CHECK(lease.write->cluster.value_or("") == "c2");
  CHECK(Count(lease, Verb::kCreate, "Job", "c2") == 1);
  CHECK(Count(lease, Verb::kCreate, "Workload") == 0);

  // Admitted in c2: c1's row goes at the next pass, though c1 is out of reach.
  World owned;
  owned.OwnedBy(JobPhase::kAdmitted, "c2", 1);
  Refused(owned, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 forbidden");
  owned.clusters["c1"].ready = false;
  owned.Workload("c2", 1).admitted = true;
  Plan next = Decide(owned.Input());
  REQUIRE(next.write);
  const auto& drops = next.write->drop_intents;
  CHECK(std::find(drops.begin(), drops.end(), std::make_pair(std::string("c1"), std::string("Workload"))) !=
        drops.end());

  // A cancel completes without waiting for the out-of-reach cluster that refused.
  World cancel;
  cancel.job.phase = JobPhase::kCancelling;
  cancel.job.epoch = 1;
  Refused(cancel, "c1", 1, "cluster c1 refused Workload team-a/x: HTTP 403 forbidden");
  cancel.clusters["c1"].ready = false;
  Plan done = Decide(cancel.Input());
  REQUIRE(done.write);
  REQUIRE(done.write->phase);
  CHECK(*done.write->phase == JobPhase::kCancelled);
  CHECK(done.write->drop_intents.size() == 1);
}

TEST_CASE("step 9: the failure names at most 8 clusters' answers", "[dispatch][decide]") {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  for (int c = 1; c <= 10; ++c) {
    Refused(w, fmt::format("c{:02}", c), 1, fmt::format("answer {:02}", c));
  }
  w.in.placement = Candidates({});
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kFailed);
  const std::string message = p.write->message.value_or("");
  CHECK(message.find("answer 08") != std::string::npos);
  CHECK(message.find("answer 09") == std::string::npos);
  CHECK(message.find("and 2 more (see the job's events)") != std::string::npos);
}

TEST_CASE("JudgeJobRefusal: a refused real job moves, fails, or waits for its owner's view", "[decide][refusal]") {
  DecideOptions opt;
  opt.retry_ms = 1'000;
  opt.not_found_confirms_after_ms = 10'000;
  opt.silent_watch_found_ms = 0;
  JobRefusalFacts f;
  f.phase = JobPhase::kAdmitted;
  f.now_ms = 100'000;
  f.view_confirms_absence = true;
  // A job that may run more than once moves, even from Running.
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kMove);
  f.phase = JobPhase::kRunning;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kMove);
  f.phase = JobPhase::kCancelling;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kFail);
  // At most once: only while nothing of it can have started.
  f.at_most_once = true;
  f.phase = JobPhase::kRunning;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kFail);
  f.phase = JobPhase::kAdmitted;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kMove);
  f.created_ms = 90'000;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kFail);
  f.created_ms = 0;
  // An earlier create went unanswered 4 s ago: it waits the 6 s left.
  f.unanswered_since_ms = 96'000;
  JobRefusalJudgement j = JudgeJobRefusal(f, opt);
  CHECK(j.verdict == JobRefusalVerdict::kWait);
  CHECK(j.wait_ms == 6'000);
  // Past that, a view that confirms the absence lets it move; one that
  // cannot (out of reach, or behind) keeps it waiting, asked every retry.
  f.now_ms = 106'000;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kMove);
  f.view_confirms_absence = false;
  j = JudgeJobRefusal(f, opt);
  CHECK(j.verdict == JobRefusalVerdict::kWait);
  CHECK(j.wait_ms == 1'000);
  // A silent watch is found dead only after 40 s: until then the view's
  // word is not enough.
  f.view_confirms_absence = true;
  opt.silent_watch_found_ms = 40'000;
  j = JudgeJobRefusal(f, opt);
  CHECK(j.verdict == JobRefusalVerdict::kWait);
  CHECK(j.wait_ms == 30'000);
  f.now_ms = 136'000;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kMove);
  // Of a kind not watched there, a job that landed would never show.
  f.kind_watched = false;
  CHECK(JudgeJobRefusal(f, opt).verdict == JobRefusalVerdict::kFail);
}

}  // namespace gantry::dispatch
