// Decide() and preemption gates (DecideOptions::preemption_gate_ms): a job's
// copies may preempt in one cluster per period, the best-ranked first.
#include "decide_world.h"

namespace gantry::dispatch {
namespace {

using decide_world::Count;
using decide_world::FindIntent;
using decide_world::World;

constexpr int64_t kGateMs = 20'000;  // not the resync (30 s), so a wake-up at either is told apart

// An AllAtOnce job nominated at epoch 1 at `nominated`, with a gated copy
// pending (not admitted) in each of c1, c2 and c3; placement ranks them
// c3, c1, c2.
World PendingEverywhere(int64_t nominated) {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = nominated;
  w.in.options.preemption_gate_ms = kGateMs;
  for (const char* c : {"c1", "c2", "c3"}) {
    w.Intent(c, "Workload", 1);
    ObservedWorkload& copy = w.Workload(c, 1);
    copy.gated = true;
    copy.reason = "Pending";
    copy.message = "couldn't assign flavors to pod set main: insufficient unused quota for cpu";
  }
  placement::Decision d;
  for (const char* c : {"c3", "c1", "c2"}) {
    d.candidates.push_back(c);
    placement::RankedCluster r;
    r.cluster = c;
    d.feasible.push_back(r);
  }
  w.in.placement = d;
  return w;
}

int OpenGates(const Plan& p, const std::string& cluster = "") { return Count(p, Verb::kOpenGate, "Workload", cluster); }

}  // namespace

// The first gate is due a period after the nomination: the nominating pass
// asks for a pass then, not only for the copies' watch events (the first
// status of a copy may come in the event of its creation, which wakes
// nothing).
TEST_CASE("step 4: a nomination asks for a pass when the first preemption gate is due", "[dispatch][decide][gates]") {
  World w;
  w.in.placement = decide_world::Candidates({"c1", "c2"});
  w.in.options.preemption_gate_ms = kGateMs;
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "nominate");
  CHECK(p.requeue_ms == kGateMs);
  w.in.options.preemption_gate_ms = 0;  // no gates: the resync, as before
  CHECK(Decide(w.Input()).requeue_ms == w.in.options.resync_ms);
}

TEST_CASE("step 9: copies are created with gantry's preemption gate, closed", "[dispatch][decide][gates]") {
  World w;
  w.in.placement = decide_world::Candidates({"c1", "c2"});
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "nominate");
  REQUIRE(Count(p, Verb::kCreate, "Workload") == 2);
  for (const Action& a : p.actions) {
    const auto& gates = a.body["spec"]["preemptionGates"];
    REQUIRE(gates.is_array());
    REQUIRE(gates.size() == 1);
    CHECK(gates[0]["name"] == kPreemptionGate);
    CHECK_FALSE(a.body.contains("status"));  // closed: Kueue's default
  }

  SECTION("not in a Kueue v1beta1 cluster, which has no gates") {
    w.clusters["c2"].config.kueue_api_version = inventory::KueueApiVersion::kV1beta1;
    Plan q = Decide(w.Input());
    for (const Action& a : q.actions) CHECK(a.body["spec"].contains("preemptionGates") == (a.cluster == "c1"));
  }
  SECTION("not when gates are off (preemptionGateSeconds: 0)") {
    w.in.options.preemption_gate_ms = 0;
    Plan q = Decide(w.Input());
    for (const Action& a : q.actions) CHECK_FALSE(a.body["spec"].contains("preemptionGates"));
  }
}

TEST_CASE("step 9: no gate opens before a period has passed without admission", "[dispatch][decide][gates]") {
  World w = PendingEverywhere(1'000'000);
  w.in.now_ms = 1'000'000 + kGateMs - 1;
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "copies");
  CHECK(OpenGates(p) == 0);
  CHECK_FALSE(p.write);
  CHECK(p.requeue_ms == 1);  // woken when the first gate is due
}

