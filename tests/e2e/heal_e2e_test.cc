// A cluster back after an outage long enough for its probes to back off:
// its watches, which retry on their own (at most 10 s apart), list again
// first, and the cluster is probed then, rather than at its backed-off
// probe (up to 30 s later), so the jobs waiting for it go there at once.
// Meanwhile a job running there says its owner is out of reach.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

}  // namespace

TEST_CASE("a cluster whose watches list again after an outage is probed then: a job waiting for it goes there at once",
          "[e2e][recovery][health]") {
  DispatchFleetOptions o;
  o.clusters = 2;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("runner", "team-a", 1, 0, "300s", "  placement: {clusters: [c1]}")) ==
          201);
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Running"}, seconds(30)));
  REQUIRE(fleet.Ctl({"partition", "c1", "1"}).code == 0);
  REQUIRE(WaitFor([&] { return fleet.Cluster("c1")["status"].value("health", "") == "NotReady"; }, seconds(20)));
  // Its running job says its owner is out of reach, long before the
  // outage means anything for it (clusterLostTimeout: 15 min).
  const json runner = fleet.Job("team-a", "runner");
  INFO(runner.dump());
  CHECK(runner["status"].value("phase", "") == "Running");
  CHECK(runner["status"].contains("ownerUnreachable"));
  const RunResult list = Cli(fleet.url(), {"list", "-n", "team-a"});
  INFO(list.out);
  CHECK(list.out.find("Running,Unreachable") != std::string::npos);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("pinned", "team-a", 1, 0, "1s", "  placement: {clusters: [c1]}")) == 201);
  // Four failed probes: the next is 15 to 30 s after the fourth (5 s,
  // doubling, equal jitter), the watches' next list at most 10 s.
  REQUIRE(WaitFor([&] { return fleet.Cluster("c1")["status"].value("failedProbes", 0) >= 4; }, seconds(60)));
  CHECK(fleet.Phase("team-a", "pinned") == "Queued");
  const json before = fleet.Cluster("c1")["status"];
  INFO(before.dump());
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  const auto healed = std::chrono::steady_clock::now();
  REQUIRE(WaitFor([&] { return fleet.Cluster("c1")["status"].value("health", "") == "Ready"; }, seconds(40)));
  const auto ready_after = std::chrono::steady_clock::now() - healed;
  // Its watches list again at most 10 s after the heal, then a probe; the
  // scheduled one is 15 to 30 s after the fourth failure (the log line
  // below tells which one found it Ready).
  CHECK(ready_after < seconds(20));
  CHECK(fleet.daemon().process().Stderr().find("c1's watches list again while its last probe failed") !=
        std::string::npos);
  CHECK(fleet.WaitPhase("team-a", "pinned", {"Running", "Succeeded"}, seconds(20)));
  CHECK_FALSE(fleet.Job("team-a", "runner")["status"].contains("ownerUnreachable"));
}

}  // namespace gantry::testing
