// A cluster removed from the inventory and added back: what its jobs left
// running there while it was out (a Fail job failed for the lost owner, a
// job cancelled meanwhile) is deleted once it is back and answers, without
// a restart of the daemon.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::string ClusterFile(DispatchFleet& fleet, const std::string& cluster) {
  return fleet.sim_dir() + "/clusters.d/" + cluster + ".yaml";
}

// Whether every run of the job in the journal has ended.
bool RunsEnded(DispatchFleet& fleet, const std::string& uid) {
  const std::vector<json> runs = fleet.Runs(uid);
  if (runs.empty()) return false;
  for (const json& r : runs) {
    if (r.value("endReason", "").empty()) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a cluster removed and added back by reloads: the runs its jobs left there are deleted once it answers",
          "[e2e][recovery][inventory]") {
  DispatchFleetOptions o;
  o.clusters = 2;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("failed", "team-a", 1, 0, "300s",
                                            "  onClusterLoss: Fail\n  placement: {clusters: [c2]}")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("cancelled", "team-a", 1, 0, "300s",
                                            "  onClusterLoss: Requeue\n  placement: {clusters: [c2]}")) == 201);
  for (const char* name : {"failed", "cancelled"}) REQUIRE(fleet.WaitPhase("team-a", name, {"Running"}, seconds(30)));
  const std::string failed_uid = fleet.Uid("team-a", "failed");
  const std::string cancelled_uid = fleet.Uid("team-a", "cancelled");

  // c2's entry goes: its jobs' owner is removed, lost at once.
  const std::string c2_config = ReadFile(ClusterFile(fleet, "c2"));
  REQUIRE(!c2_config.empty());
  REQUIRE(std::remove(ClusterFile(fleet, "c2").c_str()) == 0);
  // The reload says what it does to them.
  const RunResult reload = Cli(fleet.url(), {"reload"});
  INFO(reload.out << reload.err);
  REQUIRE(reload.code == 0);
  CHECK_THAT(reload.out, Catch::Contains("c2 owned 2 job(s): each gets its onClusterLoss now"));
  REQUIRE(fleet.WaitPhase("team-a", "failed", {"Failed"}, seconds(30)));
  // Its rows there say the cluster is out of the inventory.
  int in_c2 = 0;
  for (const json& o : fleet.RemoteObjects("team-a", "failed")) {
    if (o.value("cluster", "") != "c2") continue;
    ++in_c2;
    CHECK(o.value("notInInventory", false));
  }
  CHECK(in_c2 > 0);
  CHECK_THAT(Cli(fleet.url(), {"status", "failed", "-n", "team-a"}).out,
             Catch::Contains("(its cluster is no longer in the inventory)"));
  REQUIRE(Cli(fleet.url(), {"cancel", "cancelled", "-n", "team-a"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "cancelled", {"Cancelled"}, seconds(30)));
  // (Its rows there went at the requeue: all the event can claim is the inventory.)
  for (const json& e : fleet.Events("team-a", "cancelled")) {
    if (e.value("reason", "") == "Cancelled") CHECK(e.value("message", "").find("every cluster;") == std::string::npos);
  }
  // Out of gantry's reach, their runs go on there.
  CHECK_FALSE(RunsEnded(fleet, failed_uid));
  CHECK_FALSE(RunsEnded(fleet, cancelled_uid));

  // Added back while its API server is down, then up: once it answers,
  // what they left there is deleted (no row of theirs names c2 any more,
  // and its watches may list before a probe finds it Ready).
  REQUIRE(fleet.Ctl({"partition", "c2", "1"}).code == 0);
  WriteFile(ClusterFile(fleet, "c2"), c2_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(WaitFor([&] { return fleet.Cluster("c2")["status"].value("health", "") == "NotReady"; }, seconds(20)));
  REQUIRE(fleet.Ctl({"heal", "c2"}).code == 0);
  // (Seen back at its next probe, up to the backoff's 10 s after the heal,
  // then listed: a loaded machine took longer than 30 s once.)
  const bool ended = WaitFor([&] { return RunsEnded(fleet, failed_uid) && RunsEnded(fleet, cancelled_uid); }, seconds(60));
  if (!ended) {  // what the daemon said of c2, for the failure's log
    std::istringstream log(fleet.daemon().process().Stderr());
    std::string said;
    for (std::string line; std::getline(log, line);) said += line + "\n";
    INFO(said << fleet.Cluster("c2").dump());
    CHECK(ended);
  }
  for (const std::string& uid : {failed_uid, cancelled_uid}) {
    INFO(uid);
    CHECK(fleet.Runs(uid).size() == 1);
  }
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("two entries whose kubeconfigs are swapped by a reload are held: their jobs run on, not taken for "
          "vanished, until the files are put back",
          "[e2e][inventory]") {
  DispatchFleetOptions o;
  o.clusters = 2;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("in-c1", "team-a", 1, 0, "15s",
                                            "  onClusterLoss: Fail\n  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("in-c2", "team-a", 1, 0, "15s",
                                            "  onClusterLoss: Requeue\n  placement: {clusters: [c2]}")) == 201);
  for (const char* name : {"in-c1", "in-c2"}) REQUIRE(fleet.WaitPhase("team-a", name, {"Running"}, seconds(30)));
  // Each entry's file now names the other's kubeconfig.
  const std::string c1_config = ReadFile(ClusterFile(fleet, "c1"));
  const std::string c2_config = ReadFile(ClusterFile(fleet, "c2"));
  auto swapped = [](std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  WriteFile(ClusterFile(fleet, "c1"), swapped(c1_config, "c1.kubeconfig", "c2.kubeconfig"));
  WriteFile(ClusterFile(fleet, "c2"), swapped(c2_config, "c2.kubeconfig", "c1.kubeconfig"));
  REQUIRE(fleet.ReloadClusters() == 200);
  // Each one's probe reads the other cluster's identity: held.
  REQUIRE(WaitFor(
      [&] {
        for (const char* c : {"c1", "c2"}) {
          if (fleet.Cluster(c)["status"].value("configError", "").find("it now reaches another cluster") ==
              std::string::npos) {
            return false;
          }
        }
        return true;
      },
      seconds(30)));
  // The jobs were not taken for vanished (the Fail one failed, the Requeue
  // one run again beside its run): both still run where they were.
  for (const char* name : {"in-c1", "in-c2"}) {
    INFO(name);
    auto job = fleet.Job("team-a", name);
    CHECK(job["status"]["phase"] == "Running");
    CHECK(job["status"]["epoch"] == 1);
  }
  // Put back: both finish where they ran, once each.
  WriteFile(ClusterFile(fleet, "c1"), c1_config);
  WriteFile(ClusterFile(fleet, "c2"), c2_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  for (const char* name : {"in-c1", "in-c2"}) {
    INFO(name);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded", "Failed"}, seconds(60)));
    CHECK(fleet.Phase("team-a", name) == "Succeeded");
    CHECK(fleet.Runs(fleet.Uid("team-a", name)).size() == 1);
  }
  CHECK(fleet.Ctl({"check"}).code == 0);
}

}  // namespace gantry::testing
