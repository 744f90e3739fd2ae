// An operator declares a partitioned owner lost (declaredLost: true in its
// inventory entry): its jobs get their onClusterLoss at once instead of at
// clusterLostTimeout (15 minutes here, the default), and what it still runs
// is deleted when it answers again, because the entry, unlike a removed
// one, stays watched.
#include <catch2/catch.hpp>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

}  // namespace

TEST_CASE("an owner declared lost: its Requeue job moves and its Fail job fails at once, and both runs there are "
          "deleted when it answers again",
          "[e2e][recovery][partition][lost]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  o.daemon_config_yaml = "declaredLostGraceSeconds: 2";  // clusterLostTimeoutSeconds stays at 900
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("mover", "team-a", 1, 0, "", "  onClusterLoss: Requeue")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("keeper", "team-a", 1, 0, "", "  onClusterLoss: Fail")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Running"}, seconds(30)));
  REQUIRE(fleet.WaitPhase("team-a", "keeper", {"Running"}, seconds(30)));
  REQUIRE(fleet.Job("team-a", "mover")["status"].value("cluster", "") == "c1");
  REQUIRE(fleet.Job("team-a", "keeper")["status"].value("cluster", "") == "c1");
  const std::string mover_uid = fleet.Uid("team-a", "mover");
  const std::string keeper_uid = fleet.Uid("team-a", "keeper");

  // c1's apiserver goes away; its jobs run on. gantry sees it NotReady.
  REQUIRE(fleet.Ctl({"partition", "c1", "1"}).code == 0);
  REQUIRE(WaitFor([&] {
    auto out = Cli(fleet.url(), {"clusters"}).out;
    auto at = out.find("\nc1 ");
    return at != std::string::npos && out.find("NotReady", at) < out.find('\n', at + 1);
  }, seconds(20)));
  // Long before clusterLostTimeout, nothing has moved.
  CHECK(fleet.Job("team-a", "mover")["status"]["epoch"] == 1);
  CHECK(fleet.Job("team-a", "keeper")["status"]["phase"] == "Running");

  // The operator declares c1 lost and reloads the inventory.
  const std::string c1_file = fleet.sim_dir() + "/clusters.d/c1.yaml";
  const std::string c1_config = ReadFile(c1_file);
  REQUIRE(!c1_config.empty());
  WriteFile(c1_file, c1_config + "declaredLost: true\n");
  REQUIRE(fleet.ReloadClusters() == 200);
  CHECK(WaitFor([&] { return Cli(fleet.url(), {"clusters"}).out.find("DeclaredLost") != std::string::npos; },
                seconds(10)));

  REQUIRE(PollFor([&] {
    json j = fleet.Job("team-a", "mover");
    return j.is_object() && j["status"]["epoch"] == 2 && j["status"].value("cluster", "") == "c2";
  }, seconds(30)));
  REQUIRE(fleet.WaitPhase("team-a", "keeper", {"Failed"}, seconds(10)));
  json keeper = fleet.Job("team-a", "keeper");
  CHECK(keeper["status"].value("message", "").find("declared lost by an operator") != std::string::npos);
  CHECK(keeper["status"]["epoch"] == 1);
  CHECK(Count(Reasons(fleet, "team-a", "mover"), "ClusterLost") == 1);

  // Both epoch-1 runs in c1 go on: nobody can reach them.
  for (const std::string& uid : {mover_uid, keeper_uid}) {
    auto runs = fleet.Runs(uid);
    INFO(Describe(runs));
    REQUIRE(!runs.empty());
    CHECK(runs[0].value("cluster", "") == "c1");
    CHECK_FALSE(runs[0].contains("endMs"));
  }

  // c1 answers again, still declared lost: gantry deletes both runs there.
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  for (const std::string& uid : {mover_uid, keeper_uid}) {
    CHECK(PollFor([&] {
      auto r = fleet.Runs(uid);
      return !r.empty() && StoppedByDelete(r[0]);
    }, seconds(60), milliseconds(250)));
    INFO(Describe(fleet.Runs(uid)));
    CHECK(fleet.Runs(uid).size() == (uid == mover_uid ? 2u : 1u));
  }
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("mover", mover_uid)); }, seconds(20),
                milliseconds(250)));
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("keeper", keeper_uid)); }, seconds(20),
                milliseconds(250)));

  // The moved job finishes in c2 (its first run overlapped it: Requeue
  // trades that for progress); the at-most-once job ran once; a new job
  // goes to c2 though c1 answers.
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Succeeded"}, seconds(30)));
  CHECK(fleet.Job("team-a", "mover")["status"].value("cluster", "") == "c2");
  CHECK(fleet.Runs(keeper_uid).size() == 1);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("late", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "late", {"Succeeded"}, seconds(30)));
  CHECK(fleet.Job("team-a", "late")["status"].value("cluster", "") == "c2");
}

}  // namespace gantry::testing