TEST_CASE("step 9: after a period the best-ranked copy's gate opens, recorded first", "[dispatch][decide][gates]") {
  World w = PendingEverywhere(1'000'000);
  w.in.now_ms = 1'000'000 + kGateMs;
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "copies");
  REQUIRE(OpenGates(p) == 1);
  const Action& a = p.actions.front();
  CHECK(a.cluster == "c3");  // ranked first by placement, not first by name
  CHECK(a.path == WorkloadPath(inventory::KueueApiVersion::kV1beta2, "team-a", a.name) + "/status");
  CHECK(a.body["status"]["preemptionGates"][0]["name"] == kPreemptionGate);
  CHECK(a.body["status"]["preemptionGates"][0]["position"] == "Open");
  REQUIRE(p.write);
  const RemoteIntent* row = FindIntent(*p.write, "c3", "Workload");
  REQUIRE(row);
  CHECK(row->gate_opened_ms == w.in.now_ms);
  CHECK(row->present);
  CHECK(row->epoch == 1);
  // Every copy waits for quota alone (Kueue's reason Pending): the first
  // opening says the gates open in turn, and that none would preempt yet.
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events[0].reason == "PreemptionAllowed");
  CHECK(p.write->events[0].cluster == "c3");
  CHECK_THAT(p.write->events[0].message, Catch::Contains("one at a time, c3 first"));
  CHECK(p.requeue_ms == kGateMs);  // the next gate is due a period after this one
  CHECK_FALSE(MayBeLost(p, w.in.intents));

  SECTION("where Kueue says the gate holds the copy back, the opening is an event naming the cluster") {
    w.in.observed["c3"].workloads[0].held_by_gate = true;
    Plan q = Decide(w.Input());
    REQUIRE(OpenGates(q, "c3") == 1);
    REQUIRE(q.write);
    REQUIRE(q.write->events.size() == 1);
    CHECK(q.write->events[0].reason == "PreemptionAllowed");
    CHECK(q.write->events[0].cluster == "c3");
    CHECK_THAT(q.write->events[0].message, Catch::StartsWith("c3 may preempt lower-priority work"));
  }

  SECTION("the next pass in the same period opens no other gate") {
    w.in.intents[2].gate_opened_ms = w.in.now_ms;  // c3's row (intents are c1, c2, c3)
    w.in.observed["c3"].workloads[0].gate_open = true;
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q) == 0);
    CHECK_FALSE(q.write);
    CHECK(q.requeue_ms == kGateMs);  // woken when the next is due
  }
  SECTION("a period later the second-ranked copy's gate opens") {
    w.in.intents[2].gate_opened_ms = w.in.now_ms;
    w.in.observed["c3"].workloads[0].gate_open = true;
    w.in.now_ms = 1'000'000 + 2 * kGateMs;
    Plan q = Decide(w.Input());
    REQUIRE(OpenGates(q) == 1);
    CHECK(OpenGates(q, "c1") == 1);
    // The next openings of copies that wait for quota alone are not told
    // again; one Kueue says its gate holds back is.
    REQUIRE(q.write);
    CHECK(q.write->events.empty());
    w.in.observed["c1"].workloads[0].held_by_gate = true;
    Plan r = Decide(w.Input());
    REQUIRE(r.write);
    REQUIRE(r.write->events.size() == 1);
    CHECK_THAT(r.write->events[0].message, Catch::StartsWith("c1 may preempt"));
  }
  SECTION("a row that says open but a copy that shows it closed is patched again, and no other opens") {
    w.in.intents[2].gate_opened_ms = w.in.now_ms;  // recorded, but the patch was lost (a crash) or the copy re-created
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q) == 1);
    CHECK(OpenGates(q, "c3") == 1);
    CHECK_FALSE(q.write);
  }
  SECTION("the patch is of the copy as last seen: its version, and other gates kept") {
    ObservedWorkload& seen = w.in.observed["c3"].workloads[0];
    seen.resource_version = "1234";
    const nlohmann::json other = {{"name", "example.com/quota-check"}, {"position", "Open"}};
    seen.other_gate_states = nlohmann::json::array({other});
    Plan q = Decide(w.Input());
    REQUIRE(OpenGates(q, "c3") == 1);
    const nlohmann::json& body = q.actions.front().body;
    CHECK(body["metadata"] == nlohmann::json({{"resourceVersion", "1234"}}));
    REQUIRE(body["status"]["preemptionGates"].size() == 2);
    CHECK(body["status"]["preemptionGates"][0] == other);
    CHECK(body["status"]["preemptionGates"][1]["name"] == kPreemptionGate);
  }
  SECTION("a copy seen without a resourceVersion is not patched: the patch would have no precondition") {
    w.in.observed["c3"].workloads[0].resource_version.clear();
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q, "c3") == 0);
  }

  SECTION("a cluster the placement no longer ranks comes last") {
    w.in.placement->feasible.erase(w.in.placement->feasible.begin());  // c3 dropped
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q, "c1") == 1);
  }
}

