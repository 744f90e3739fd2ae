// A cluster file refused at the daemon's start (an edit made while it was
// down, or a field a new release no longer accepts) holds its cluster in the
// inventory: the jobs it owns wait, running there, until the file loads. It
// used to leave the cluster out, and its jobs counted as lost at once: a
// Requeue job ran a second time elsewhere while its first run went on.
#include <catch2/catch.hpp>

#include <regex>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// c1 admits at once, so a job free to go anywhere runs there; c2 and c3
// admit after 2 s.
const char* kFirstIsFastest = R"(clusters:
- {name: c1}
- {name: c2, admissionDelay: 2s}
- {name: c3, admissionDelay: 2s}
)";

// The line of `cluster` in `gantry clusters` ("" when absent).
std::string ClustersRow(DispatchFleet& fleet, const std::string& cluster) {
  const std::string out = "\n" + Cli(fleet.url(), {"clusters"}).out;
  const auto at = out.find("\n" + cluster + " ");
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

std::string OwnerUnreachableReason(DispatchFleet& fleet, const std::string& name) {
  const json job = fleet.Job("team-a", name);
  if (!job.is_object()) return "";
  for (const json& c : job["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "OwnerUnreachable") return c.value("reason", "");
  }
  return "";
}

std::string C1File(DispatchFleet& fleet) { return fleet.sim_dir() + "/clusters.d/c1.yaml"; }

// Submits "held" (Requeue, `held_for`), which goes to c1, the fastest, and,
// with `witness`, "witness" (Requeue, c2 only), which shows when the loss
// timeouts have passed after the restart; all Running. Returns held's uid.
std::string RunHeld(DispatchFleet& fleet, const std::string& held_for, bool witness) {
  REQUIRE(fleet.Submit("team-a", SimJobYaml("held", "team-a", 1, 0, held_for, "  onClusterLoss: Requeue")) == 201);
  if (witness) {
    REQUIRE(fleet.Submit("team-a", SimJobYaml("witness", "team-a", 1, 0, "120s",
                                              "  onClusterLoss: Requeue\n  placement: {clusters: [c2]}")) == 201);
  }
  REQUIRE(fleet.WaitPhase("team-a", "held", {"Running"}, seconds(30)));
  if (witness) REQUIRE(fleet.WaitPhase("team-a", "witness", {"Running"}, seconds(30)));
  REQUIRE(fleet.Job("team-a", "held")["status"].value("cluster", "") == "c1");
  return fleet.Uid("team-a", "held");
}

// While the daemon is down, c1's file gets a field gantry refuses (or, with
// `remove`, goes), and with `cut_c2` c2 is cut off; then the daemon starts.
// Returns c1's good file.
std::string RestartWithC1File(DispatchFleet& fleet, bool remove, bool cut_c2) {
  fleet.StopDaemon(/*kill=*/false);
  const std::string c1_config = ReadFile(C1File(fleet));
  REQUIRE(!c1_config.empty());
  if (remove) {
    REQUIRE(std::remove(C1File(fleet).c_str()) == 0);
  } else {
    WriteFile(C1File(fleet), c1_config + "gpuz: 8\n");
  }
  if (cut_c2) REQUIRE(fleet.Ctl({"partition", "c2", "1"}).code == 0);
  fleet.StartDaemon();
  REQUIRE(fleet.ok());
  return c1_config;
}

// A fleet whose first cluster is the fastest, and whose owners are lost
// after 3 s out of reach.
DispatchFleetOptions LossIn3s() {
  DispatchFleetOptions o;
  o.sim_config_yaml = kFirstIsFastest;
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 3";
  return o;
}

// "held" (Requeue, 120 s) runs in c1; the daemon restarts with c1's file
// gone, and holds the job (OwnerHeld) until a reload confirms the removal.
void HoldWithC1Missing(DispatchFleet& fleet) {
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  RunHeld(fleet, "120s", /*witness=*/false);
  RestartWithC1File(fleet, /*remove=*/true, /*cut_c2=*/false);
  REQUIRE(PollFor([&] { return OwnerUnreachableReason(fleet, "held") == "OwnerHeld"; }, seconds(30)));
}

// "held" is seen to finish where it ran, at epoch 1, once, never lost.
void CheckRanOnceInC1(DispatchFleet& fleet, const std::string& uid) {
  REQUIRE(fleet.WaitPhase("team-a", "held", {"Succeeded", "Failed"}, seconds(90)));
  const json held = fleet.Job("team-a", "held");
  CHECK(held["status"]["phase"] == "Succeeded");
  CHECK(held["status"]["epoch"] == 1);
  CHECK(held["status"].value("cluster", "") == "c1");
  CHECK(Count(Reasons(fleet, "team-a", "held"), "ClusterLost") == 0);
  const std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].value("cluster", "") == "c1");
  CHECK(runs[0].value("endReason", "") == "Succeeded");
}

}  // namespace

