// Distant clusters: a cluster whose every answer comes 25 ms late is given
// more requests in flight than the least (clusterConnectionsMin), because
// its round trips stay near its own while more are out; the jobs all run,
// each once; and an inventory reload keeps what the pools learned.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

}  // namespace

TEST_CASE("a distant cluster gets more connections than the least, a burst of jobs all runs once, and a reload keeps the limits",
          "[e2e][dispatch][distance]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = R"(clusters:
- {name: c1, nodes: 4, cpuPerNode: "256", apiLatency: 25ms}
- {name: c2, nodes: 4, cpuPerNode: "256", apiLatency: 25ms}
- {name: c3, nodes: 4, cpuPerNode: "256", apiLatency: 25ms}
)";
  // Fixed at 16 connections, the limit could not pass 16.
  o.daemon_config_yaml = "clusterConnections: 64\nclusterConnectionsMin: 16\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const int kJobs = 200;
  for (int i = 0; i < kJobs; ++i) {
    REQUIRE(fleet.Submit("team-a", SimJobYaml("far-" + std::to_string(i), "team-a", 1, 0, "1s")) == 201);
  }
  double most = 0;
  CHECK(PollFor([&] {
    for (const auto& [cluster, limit] : fleet.ClusterGauge("gantry_cluster_connections_limit")) {
      most = std::max(most, limit);
    }
    return most > 16;
  }, seconds(40)));
  INFO("largest limit seen: " << most);
  CHECK(most <= 64);
  REQUIRE(PollFor([&] {
    for (int i = 0; i < kJobs; ++i) {
      if (fleet.Phase("team-a", "far-" + std::to_string(i)) != "Succeeded") return false;
    }
    return true;
  }, seconds(90)));
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);

  // An inventory reload that changes no cluster's connection keeps what
  // each pool learned (and its open connections): right after it, each
  // limit is still there (a dropped pool has no series until its next
  // request) and above the least where it was (a new one starts there).
  // Not read for equality: the last cleanup deletes may still move a limit.
  std::map<std::string, double> before = fleet.ClusterGauge("gantry_cluster_connections_limit");
  REQUIRE(fleet.ReloadClusters() == 200);
  std::map<std::string, double> after = fleet.ClusterGauge("gantry_cluster_connections_limit");
  for (const auto& [cluster, limit] : before) {
    INFO(cluster << ": " << limit << " before the reload");
    REQUIRE(after.count(cluster));
    if (limit > 20) CHECK(after[cluster] > 16);
  }
  CHECK(std::any_of(before.begin(), before.end(), [](const auto& c) { return c.second > 20; }));
}

}  // namespace gantry::testing