TEST_CASE("step 9: no gate opens while a copy holds quota, or the copies are ungated", "[dispatch][decide][gates]") {
  World w = PendingEverywhere(1'000'000);
  w.in.now_ms = 1'000'000 + 5 * kGateMs;

  SECTION("a copy holds quota, its admission checks pending: it may be admitted without preempting") {
    w.in.observed["c2"].workloads[0].quota_reserved = true;
    Plan p = Decide(w.Input());
    CHECK(OpenGates(p) == 0);
  }
  SECTION("copies without the gate (a v1beta1 cluster, or made with gates off)") {
    for (auto& [cluster, o] : w.in.observed) o.workloads[0].gated = false;
    Plan p = Decide(w.Input());
    CHECK(OpenGates(p) == 0);
  }
  SECTION("gates off") {
    w.in.options.preemption_gate_ms = 0;
    Plan p = Decide(w.Input());
    CHECK(OpenGates(p) == 0);
  }
  SECTION("an unreachable cluster's copy is passed over for the next") {
    w.clusters["c3"].ready = false;
    Plan p = Decide(w.Input());
    REQUIRE(OpenGates(p) == 1);
    CHECK(OpenGates(p, "c1") == 1);
  }
  SECTION("a copy of an older epoch is not the current one's") {
    // Epoch 2 has one copy, in c2, not seen yet; the epoch-1 copies are stale.
    w.job.epoch = 2;
    w.Intent("c2", "Workload", 2);
    w.in.intents.erase(w.in.intents.begin(), w.in.intents.begin() + 3);
    w.in.max_copies = 1;  // no copy is added beside c2's
    Plan p = Decide(w.Input());
    CHECK(OpenGates(p) == 0);
    w.Workload("c2", 2).gated = true;  // seen now
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q, "c2") == 1);
    CHECK(OpenGates(q) == 1);
  }
}

TEST_CASE("step 9: gates open a period after the last one, however late the pass", "[dispatch][decide][gates]") {
  // The daemon was down, or the copies out of sight: five periods after the
  // nomination, with no gate open yet. One opens now, the next a period on.
  World w = PendingEverywhere(1'000'000);
  w.in.now_ms = 1'000'000 + 5 * kGateMs;
  Plan p = Decide(w.Input());
  REQUIRE(OpenGates(p) == 1);
  CHECK(p.requeue_ms == kGateMs);
  const RemoteIntent* row = FindIntent(*p.write, p.actions.front().cluster, "Workload");
  REQUIRE(row);
  for (RemoteIntent& i : w.in.intents) {
    if (i.cluster == row->cluster) i.gate_opened_ms = row->gate_opened_ms;
  }
  w.in.observed[row->cluster].workloads[0].gate_open = true;
  w.in.now_ms += 1;  // the pass right after: no second gate
  Plan q = Decide(w.Input());
  CHECK(OpenGates(q) == 0);
  CHECK(q.requeue_ms == kGateMs - 1);
}

TEST_CASE("step 9: a copy Kueue says its gate holds back goes first", "[dispatch][decide][gates]") {
  World w = PendingEverywhere(1'000'000);
  w.in.now_ms = 1'000'000 + kGateMs;
  // c2, ranked last, would preempt (Kueue's reason PreemptionGated); c3 and
  // c1 wait for quota that preempting would not free.
  w.in.observed["c2"].workloads[0].held_by_gate = true;
  Plan p = Decide(w.Input());
  REQUIRE(OpenGates(p) == 1);
  CHECK(OpenGates(p, "c2") == 1);
}

