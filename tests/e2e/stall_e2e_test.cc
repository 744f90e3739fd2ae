// A cluster whose API server answers its probes and watches but not its
// writes (etcd without quorum, a webhook that times out) holds neither the
// passes nor the other clusters: a pass reads its other answers and goes on
// (Engine::kStragglerGrace), the cluster takes no new copy while its
// requests go unanswered (ClientPool's stall), and it takes work again once
// it answers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

// c1 admits only after 30 s: no copy there takes a lease during the test,
// so every job runs in c2 or c3 and none waits for c1's stalled writes.
DispatchFleetOptions StallFleet() {
  DispatchFleetOptions o;
  o.sim_config_yaml = R"(clusters:
- {name: c1, admissionDelay: 30s}
- {name: c2}
- {name: c3}
)";
  return o;
}

std::string CpuJob(const std::string& name) { return SimJobYaml(name, "team-a", 1, 0, "1s"); }

// The message of the job's first event of that reason ("" when none).
std::string EventMessage(DispatchFleet& fleet, const std::string& name, const std::string& reason) {
  for (const auto& e : fleet.Events("team-a", name)) {
    if (e.value("reason", "") == reason) return e.value("message", "");
  }
  return "";
}

}  // namespace

TEST_CASE("a cluster whose writes stall holds no pass: jobs are leased elsewhere at once, it takes no new copy "
          "until it answers again",
          "[e2e][dispatch][stall]") {
  DispatchFleet fleet(StallFleet());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // Its writes are answered in 10 minutes, past any request's deadline (10 s);
  // its reads, the probes' and watches', at once.
  REQUIRE(fleet.Ctl({"latency", "c1", "600000", "create,delete"}).code == 0);

  // The first job's copies go to all three; c1's create goes unanswered. The
  // pass reads c2's and c3's answers and goes on: the lease comes well before
  // c1's request deadline, which a pass waiting for every answer would wait out.
  REQUIRE(fleet.Submit("team-a", CpuJob("first")) == 201);
  REQUIRE(WaitFor([&] { return Count(Reasons(fleet, "team-a", "first"), "LeaseTaken") > 0; }, seconds(7)));
  CHECK(EventMessage(fleet, "first", "Nominated").find("c1") != std::string::npos);
  REQUIRE(fleet.WaitPhase("team-a", "first", {"Succeeded"}, seconds(30)));
  CHECK(fleet.Job("team-a", "first")["status"]["cluster"] != "c1");

  // Its copy's create out past stall_after (2 s) unanswered, c1 is
  // stalling, and operators see it: gantry clusters, and a gauge to alert on.
  auto stalling = [&] { return Cli(fleet.url(), {"clusters"}).out.find("Ready,RequestsStall") != std::string::npos; };
  REQUIRE(WaitFor(stalling, seconds(15)));
  auto clusters = Cli(fleet.url(), {"clusters"});
  INFO(clusters.out);
  CHECK(clusters.out.find("gantry's requests here have gone unanswered") != std::string::npos);
  auto stalled = fleet.ClusterGauge("gantry_cluster_requests_stalled_seconds");
  CHECK(stalled["c1"] > 0);
  CHECK(stalled["c2"] == 0);

  // Meanwhile c1 is left out of placement, saying why: gantry explain shows
  // the placement the next pass makes.
  REQUIRE(WaitFor([&] {
    return Cli(fleet.url(), {"explain", "first", "-n", "team-a"}).out.find("requests stall") != std::string::npos;
  }, seconds(5)));
  REQUIRE(fleet.Submit("team-a", CpuJob("second")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "second", {"Succeeded"}, seconds(30)));
  const std::string nominated = EventMessage(fleet, "second", "Nominated");
  INFO(nominated);
  CHECK(nominated.find("left out: c1: its requests stall") != std::string::npos);
  CHECK(nominated.find("copies to c1") == std::string::npos);
  CHECK(nominated.find(", c1") == std::string::npos);

  // c1 answers again: the first write answered there (the first job's copy's
  // withdrawal, sent one at a time meanwhile) ends the stall, and the next
  // job gets a copy there too.
  REQUIRE(fleet.Ctl({"latency", "c1", "0"}).code == 0);
  REQUIRE(WaitFor([&] { return !stalling(); }, seconds(40)));
  CHECK(fleet.ClusterGauge("gantry_cluster_requests_stalled_seconds")["c1"] == 0);
  // (The passes' view of the fleet is at most 200 ms old.)
  CHECK(WaitFor([&] {
    return Cli(fleet.url(), {"explain", "second", "-n", "team-a"}).out.find("requests stall") == std::string::npos;
  }, seconds(5)));
  REQUIRE(fleet.Submit("team-a", CpuJob("third")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "third", {"Succeeded"}, seconds(30)));
  CHECK(EventMessage(fleet, "third", "Nominated").find("c1") != std::string::npos);

  for (const char* name : {"first", "second", "third"}) {
    INFO(name);
    CHECK(fleet.Runs(fleet.Uid("team-a", name)).size() == 1);
  }
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("an owner that answers but fails every create of the job is lost after clusterLostTimeout: a Requeue "
          "job moves, a Fail job fails, neither runs twice",
          "[e2e][dispatch][stall]") {
  DispatchFleetOptions o;
  // c2 admits 2 s late: the first leases go to c1.
  o.sim_config_yaml = R"(clusters:
- {name: c1}
- {name: c2, admissionDelay: 2s}
)";
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 6";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // c1 answers its probes, watches and Workload writes, and every create of
  // a job with a 500, as its API server does when an admission webhook on
  // jobs fails. Its outage clock never runs: it is Ready throughout.
  CHECK(fleet.Ctl({"forbid", "c1", "jobs:watch=500"}).code != 0);  // a verb the fault does not know: refused
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobs:create=500"}).code == 0);
  REQUIRE(fleet.Submit("team-a", CpuJob("mover")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("once", "team-a", 1, 0, "1s", "  onClusterLoss: Fail")) == 201);
  for (const char* name : {"mover", "once"}) {
    INFO(name);
    REQUIRE(WaitFor([&] { return fleet.Job("team-a", name)["status"].value("cluster", "") == "c1"; }, seconds(10)));
  }
  // Meanwhile gantry status tells since when the creates have failed.
  auto failing = [&] {
    for (const auto& o : fleet.RemoteObjects("team-a", "mover")) {
      if (o.value("kind", "") == "Job" && o.contains("lastError") && o["lastError"].contains("failingSince")) return true;
    }
    return false;
  };
  CHECK(WaitFor(failing, seconds(5)));
  // Once the job has moved, gantry explain tells why c1 is left out.
  auto held_out = [&] {
    const std::string out = Cli(fleet.url(), {"explain", "mover", "-n", "team-a"}).out;
    const size_t line = out.find("Candidates:");
    const std::string candidates = line == std::string::npos ? "" : out.substr(line, out.find('\n', line) - line);
    // Held out, and no candidate meanwhile.
    return out.find("held out") != std::string::npos && out.find("failed every try") != std::string::npos &&
           !candidates.empty() && candidates.find("c1") == std::string::npos;
  };
  CHECK(WaitFor(held_out, seconds(20)));

  // c1, which admits at once, would win the moved job's lease again and
  // fail again: it is held out of the job's dispatches for a while, and
  // the job runs in c2 at epoch 2.
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Succeeded"}, seconds(40)));
  auto mover = fleet.Job("team-a", "mover");
  CHECK(mover["status"]["cluster"] == "c2");
  CHECK(mover["status"]["epoch"] == 2);
  CHECK(EventMessage(fleet, "mover", "ClusterLost").find("answers gantry's reads but has failed every try to create "
                                                         "the job there") != std::string::npos);
  CHECK(EventMessage(fleet, "mover", "ClusterLost").find("(the last: HTTP 500") != std::string::npos);
  CHECK(EventMessage(fleet, "mover", "ClusterLost").find("c1 is left out of the job's dispatches for 10 min") !=
        std::string::npos);
  REQUIRE(fleet.WaitPhase("team-a", "once", {"Failed"}, seconds(20)));
  CHECK(EventMessage(fleet, "once", "ClusterLost").find("onClusterLoss is Fail") != std::string::npos);
  CHECK(fleet.Cluster("c1")["status"].value("health", "") == "Ready");

  CHECK(fleet.Runs(fleet.Uid("team-a", "mover")).size() == 1);
  CHECK(fleet.Runs(fleet.Uid("team-a", "once")).empty());
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a cancel whose deletes the owner refuses waits, and gantry status shows the refusal: it ends once "
          "they are allowed",
          "[e2e][dispatch][cancel]") {
  DispatchFleetOptions o;
  o.clusters = 2;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("held", "team-a", 1, 0, "300s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "held", {"Running"}, seconds(30)));
  // RBAC drift: gantry may no longer delete there.
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobs:delete,workloads:delete"}).code == 0);
  REQUIRE(Cli(fleet.url(), {"cancel", "held", "-n", "team-a"}).code == 0);
  auto refused = [&] {
    for (const auto& r : fleet.RemoteObjects("team-a", "held")) {
      if (r.contains("lastError") && r["lastError"].value("verb", "") == "delete" &&
          r["lastError"].value("message", "").find("HTTP 403") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  REQUIRE(WaitFor(refused, seconds(15)));
  CHECK(fleet.Phase("team-a", "held") == "Cancelling");
  const auto status = Cli(fleet.url(), {"status", "held", "-n", "team-a"});
  INFO(status.out);
  CHECK(status.out.find("delete failed") != std::string::npos);

  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "held", {"Cancelled"}, seconds(30)));
  const auto runs = fleet.Runs(fleet.Uid("team-a", "held"));
  REQUIRE(runs.size() == 1);
  CHECK_FALSE(runs[0].value("endReason", "").empty());
  CHECK(fleet.Ctl({"check"}).code == 0);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a daemon stopped while its clusters answer nothing stops at once: its requests there are abandoned, not "
          "waited out, and nothing is lost",
          "[e2e][dispatch][stall][shutdown]") {
  DispatchFleetOptions o;
  o.clusters = 2;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  for (const std::string& name : names) {
    REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 1, 0, "120s")) == 201);
  }
  for (const std::string& name : names) REQUIRE(fleet.WaitPhase("team-a", name, {"Running"}));
  // Neither cluster answers anything now (connections accepted, requests
  // never answered): the cancels' deletes, the probes and the watches'
  // lists each wait for their deadline (10 s, 5 s).
  REQUIRE(fleet.Ctl({"partition", "c1", "2"}).code == 0);
  REQUIRE(fleet.Ctl({"partition", "c2", "2"}).code == 0);
  for (const std::string& name : names) REQUIRE(Cli(fleet.url(), {"cancel", name, "-n", "team-a"}).code == 0);
  for (const std::string& name : names) REQUIRE(fleet.WaitPhase("team-a", name, {"Cancelling"}));
  fleet.daemon().process().Signal(SIGTERM);
  // Well within a request's deadline: before, the stop waited out each
  // request in flight, then each list begun meanwhile.
  CHECK(fleet.daemon().process().Wait(std::chrono::seconds(4)) == 0);
  fleet.StopDaemon(true);  // (when it did not stop)
  // The cancels go on after the restart, once the clusters answer.
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  REQUIRE(fleet.Ctl({"heal", "c2"}).code == 0);
  fleet.StartDaemon();
  REQUIRE(fleet.ok());
  for (const std::string& name : names) CHECK(fleet.WaitPhase("team-a", name, {"Cancelled"}));
  CHECK(fleet.Ctl({"check"}).code == 0);
}

}  // namespace gantry::testing
