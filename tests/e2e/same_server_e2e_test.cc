// Two inventory entries that reach one API server (c1's kubeconfig copied
// into c2's file): each would watch the other's objects and delete them as
// strays, evicting the job there and running it again in a loop. The entry
// that reached the server before keeps it, the other is held, the reload
// says so, and the job runs on undisturbed, once.
#include <catch2/catch.hpp>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The `kubeconfig:` line of a cluster file the simulator wrote.
std::string KubeconfigLine(const std::string& file_text) {
  const auto at = file_text.find("kubeconfig:");
  if (at == std::string::npos) return "";
  return file_text.substr(at, file_text.find('\n', at) - at);
}

DispatchFleetOptions SlowThenFast() {
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  return o;
}

// Job "steady" (8 s) running in c1 of kSlowThenFast's two clusters.
void RunSteadyInC1(DispatchFleet& fleet) {
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("steady", "team-a", 1, 0, "8s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "steady", {"Running"}, seconds(30)));
  REQUIRE(fleet.Job("team-a", "steady")["status"].value("cluster", "") == "c1");
}

}  // namespace

TEST_CASE("a cluster entry given another's kubeconfig is held: the job there runs on, once, at its epoch",
          "[e2e][inventory]") {
  DispatchFleet fleet(SlowThenFast());
  RunSteadyInC1(fleet);

  const std::string c1_file = fleet.sim_dir() + "/clusters.d/c1.yaml";
  const std::string c2_file = fleet.sim_dir() + "/clusters.d/c2.yaml";
  const std::string c2_config = ReadFile(c2_file);
  const std::string c1_line = KubeconfigLine(ReadFile(c1_file));
  const std::string c2_line = KubeconfigLine(c2_config);
  REQUIRE(!c1_line.empty());
  REQUIRE(!c2_line.empty());
  std::string copied = c2_config;
  copied.replace(copied.find(c2_line), c2_line.size(), c1_line);
  WriteFile(c2_file, copied);
  CHECK(fleet.ReloadClusters() == 422);
  json c2 = fleet.Cluster("c2");
  INFO(c2.dump());
  CHECK_THAT(c2["status"].value("configError", ""), Catch::Contains("as that of cluster c1 does"));
  CHECK(fleet.Cluster("c1")["status"].value("configError", "") == "");

  // The job runs its 8 s to the end meanwhile, neither evicted nor moved
  // (the loop took its epoch past 300 in 8 s), and ran once.
  REQUIRE(fleet.WaitPhase("team-a", "steady", {"Succeeded", "Failed"}, seconds(40)));
  json job = fleet.Job("team-a", "steady");
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["epoch"] == 1);
  CHECK(job["status"].value("cluster", "") == "c1");
  CHECK(Count(Reasons(fleet, "team-a", "steady"), "Evicted") == 0);
  auto runs = fleet.Runs(fleet.Uid("team-a", "steady"));
  INFO(Describe(runs));
  CHECK(runs.size() == 1);
  // Its file given back its own kubeconfig, c2 is used again.
  WriteFile(c2_file, c2_config);
  CHECK(fleet.ReloadClusters() == 200);
  CHECK(fleet.Cluster("c2")["status"].value("configError", "") == "");
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a cluster entry that reaches another's cluster by another address (localhost, not 127.0.0.1) is held "
          "by what the cluster says it is: the job there runs on, once",
          "[e2e][inventory]") {
  DispatchFleet fleet(SlowThenFast());
  RunSteadyInC1(fleet);
  const std::string c1_id = fleet.Cluster("c1")["status"].value("clusterID", "");
  CHECK(!c1_id.empty());

  // c1b: c1's file and kubeconfig, its server spelled localhost (the
  // simulator's certificate names both).
  const std::string dir = fleet.sim_dir();
  std::string kubeconfig_line = KubeconfigLine(ReadFile(dir + "/clusters.d/c1.yaml"));
  const std::string kubeconfig_path = kubeconfig_line.substr(kubeconfig_line.find(':') + 2);
  std::string kubeconfig = ReadFile(kubeconfig_path);
  REQUIRE(kubeconfig.find("https://127.0.0.1:") != std::string::npos);
  kubeconfig.replace(kubeconfig.find("https://127.0.0.1:"), 18, "https://localhost:");
  WriteFile(dir + "/c1b.kubeconfig", kubeconfig);
  std::string c1b = ReadFile(dir + "/clusters.d/c1.yaml");
  c1b.replace(c1b.find("name: c1"), 8, "name: c1b");
  c1b.replace(c1b.find(kubeconfig_line), kubeconfig_line.size(), "kubeconfig: " + dir + "/c1b.kubeconfig");
  WriteFile(dir + "/clusters.d/c1b.yaml", c1b);
  CHECK(fleet.ReloadClusters() == 200);  // a server of its own, as far as its file says
  json held;
  CHECK(PollFor(
      [&] {
        held = fleet.Cluster("c1b");
        return held["status"].value("configError", "").find("it reaches the cluster that cluster c1 reaches") !=
               std::string::npos;
      },
      seconds(20)));
  INFO(held.dump());
  CHECK_THAT(held["status"].value("configError", ""), Catch::Contains(c1_id));
  CHECK(held["status"].value("health", "") == "Unknown");
  // A job that may go to either: only c1, once.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("either", "team-a", 1, 0, "2s", "  placement: {clusters: [c1, c1b]}")) ==
          201);
  for (const char* name : {"steady", "either"}) {
    INFO(name);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded", "Failed"}, seconds(40)));
    json job = fleet.Job("team-a", name);
    CHECK(job["status"]["phase"] == "Succeeded");
    CHECK(job["status"]["epoch"] == 1);
    CHECK(job["status"].value("cluster", "") == "c1");
    CHECK(Count(Reasons(fleet, "team-a", name), "WorkloadGone") == 0);
    CHECK(fleet.Runs(fleet.Uid("team-a", name)).size() == 1);
  }
  CHECK(fleet.Ctl({"check"}).code == 0);
}

}  // namespace gantry::testing