TEST_CASE("step 9: while the cluster whose gate opened waits for its victims to stop, no other gate opens",
          "[dispatch][decide][gates]") {
  World w = PendingEverywhere(1'000'000);
  const int64_t opened = 1'000'000 + kGateMs;
  w.in.intents[2].gate_opened_ms = opened;  // c3's
  ObservedWorkload& c3 = w.in.observed["c3"].workloads[0];
  c3.gate_open = true;
  c3.preempting = true;  // Kueue: "Pending the preemption of 1 workload(s)"
  w.in.now_ms = opened + kGateMs;
  w.in.options.backstop_ms = 500'000;  // a stretched backstop, longer than the hold
  Plan p = Decide(w.Input());
  CHECK(OpenGates(p) == 0);
  // Held at most four periods from its opening: woken when they end.
  CHECK(p.requeue_ms == 3 * kGateMs);
  CHECK_FALSE(p.backstop);

  SECTION("a preemption that takes too long lets the next cluster try") {
    w.in.now_ms = opened + 4 * kGateMs;
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q, "c1") == 1);
  }
  SECTION("a preemption that ended without admission (victims gone, quota still short) holds nothing") {
    c3.preempting = false;
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q, "c1") == 1);
  }
  SECTION("held until four periods from the opening, not one more period") {
    w.in.now_ms = opened + 4 * kGateMs - 1;
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q) == 0);
    CHECK(q.requeue_ms == 1);
  }
  SECTION("a deactivated copy's last words hold nothing") {
    c3.active = false;
    Plan q = Decide(w.Input());
    CHECK(OpenGates(q, "c1") == 1);
  }
}

TEST_CASE("step 9: a copy that preempts although gantry never opened its gate (a Kueue without gates) holds nothing",
          "[dispatch][decide][gates]") {
  World w = PendingEverywhere(0);
  w.in.intents[0].gate_opened_ms = kGateMs;  // c1's opened a period in
  w.in.observed["c1"].workloads[0].gate_open = true;
  w.in.observed["c3"].workloads[0].preempting = true;  // its gate still closed
  w.in.now_ms = 2 * kGateMs;  // were c3 counted, the hold would last until 4 periods
  Plan p = Decide(w.Input());
  REQUIRE(OpenGates(p) == 1);
  CHECK(OpenGates(p, "c3") == 1);
}

TEST_CASE("step 9: a cluster that refused to open a gate is not asked again", "[dispatch][decide][gates]") {
  World w = PendingEverywhere(1'000'000);
  w.in.now_ms = 1'000'000 + kGateMs + 5'000;
  w.in.intents[2].gate_opened_ms = 1'000'000 + kGateMs;  // c3's
  w.in.intents[2].gate_refusal = "cluster c3 refused to open the preemption gate of Workload team-a/x: HTTP 403";
  Plan p = Decide(w.Input());
  CHECK(OpenGates(p) == 0);  // not sent again, and its period still runs
  CHECK(p.requeue_ms == kGateMs - 5'000);
  w.in.now_ms = 1'000'000 + 2 * kGateMs;
  Plan q = Decide(w.Input());
  REQUIRE(OpenGates(q) == 1);
  CHECK(OpenGates(q, "c1") == 1);  // the next in rank
}

TEST_CASE("step 5: the lease is taken as before when a gated copy is admitted", "[dispatch][decide][gates]") {
  World w = PendingEverywhere(1'000'000);
  w.in.now_ms = 1'000'000 + 3 * kGateMs;
  w.in.intents[0].gate_opened_ms = 1'000'000 + kGateMs;
  ObservedWorkload& c1 = w.in.observed["c1"].workloads[0];
  c1.gate_open = true;
  c1.quota_reserved = true;
  c1.admitted = true;
  Plan p = Decide(w.Input());
  REQUIRE(p.step == "lease");
  CHECK(p.write->cluster == "c1");
  CHECK(OpenGates(p) == 0);
  CHECK(Count(p, Verb::kDelete, "Workload") == 2);
}

}  // namespace gantry::dispatch
