// gantry under exactly the permissions of the worker manifest it ships
// (config/worker-rbac.yaml): the simulated clusters grant its token those
// rules and nothing else (gantry-sim ctl rbac), and the steps of the
// protocol that touch a cluster still work: the probe's list of
// ClusterQueues, the watches of every kind, copies created, their
// preemption gates opened, Jobs and a JobSet created and deleted, cancels.
// (The reads by name, after a create answered AlreadyExists or where a
// list is refused, are not reached here; rbac_test checks the grant.)
#include <catch2/catch.hpp>

#include <sstream>

#include "daemon_fixture.h"
#include "dispatch_fixture.h"
#include "gantry/http/client.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

// The daemon's remote-call series answered 403, one a line ("" when none;
// "scrape failed" when /metrics cannot be read).
std::string ForbiddenCalls(DispatchFleet& fleet) {
  auto client = http::Client::Create(fleet.url());
  if (!client.ok()) return "scrape failed";
  auto metrics = (*client)->Do("GET", "/metrics");
  if (!metrics.ok() || metrics->status != 200) return "scrape failed";
  std::istringstream lines(metrics->body);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("gantry_dispatch_remote_calls_total{", 0) == 0 && line.find("code=\"403\"") != std::string::npos) {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

TEST_CASE("under only the worker manifest's grants, jobs are dispatched, gated, run, finish and are cancelled",
          "[e2e][dispatch][rbac]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoH100Clusters;
  o.daemon_config_yaml = "preemptionGateSeconds: 1\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  for (const char* c : {"c1", "c2"}) {
    REQUIRE(fleet.Ctl({"rbac", c, GANTRY_SOURCE_DIR "/config/worker-rbac.yaml"}).code == 0);
  }
  // Every request of the daemon from its start on goes through those grants.
  fleet.RestartDaemon(false);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  // Every GPU taken: hog-1 runs in c1, hog-2 in c2.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("hog-1", "team-a", 2, 8, "60s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("hog-2", "team-a", 2, 8, "60s", "  placement: {clusters: [c2]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "hog-1", {"Running"}));
  REQUIRE(fleet.WaitPhase("team-a", "hog-2", {"Running"}));
  // A job that fits nowhere now: its copies wait, and a gate opens each second (a status patch).
  REQUIRE(fleet.Submit("team-a", SimJobYaml("waiting", "team-a", 1, 8, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "waiting", {"Nominating"}));
  REQUIRE(WaitFor([&] { return fleet.RemoteCalls("", "patch", 200) >= 1; }, seconds(20)));
  REQUIRE(Cli(fleet.url(), {"cancel", "waiting", "-n", "team-a"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "waiting", {"Cancelled"}, seconds(20)));
  // A running job cancelled: its objects go from its cluster.
  const std::string remote = RemoteName("hog-2", fleet.Uid("team-a", "hog-2"));
  REQUIRE(Cli(fleet.url(), {"cancel", "hog-2", "-n", "team-a"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "hog-2", {"Cancelled"}, seconds(20)));
  CHECK(WaitFor([&] { return RemoteGone(fleet, "c2", "team-a", remote); }, seconds(20)));
  // Jobs and a JobSet that run to the end, in the freed cluster.
  for (const char* name : {"short-1", "short-2", "short-3"}) {
    REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 1, 1, "1s")) == 201);
  }
  REQUIRE(fleet.Submit("team-a", JobSetYaml("set", "team-a", "1s")) == 201);
  for (const char* name : {"short-1", "short-2", "short-3", "set"}) {
    INFO(name);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded", "Failed"}));
    CHECK(fleet.Phase("team-a", name) == "Succeeded");
  }
  CHECK(ForbiddenCalls(fleet).empty());
  // Every watched kind listed: none refused, in either cluster.
  for (const char* c : {"c1", "c2"}) {
    INFO(c);
    auto cluster = fleet.Cluster(c);
    CHECK_FALSE(cluster["status"].contains("capacityError"));
    CHECK_FALSE(cluster["status"].contains("watchRefused"));
  }
  CHECK(fleet.Ctl({"check"}).code == 0);
}

}  // namespace gantry::testing
