// An AllAtOnce job sent to the one cluster that could take it then (the
// other cordoned, or out of reach), full by now: once the other can take it, it gets a copy
// there too and runs there, instead of waiting for the first to free up.
#include <catch2/catch.hpp>

#include <chrono>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

// A job of 2 pods x 8 GPUs: a whole cluster.
std::string WholeCluster(const std::string& name, const std::string& duration) {
  return SimJobYaml(name, "team-a", 2, 8, duration);
}

// With c2 unable to take work: a filler fills c1, then the waiter, whose
// only candidate is c1, is nominated there and waits.
void FillC1ThenNominateWaiter(DispatchFleet& fleet) {
  REQUIRE(fleet.Submit("team-a", WholeCluster("filler", "120s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "filler", {"Running"}));
  REQUIRE(fleet.Job("team-a", "filler")["status"]["cluster"] == "c1");
  REQUIRE(fleet.Submit("team-a", WholeCluster("waiter", "1s")) == 201);
  REQUIRE(WaitFor([&] { return fleet.Phase("team-a", "waiter") == "Nominating"; }, seconds(10)));
  CHECK(fleet.Job("team-a", "waiter")["status"].value("message", "") == "nominated to c1");
}

// The waiter ran once, in c2, at its first epoch, with one Widened event.
void CheckWaiterRanInC2(DispatchFleet& fleet) {
  const nlohmann::json waiter = fleet.Job("team-a", "waiter");
  CHECK(waiter["status"]["cluster"] == "c2");
  CHECK(waiter["status"]["epoch"] == 1);
  CHECK(Count(Reasons(fleet, "team-a", "waiter"), "Widened") == 1);
  CHECK(fleet.Runs(fleet.Uid("team-a", "waiter")).size() == 1);
}

}  // namespace

TEST_CASE("an AllAtOnce job waiting in a full cluster gets a copy in one that can take it later, and runs there",
          "[e2e][dispatch][inventory]") {
  DispatchFleetOptions options;
  options.sim_config_yaml = kTwoH100Clusters;
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string c2_file = fleet.sim_dir() + "/clusters.d/c2.yaml";
  const std::string c2_config = ReadFile(c2_file);
  REQUIRE(!c2_config.empty());

  // c2 is cordoned: the filler goes to c1 and fills it; the waiter's only
  // candidate is c1, where it cannot be admitted now.
  WriteFile(c2_file, c2_config + "cordoned: true\n");
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(WaitFor([&] { return Cli(fleet.url(), {"clusters"}).out.find("Cordoned") != std::string::npos; },
                  seconds(10)));
  FillC1ThenNominateWaiter(fleet);

  // Uncordoned, c2 can take it: a copy goes there at the same epoch, is
  // admitted, and the job runs there while the filler still runs in c1.
  WriteFile(c2_file, c2_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(fleet.WaitPhase("team-a", "waiter", {"Succeeded"}, seconds(30)));
  CheckWaiterRanInC2(fleet);
  CHECK(Count(Reasons(fleet, "team-a", "waiter"), "Nominated") == 1);
  CHECK(fleet.Phase("team-a", "filler") == "Running");
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("an AllAtOnce job waiting in a full cluster gets a copy in one that comes back from a partition",
          "[e2e][dispatch][partition]") {
  DispatchFleetOptions options;
  options.sim_config_yaml = kTwoH100Clusters;
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  // c2 out of reach: the filler goes to c1 and fills it; the waiter's only
  // candidate is c1.
  REQUIRE(fleet.Ctl({"partition", "c2", "1"}).code == 0);
  REQUIRE(PollFor([&] { return fleet.Cluster("c2")["status"].value("health", "") == "NotReady"; }, seconds(20)));
  FillC1ThenNominateWaiter(fleet);

  // c2 answers again: the health watch wakes the nominating job, which
  // takes a copy there and runs there. Its resync (30 s) is not waited for.
  REQUIRE(fleet.Ctl({"heal", "c2"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "waiter", {"Succeeded"}, seconds(15)));
  CheckWaiterRanInC2(fleet);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a job waiting in a cluster whose entry stops meeting its constraints at a reload has its copy withdrawn, "
          "and never runs there",
          "[e2e][dispatch][inventory]") {
  DispatchFleetOptions options;
  options.sim_config_yaml = kTwoH100Clusters;
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string c1_file = fleet.sim_dir() + "/clusters.d/c1.yaml";
  const std::string c1_config = ReadFile(c1_file);
  REQUIRE(c1_config.find("labels:\n  {}\n") != std::string::npos);
  std::string gold = c1_config;
  gold.replace(gold.find("labels:\n  {}\n"), 13, "labels: {tier: gold}\n");
  WriteFile(c1_file, gold);
  REQUIRE(fleet.ReloadClusters() == 200);
  // c1 full; the waiter, for gold clusters only, waits there.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("filler", "team-a", 2, 8, "120s", "  placement: {clusters: [c1]}")) ==
          201);
  REQUIRE(fleet.WaitPhase("team-a", "filler", {"Running"}));
  REQUIRE(fleet.Submit("team-a", SimJobYaml("waiter", "team-a", 2, 8, "1s",
                                            "  placement: {clusterSelector: {matchLabels: {tier: gold}}}")) == 201);
  REQUIRE(WaitFor([&] { return fleet.Phase("team-a", "waiter") == "Nominating"; }, seconds(10)));

  // c1 is bronze now: the copy goes, and the job, which no cluster can
  // take, is Unschedulable; when the filler ends and frees c1, nothing of
  // the waiter is there to be admitted.
  std::string bronze = c1_config;
  bronze.replace(bronze.find("labels:\n  {}\n"), 13, "labels: {tier: bronze}\n");
  WriteFile(c1_file, bronze);
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(fleet.WaitPhase("team-a", "waiter", {"Unschedulable", "Running", "Succeeded"}, seconds(20)));
  CHECK(fleet.Phase("team-a", "waiter") == "Unschedulable");
  const auto reasons = Reasons(fleet, "team-a", "waiter");
  CHECK(Count(reasons, "ConstraintsChanged") == 1);
  CHECK(Count(reasons, "LeaseTaken") == 0);
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("waiter", fleet.Uid("team-a", "waiter"))); },
                seconds(20)));
  CHECK(fleet.Runs(fleet.Uid("team-a", "waiter")).empty());
}

}  // namespace gantry::testing
