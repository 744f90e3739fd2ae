// Preemption gates end to end: two full clusters whose ClusterQueues preempt
// lower-priority work. A high-priority job's copies go to both; with
// MultiKueue each copy could preempt in its cluster, evicting work in both
// for one job that runs in one. gantry's copies carry a closed preemption
// gate: after preemptionGateSeconds without an admission, gantry opens one
// copy's gate, and only that cluster evicts anything.
#include <catch2/catch.hpp>

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dispatch_fixture.h"
#include "gantry/common/clock.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Two clusters of 2 nodes x 8 H100 (16 GPUs of nominal quota each), whose
// ClusterQueues preempt lower-priority Workloads; a victim takes 5 s to stop
// (its pods terminating), during which its quota stays taken.
const char* kPreemptingClusters = R"(clusters:
- name: c1
  accelerator: {model: H100-80GB, gpusPerNode: 8}
  nodes: 2
  preemption: {withinClusterQueue: LowerPriority, victimStopDelay: 5s}
- name: c2
  accelerator: {model: H100-80GB, gpusPerNode: 8}
  nodes: 2
  preemption: {withinClusterQueue: LowerPriority, victimStopDelay: 5s}
)";

// A job of 2 pods x 8 GPUs (a whole cluster) at this priority.
std::string WholeCluster(const std::string& name, int priority, const std::string& duration) {
  return SimJobYaml(name, "team-a", 2, 8, duration, fmt::format("  priority: {}", priority));
}

// The journal's runs of a job that were stopped by an eviction.
int Evicted(const std::vector<json>& runs) {
  int n = 0;
  for (const json& r : runs) n += r.value("endReason", "") == "Evicted" ? 1 : 0;
  return n;
}

// Options for the two preempting clusters, gates opening every `gate_seconds`.
DispatchFleetOptions PreemptingFleet(int gate_seconds) {
  DispatchFleetOptions o;
  o.sim_config_yaml = kPreemptingClusters;
  o.daemon_config_yaml = fmt::format("preemptionGateSeconds: {}", gate_seconds);
  return o;
}

// Two low-priority jobs, low-a and low-b, fill both clusters, one each.
void FillBoth(DispatchFleet& fleet) {
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", WholeCluster("low-a", 0, "120s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "low-a", {"Running"}));
  REQUIRE(fleet.Submit("team-a", WholeCluster("low-b", 0, "120s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "low-b", {"Running"}));
}

}  // namespace

TEST_CASE("a job that must preempt does so in one cluster only: its copies' gates open one at a time",
          "[e2e][dispatch][preemption]") {
  // Gates 2 s apart: shorter than a victim's 5 s to stop, so the next gate
  // must wait while the first cluster says it is preempting (at most 8 s).
  DispatchFleet fleet(PreemptingFleet(2));
  FillBoth(fleet);
  const std::string cluster_a = fleet.Job("team-a", "low-a")["status"].value("cluster", "");
  const std::string cluster_b = fleet.Job("team-a", "low-b")["status"].value("cluster", "");
  REQUIRE(cluster_a != cluster_b);

  // The high-priority job fits nowhere without preempting.
  REQUIRE(fleet.Submit("team-a", WholeCluster("high", 100, "2s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "high", {"Succeeded"}, seconds(60)));
  const std::string owner = fleet.Job("team-a", "high")["status"].value("cluster", "");
  const std::vector<std::string> reasons = Reasons(fleet, "team-a", "high");
  INFO("high's events: " << fmt::format("{}", fmt::join(reasons, ", ")));
  CHECK(Count(reasons, "PreemptionAllowed") == 1);  // one gate opened, the owner's

  // Exactly one low-priority job was evicted: the one in the owner. The
  // other ran on, undisturbed, in its cluster.
  const std::vector<json> runs_a = fleet.Runs(fleet.Uid("team-a", "low-a"));
  const std::vector<json> runs_b = fleet.Runs(fleet.Uid("team-a", "low-b"));
  INFO("low-a runs:\n" << Describe(runs_a) << "low-b runs:\n" << Describe(runs_b));
  const bool a_evicted = cluster_a == owner;
  CHECK(Evicted(runs_a) == (a_evicted ? 1 : 0));
  CHECK(Evicted(runs_b) == (a_evicted ? 0 : 1));
  const std::vector<json>& undisturbed = a_evicted ? runs_b : runs_a;
  REQUIRE(undisturbed.size() == 1);
  CHECK_FALSE(undisturbed[0].contains("endMs"));  // still running

  // The evicted one went back to gantry's queue, at a new epoch.
  const std::string evicted_name = a_evicted ? "low-a" : "low-b";
  const json evicted = fleet.Job("team-a", evicted_name);
  CHECK(evicted["status"].value("epoch", 0) >= 2);
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("a cluster that refuses gantry the gate's patch (RBAC) is asked once, and preempts nothing",
          "[e2e][dispatch][preemption]") {
  DispatchFleet fleet(PreemptingFleet(1));
  FillBoth(fleet);

  // gantry's token may not write Workload status anywhere.
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads:update"}).code == 0);
  REQUIRE(fleet.Ctl({"forbid", "c2", "workloads:update"}).code == 0);
  REQUIRE(fleet.Submit("team-a", WholeCluster("high", 100, "2s")) == 201);
  auto refused = [&] { return Count(Reasons(fleet, "team-a", "high"), "PreemptionGateRefused"); };
  REQUIRE(PollFor([&] { return refused() == 2; }, seconds(30)));
  // Three more periods: neither cluster is asked again, nothing is evicted.
  SystemClock clock;
  const int64_t until = clock.NowMillis() + 3'000;
  REQUIRE(WaitFor([&] { return clock.NowMillis() >= until; }, seconds(10)));
  CHECK(refused() == 2);
  CHECK(Count(Reasons(fleet, "team-a", "high"), "PreemptionAllowed") == 2);
  CHECK(fleet.Phase("team-a", "high") == "Nominating");
  for (const char* name : {"low-a", "low-b"}) {
    const std::vector<json> runs = fleet.Runs(fleet.Uid("team-a", name));
    INFO(name << " runs:\n" << Describe(runs));
    CHECK(Evicted(runs) == 0);
  }
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  REQUIRE(fleet.Ctl({"forbid", "c2"}).code == 0);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("gantry explain says a job's copies may not preempt yet while their preemption gates are closed",
          "[e2e][dispatch][preemption]") {
  DispatchFleet fleet(PreemptingFleet(600));  // no gate opens in this test
  FillBoth(fleet);
  REQUIRE(fleet.Submit("team-a", WholeCluster("high", 100, "2s")) == 201);
  REQUIRE(WaitFor([&] { return fleet.RemoteObjects("team-a", "high").size() == 2; }, seconds(20)));
  RunResult json_out = Cli(fleet.url(), {"explain", "high", "-n", "team-a", "-o", "json"});
  INFO(json_out.out << json_out.err);
  REQUIRE(json_out.code == 0);
  const json decision = json::parse(json_out.out, nullptr, false);
  REQUIRE(decision.is_object());
  int closed = 0;
  for (const json& c : decision.value("clusters", json::array())) {
    if (c.value("copy", false) && c.contains("preemptionGate") && !c["preemptionGate"].value("open", true)) ++closed;
  }
  CHECK(closed == 2);
  RunResult table = Cli(fleet.url(), {"explain", "high", "-n", "team-a"});
  INFO(table.out);
  CHECK(table.out.find("may not preempt there yet") != std::string::npos);
  REQUIRE(Cli(fleet.url(), {"cancel", "high", "-n", "team-a"}).code == 0);
}

}  // namespace gantry::testing