TEST_CASE("a cluster file refused at start holds the cluster: its Requeue job is not run again elsewhere, and "
          "finishes there once the file loads",
          "[e2e][recovery][inventory][placeholder]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kFirstIsFastest;
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 3";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string uid = RunHeld(fleet, "45s", /*witness=*/true);
  const std::string c1_config = RestartWithC1File(fleet, /*remove=*/false, /*cut_c2=*/true);

  // c1 is listed, held, saying why.
  const std::string row = ClustersRow(fleet, "c1");
  INFO(row);
  CHECK(row.find("Unknown,ConfigRefused") != std::string::npos);
  CHECK(row.find("cluster file c1.yaml refused: line ") != std::string::npos);
  CHECK(fleet.Cluster("c1")["status"].value("configError", "").find("its jobs are held until it loads") !=
        std::string::npos);
  std::map<std::string, double> ready = fleet.ClusterGauge("gantry_cluster_ready");
  CHECK(ready.count("c1") == 1);
  CHECK(ready["c1"] == 0);

  // Past clusterLostTimeout (c2's job is requeued), c1's job has not moved:
  // still Running there at epoch 1, with no copy anywhere else, run once.
  REQUIRE(PollFor([&] { return Count(Reasons(fleet, "team-a", "witness"), "ClusterLost") == 1; }, seconds(45)));
  json held = fleet.Job("team-a", "held");
  INFO(held.dump());
  CHECK(held["status"]["phase"] == "Running");
  CHECK(held["status"]["epoch"] == 1);
  CHECK(held["status"].value("cluster", "") == "c1");
  CHECK(Count(Reasons(fleet, "team-a", "held"), "ClusterLost") == 0);
  CHECK(Count(Reasons(fleet, "team-a", "held"), "OwnerHeld") == 1);  // why its status stands still
  for (const json& object : fleet.RemoteObjects("team-a", "held")) {
    INFO(object.dump());
    CHECK(object["epoch"] == 1);
    CHECK((object.value("cluster", "") == "c1" || object.value("state", "") != "Wanted"));
  }
  CHECK(fleet.Runs(uid).size() == 1);

  // The file is mended and the inventory reloaded.
  WriteFile(C1File(fleet), c1_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  CheckRanOnceInC1(fleet, uid);
  CHECK(ClustersRow(fleet, "c1").find("ConfigRefused") == std::string::npos);
  REQUIRE(fleet.Ctl({"heal", "c2"}).code == 0);
}

TEST_CASE("an owner refusing gantry its watch before its file was refused is given its whole timeout again once the "
          "file loads, not lost at once",
          "[e2e][recovery][inventory][placeholder]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kFirstIsFastest;
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 15\ncredentialsRefusedTimeoutSeconds: 15";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string uid = RunHeld(fleet, "60s", /*witness=*/true);

  // RBAC drift in c1: gantry may no longer list Workloads there. The
  // refusal's start is kept in the store.
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads"}).code == 0);
  REQUIRE(fleet.Ctl({"kill-watches", "c1"}).code == 0);
  REQUIRE(PollFor([&] { return OwnerUnreachableReason(fleet, "held") == "WatchRefused"; }, seconds(30)));

  // Restarted with c1's file refused: c1 is held, not watched, its refusal
  // not seen.
  const std::string c1_config = RestartWithC1File(fleet, /*remove=*/false, /*cut_c2=*/true);
  REQUIRE(PollFor([&] { return OwnerUnreachableReason(fleet, "held") == "OwnerHeld"; }, seconds(30)));
  // Past both timeouts since the restart, so since the refusal began.
  REQUIRE(PollFor([&] { return Count(Reasons(fleet, "team-a", "witness"), "ClusterLost") == 1; }, seconds(60)));

  // The file is mended, and c1 still refuses the list: a refusal seen now,
  // its clock started now. Before, the clock ran from before the hold, and
  // the job was lost at once, to run a second time elsewhere.
  WriteFile(C1File(fleet), c1_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(PollFor(
      [&] {
        return OwnerUnreachableReason(fleet, "held") == "WatchRefused" ||
               Count(Reasons(fleet, "team-a", "held"), "ClusterLost") > 0;
      },
      seconds(30)));
  json held = fleet.Job("team-a", "held");
  INFO(held.dump());
  CHECK(Count(Reasons(fleet, "team-a", "held"), "ClusterLost") == 0);
  CHECK(held["status"]["phase"] == "Running");
  CHECK(held["status"]["epoch"] == 1);

  // Allowed again within the timeout: it finishes where it ran, once.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  CheckRanOnceInC1(fleet, uid);
  REQUIRE(fleet.Ctl({"heal", "c2"}).code == 0);
}

TEST_CASE("an owner whose file is missing at the daemon's start is held until a reload, not lost: its Requeue job "
          "runs once",
          "[e2e][recovery][inventory][placeholder]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kFirstIsFastest;
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 3";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string uid = RunHeld(fleet, "25s", /*witness=*/false);

  // While the daemon is down, c1's file goes (a volume not mounted yet, a
  // file moved aside): the daemon starts without c1.
  const std::string c1_config = RestartWithC1File(fleet, /*remove=*/true, /*cut_c2=*/false);
  REQUIRE(PollFor([&] { return OwnerUnreachableReason(fleet, "held") == "OwnerHeld"; }, seconds(30)));
  json held = fleet.Job("team-a", "held");
  INFO(held.dump());
  CHECK(held["status"]["phase"] == "Running");
  CHECK(held["status"]["epoch"] == 1);
  CHECK(Count(Reasons(fleet, "team-a", "held"), "ClusterLost") == 0);

  // The file is back, and the inventory reloaded.
  WriteFile(C1File(fleet), c1_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  CheckRanOnceInC1(fleet, uid);
}

TEST_CASE("a reload that confirms the removal of an owner missing since the start says so, though no cluster was "
          "added or removed by it",
          "[e2e][recovery][inventory][placeholder]") {
  DispatchFleet fleet(LossIn3s());
  HoldWithC1Missing(fleet);
  // gantry clusters lists c1, which its job waits for, as Missing: an
  // operator looking there for it found nothing.
  const RunResult listed = Cli(fleet.url(), {"clusters"});
  INFO(listed.out << listed.err);
  CHECK(std::regex_search(listed.out, std::regex("(^|\\n)c1 +Missing ")));
  CHECK(listed.out.find("it owned 1 running job(s) then") != std::string::npos);
  const RunResult one = Cli(fleet.url(), {"clusters", "c1", "-o", "json"});
  INFO(one.out << one.err);
  CHECK(one.code == 0);
  CHECK(one.out.find("\"ownedJobs\": 1") != std::string::npos);
  // gantry explain names it too, rather than blaming every cluster's quota.
  const RunResult explained = Cli(fleet.url(), {"explain", "held", "-n", "team-a"});
  INFO(explained.out << explained.err);
  CHECK(explained.out.find("Owner:         c1 (not in the inventory gantry started with") != std::string::npos);

  // The file stays gone: the operator's reload makes it c1's removal. It
  // said "inventory reloaded" and no more, while the held job moved on.
  const RunResult reload = Cli(fleet.url(), {"reload"});
  INFO(reload.out << reload.err);
  CHECK(reload.code == 0);
  CHECK((reload.out + reload.err).find("confirmed the removal of c1 (1 job(s)), missing since gantry started") !=
        std::string::npos);
  // Its onClusterLoss (Requeue): it runs again elsewhere, at epoch 2.
  REQUIRE(PollFor([&] {
    const json held = fleet.Job("team-a", "held");
    return held.is_object() && held["status"].value("epoch", 0) == 2 && held["status"].value("phase", "") == "Running";
  }, seconds(60)));
  CHECK(fleet.Job("team-a", "held")["status"].value("cluster", "") != "c1");
  CHECK(Cli(fleet.url(), {"clusters"}).out.find("Missing") == std::string::npos);  // removed now
  // Told once: the next reload confirms nothing more.
  const RunResult again = Cli(fleet.url(), {"reload"});
  CHECK((again.out + again.err).find("confirmed the removal") == std::string::npos);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a reload that confirms the removal of an owner missing since the start counts a job being cancelled there",
          "[e2e][recovery][inventory][placeholder]") {
  DispatchFleet fleet(LossIn3s());
  HoldWithC1Missing(fleet);
  // Cancelled while its owner is missing: it waits for c1 to confirm.
  REQUIRE(Cli(fleet.url(), {"cancel", "held", "-n", "team-a"}).code == 0);
  REQUIRE(PollFor([&] { return fleet.Job("team-a", "held")["status"].value("phase", "") == "Cancelling"; },
                  seconds(30)));
  // The reload confirms the removal, this job counted (it said nothing), and the cancel ends.
  const RunResult reload = Cli(fleet.url(), {"reload"});
  INFO(reload.out << reload.err);
  CHECK((reload.out + reload.err).find("confirmed the removal of c1 (1 job(s)), missing since gantry started") !=
        std::string::npos);
  CHECK(PollFor([&] { return fleet.Job("team-a", "held")["status"].value("phase", "") == "Cancelled"; },
                seconds(30)));
}

}  // namespace gantry::testing
