// A cluster that answers but no longer lets gantry list its Jobs (RBAC
// drift: list and watch revoked, get and delete kept). A cancel of the job
// running there used to wait, with the job running on, until the list was
// allowed again; now gantry reads the job's objects there by name and
// deletes them, and waits only to see them gone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>

#include "daemon_fixture.h"
#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

DispatchFleetOptions TwoClusters() {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoH100Clusters;
  return o;
}

bool ShowsJobsListRefused(DispatchFleet& fleet) {
  return Cli(fleet.url(), {"clusters"}).out.find("listing jobs answered 403") != std::string::npos;
}

// gantry may still get and delete Jobs in cluster, but no longer list or
// watch them; true once `gantry clusters` shows it.
bool RefuseJobsList(DispatchFleet& fleet, const std::string& cluster) {
  return fleet.Ctl({"forbid", cluster, "jobs:list"}).code == 0 && fleet.Ctl({"kill-watches", cluster}).code == 0 &&
         PollFor([&] { return ShowsJobsListRefused(fleet); }, seconds(20));
}

// Two clusters whose objects read gone by name count as deleted a second
// after their rows were withdrawn.
DispatchFleetOptions ConfirmedGoneAfter1s() {
  DispatchFleetOptions o = TwoClusters();
  o.daemon_config_yaml = "notFoundConfirmsAfterSeconds: 1\n";
  return o;
}

// Runs team-a/name (2 minutes) in c1, then takes gantry's list of Jobs
// there away; returns the job's uid.
std::string RunningInC1ThenUnlisted(DispatchFleet& fleet, const std::string& name) {
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 1, 1, "120s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", name, {"Running"}));
  REQUIRE(RefuseJobsList(fleet, "c1"));
  return fleet.Uid("team-a", name);
}

}  // namespace

