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

// Two clusters; an owner that keeps gantry from listing its Jobs for 3 s
// counts as lost; objects read gone by name count as deleted a second after
// their rows were withdrawn.
DispatchFleetOptions MoverOptions() {
  DispatchFleetOptions o = TwoClusters();
  o.daemon_config_yaml = "credentialsRefusedTimeoutSeconds: 3\nnotFoundConfirmsAfterSeconds: 1\n";
  return o;
}

struct Mover {
  std::string uid;
  std::string first;   // where team-a/mover runs
  std::string second;  // the other cluster
};

// team-a/mover (onClusterLoss Requeue) submitted and running; it runs for
// duration ("20s").
Mover RunningMover(DispatchFleet& fleet, const std::string& duration) {
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("mover", "team-a", 1, 1, duration)) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Running"}));
  Mover m;
  m.uid = fleet.Uid("team-a", "mover");
  m.first = fleet.Job("team-a", "mover")["status"].value("cluster", "");
  m.second = m.first == "c1" ? "c2" : "c1";
  return m;
}

// True once team-a/mover is leased by cluster at epoch 2 or later.
bool MovedTo(DispatchFleet& fleet, const std::string& cluster) {
  return PollFor([&] {
    const nlohmann::json j = fleet.Job("team-a", "mover");
    return j["status"].value("epoch", 0) >= 2 && j["status"].value("cluster", "") == cluster;
  }, seconds(40));
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
  DispatchFleet fleet(MoverOptions());
  const Mover m = RunningMover(fleet, "20s");
  const std::string &uid = m.uid, &first = m.first, &second = m.second;

  // The owner stops letting gantry list its Jobs: past the timeout, the job
  // is dispatched again (onClusterLoss Requeue) and runs in the other
  // cluster at epoch 2, and its first run, which gantry cannot see, is
  // deleted there: it does not run on beside the second.
  REQUIRE(fleet.Ctl({"forbid", first, "jobs:list"}).code == 0);
  REQUIRE(fleet.Ctl({"kill-watches", first}).code == 0);
  REQUIRE(MovedTo(fleet, second));
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
  // ... before the second began: the new owner waits until the first run
  // is read gone (see the next test), as it cannot for a partitioned owner.
  CHECK(runs[0].value("endMs", int64_t{0}) <= runs[1].value("startMs", int64_t{0}));
  CHECK(runs[1].value("cluster", "") == second);
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("a job moved on from an owner that answers its deletes 503 starts again only once its first run is stopped",
          "[e2e][dispatch][recovery]") {
  DispatchFleet fleet(MoverOptions());
  // Long enough not to end on its own on a slow machine: it is cancelled
  // once the order of the two runs is seen.
  const Mover m = RunningMover(fleet, "600s");
  const std::string &uid = m.uid, &first = m.first, &second = m.second;

  // The owner, overloaded, answers every delete 503, and stops letting
  // gantry list its Jobs: past the timeout the job is leased by the other
  // cluster at epoch 2, but its first run cannot be stopped yet.
  REQUIRE(fleet.Ctl({"errors", first, "1", "503", "delete"}).code == 0);
  REQUIRE(fleet.Ctl({"forbid", first, "jobs:list"}).code == 0);
  REQUIRE(fleet.Ctl({"kill-watches", first}).code == 0);
  REQUIRE(MovedTo(fleet, second));
  const double refused_before = fleet.RemoteCalls(first, "delete", 503);
  REQUIRE(WaitFor([&] { return fleet.RemoteCalls(first, "delete", 503) >= refused_before + 3; }, seconds(20)));
  // Started now, it would run in both clusters at once: it waits, and says so.
  CHECK(fleet.Phase("team-a", "mover") == "Admitted");
  CHECK_THAT(fleet.Job("team-a", "mover")["status"].value("message", ""),
             Catch::Contains("earlier run in " + first));
  std::vector<nlohmann::json> runs = fleet.Runs(uid);
  REQUIRE(runs.size() == 1);
  CHECK_FALSE(runs[0].contains("endMs"));

  // The owner takes deletes again: the first run is stopped, then the second starts.
  REQUIRE(fleet.Ctl({"errors", first, "0"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Running"}, seconds(60)));
  REQUIRE(PollFor([&] { return fleet.Runs(uid).size() == 2; }, seconds(20)));
  runs = fleet.Runs(uid);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].value("cluster", "") == first);
  CHECK(runs[0].value("endReason", "") == "Deleted");
  CHECK(runs[1].value("cluster", "") == second);
  CHECK(runs[0].value("endMs", int64_t{0}) <= runs[1].value("startMs", int64_t{0}));
  CHECK_THAT(fleet.Job("team-a", "mover")["status"].value("message", ""), !Catch::Contains("earlier run"));
  CHECK(fleet.Ctl({"forbid", first}).code == 0);
  REQUIRE(Cli(fleet.url(), {"cancel", "mover", "-n", "team-a"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Cancelled"}, seconds(40)));
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("a cancel where the list is refused completes when the job's name there holds someone else's Job",
          "[e2e][dispatch][cancel]") {
  DispatchFleet fleet(ConfirmedGoneAfter1s());
  const std::string uid = RunningInC1ThenUnlisted(fleet, "swapped");
  // Someone deletes the job's Job in c1 and makes one of their own under
  // the same name (no gantry labels): the job's object is gone from c1.
  auto client = fleet.RemoteClient("c1");
  REQUIRE(client);
  const std::string name = RemoteName("swapped", uid);
  auto deleted = client->Delete(RemoteJobPath("team-a", name));
  REQUIRE(deleted.ok());
  REQUIRE(deleted->ok());
  nlohmann::json theirs = nlohmann::json::parse(R"({"apiVersion": "batch/v1", "kind": "Job",
      "metadata": {"namespace": "team-a"},
      "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}}}})");
  theirs["metadata"]["name"] = name;
  auto created = client->Create("/apis/batch/v1/namespaces/team-a/jobs", theirs);
  REQUIRE(created.ok());
  REQUIRE(created->status == 201);

  // The lookup by name finds theirs: not the job's, left alone, and read
  // as the job's object gone, so the cancel completes.
  REQUIRE(Cli(fleet.url(), {"cancel", "swapped", "-n", "team-a"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "swapped", {"Cancelled"}, seconds(30)));
  auto still = client->Get(RemoteJobPath("team-a", name));
  REQUIRE(still.ok());
  CHECK(still->status == 200);  // theirs, untouched
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a lease's loser copy in a cluster whose watches went silent is deleted by name, its row kept until then",
          "[e2e][dispatch][unseen]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;  // c1 admits at once, c2 after 2 s
  o.daemon_config_yaml = "notFoundConfirmsAfterSeconds: 1\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // c1's watch streams stay open, and nothing comes through them.
  REQUIRE(fleet.Ctl({"hold-watches", "c1", "on"}).code == 0);
  // Long: no pass of its run's end comes to look at the copy meanwhile.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("loser", "team-a", 1, 0, "60s")) == 201);
  const std::string uid = fleet.Uid("team-a", "loser");
  const std::string copy = RemoteWorkloadPath("team-a", RemoteName("loser", uid));
  // c1's admission is never seen: c2 takes the lease, and c1's copy, created
  // and admitted there unseen, is the loser.
  REQUIRE(fleet.WaitPhase("team-a", "loser", {"Running", "Succeeded"}, seconds(30)));
  CHECK(fleet.Job("team-a", "loser")["status"].value("cluster", "") == "c2");
  REQUIRE(fleet.RemoteGet("c1", copy).status == 200);
  const auto leased = std::chrono::steady_clock::now();
  auto c1_row = [&] {
    for (const nlohmann::json& r : fleet.RemoteObjects("team-a", "loser")) {
      if (r.value("cluster", "") == "c1") return true;
    }
    return false;
  };
  // Read and deleted by name once its create's expectation lapses (10 s),
  // the job looked at again then, not at its backstop (30 s) or when the
  // silent watch is found dead (40 s); its row stays as long as the copy
  // does (the row read first: a row gone before a copy still there is the
  // fault, never a sampling order).
  bool row_gone_first = false;
  const bool deleted = PollFor([&] {
    const bool row = c1_row();
    const bool there = fleet.RemoteGet("c1", copy).status != 404;
    if (there && !row) row_gone_first = true;
    return !there;
  }, seconds(30), std::chrono::milliseconds(250));
  const auto took = std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - leased).count();
  INFO("c1's copy gone " << took << " s after the lease");
  CHECK(deleted);
  CHECK_FALSE(row_gone_first);
  CHECK(took < 16);
  // The row goes once a read by name finds the copy gone, the watch still silent.
  CHECK(PollFor([&] { return !c1_row(); }, seconds(30), std::chrono::milliseconds(250)));
  CHECK(fleet.Phase("team-a", "loser") == "Running");  // its run in c2 goes on
  REQUIRE(fleet.Ctl({"hold-watches", "c1", "off"}).code == 0);
  REQUIRE(Cli(fleet.url(), {"cancel", "loser", "-n", "team-a", "--wait"}).code == 0);
  CHECK(fleet.Ctl({"check"}).code == 0);
}

}  // namespace gantry::testing