TEST_CASE("a cancel reaches a job whose cluster no longer lets gantry list its Jobs: it stops there at once",
          "[e2e][dispatch][cancel]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("runner", "team-a", 1, 1, "120s", "  placement: {clusters: [c1]}")) ==
          201);
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Running"}));
  const std::string uid = fleet.Uid("team-a", "runner");

  REQUIRE(RefuseJobsList(fleet, "c1"));

  REQUIRE(Cli(fleet.url(), {"cancel", "runner", "-n", "team-a"}).code == 0);
  // The run in c1 ends: the Job was deleted there, though gantry cannot see it.
  REQUIRE(PollFor([&] {
    const std::vector<nlohmann::json> runs = fleet.Runs(uid);
    return runs.size() == 1 && runs[0].contains("endMs");
  }, seconds(20)));
  CHECK(fleet.Runs(uid)[0].value("endReason", "") == "Deleted");
  // The job waits to see that, saying for what.
  CHECK(fleet.Phase("team-a", "runner") == "Cancelling");
  CHECK(fleet.Job("team-a", "runner")["status"].value("message", "") ==
        "waiting for cluster(s) c1 to confirm deletion");
  // Its rows say so too, in gantry status.
  const RunResult status = Cli(fleet.url(), {"status", "runner", "-n", "team-a"});
  INFO(status.out);
  CHECK(status.out.find("Remote objects:") != std::string::npos);
  int withdrawing = 0;
  for (std::size_t at = status.out.find("Withdrawing"); at != std::string::npos;
       at = status.out.find("Withdrawing", at + 1)) {
    ++withdrawing;
  }
  CHECK(withdrawing == 2);  // the Workload and the Job in c1

  // Listed again: the objects are seen gone, and the job is Cancelled.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Cancelled"}, seconds(30)));
  CHECK(fleet.Runs(uid).size() == 1);
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("a cancel where the list stays refused completes once the objects are read gone by name",
          "[e2e][dispatch][cancel]") {
  DispatchFleet fleet(ConfirmedGoneAfter1s());
  const std::string uid = RunningInC1ThenUnlisted(fleet, "stuck");

  REQUIRE(Cli(fleet.url(), {"cancel", "stuck", "-n", "team-a"}).code == 0);
  // The list is never allowed again. The objects are deleted by name, and
  // the next lookup (10 s on) finds them gone, a second after their rows
  // were withdrawn: the cancel completes without the list.
  REQUIRE(fleet.WaitPhase("team-a", "stuck", {"Cancelled"}, seconds(40)));
  const std::vector<nlohmann::json> runs = fleet.Runs(uid);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].value("endReason", "") == "Deleted");
  CHECK(ShowsJobsListRefused(fleet));  // still refused
  // Nothing of the job's is left there: its Workload copy went too.
  CHECK(RemoteGone(fleet, "c1", "team-a", RemoteName("stuck", uid)));
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("a lookup by name answered 503 is asked again at the job's next pass, not after the row's next wait",
          "[e2e][dispatch][cancel]") {
  DispatchFleet fleet(ConfirmedGoneAfter1s());
  const std::string uid = RunningInC1ThenUnlisted(fleet, "busy");
  // Every read by name in c1 answers 503 for now.
  REQUIRE(fleet.Ctl({"errors", "c1", "1", "503", "get"}).code == 0);
  REQUIRE(Cli(fleet.url(), {"cancel", "busy", "-n", "team-a"}).code == 0);
  // Three lookups within seconds: the job's own backoff (250 ms, 500 ms,
  // 1 s), where counting each 503 as an ask would space them 10 s and 20 s.
  CHECK(WaitFor([&] { return fleet.RemoteCalls("c1", "get", 503) >= 3; }, seconds(8)));
  REQUIRE(fleet.Ctl({"errors", "c1", "0"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "busy", {"Cancelled"}, seconds(40)));
  const std::vector<nlohmann::json> runs = fleet.Runs(uid);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].value("endReason", "") == "Deleted");
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a job moved on from an owner that no longer lets gantry list its Jobs is stopped there, unseen",
          "[e2e][dispatch][recovery]") {
  DispatchFleetOptions o = TwoClusters();
  o.daemon_config_yaml = "credentialsRefusedTimeoutSeconds: 3\nnotFoundConfirmsAfterSeconds: 1\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("mover", "team-a", 1, 1, "20s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Running"}));
  const std::string uid = fleet.Uid("team-a", "mover");
  const std::string first = fleet.Job("team-a", "mover")["status"].value("cluster", "");
  const std::string second = first == "c1" ? "c2" : "c1";

  // The owner stops letting gantry list its Jobs: past the timeout, the job
  // is dispatched again (onClusterLoss Requeue) and runs in the other
  // cluster at epoch 2, and its first run, which gantry cannot see, is
  // deleted there: it does not run on beside the second.
  REQUIRE(fleet.Ctl({"forbid", first, "jobs:list"}).code == 0);
  REQUIRE(fleet.Ctl({"kill-watches", first}).code == 0);
  REQUIRE(PollFor([&] {
    const nlohmann::json j = fleet.Job("team-a", "mover");
    return j["status"].value("epoch", 0) >= 2 && j["status"].value("cluster", "") == second;
  }, seconds(40)));
  REQUIRE(PollFor([&] {
    const std::vector<nlohmann::json> runs = fleet.Runs(uid);
    return !runs.empty() && runs[0].contains("endMs");
  }, seconds(20)));
  // Still refused there: the first epoch's rows go once a read by name finds
  // their objects gone.
  auto only_in_second = [&] {
    const std::vector<nlohmann::json> rows = fleet.RemoteObjects("team-a", "mover");  // {} on an error
    return !rows.empty() && std::all_of(rows.begin(), rows.end(), [&](const nlohmann::json& o) {
      return o.value("cluster", "") == second;
    });
  };
  CHECK(PollFor(only_in_second, seconds(30)));
  CHECK(fleet.Ctl({"forbid", first}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Succeeded"}, seconds(40)));
  const std::vector<nlohmann::json> runs = fleet.Runs(uid);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].value("cluster", "") == first);
  CHECK(runs[0].value("endReason", "") == "Deleted");  // stopped, not run to its end
  // ... here before the second began (the delete goes out on the pass after
  // the move; nothing waits for it, as nothing can wait for a partitioned
  // owner's run).
  CHECK(runs[0].value("endMs", int64_t{0}) <= runs[1].value("startMs", int64_t{0}));
  CHECK(runs[1].value("cluster", "") == second);
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

}  // namespace gantry::testing
