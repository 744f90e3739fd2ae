// What the workers' Kueue says of a job's objects shows in its remote
// objects (GET .../remoteobjects, `gantry status`): a copy's reason for
// waiting, the owner's admission and run.
#include <catch2/catch.hpp>

#include "daemon_fixture.h"
#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

// The job's remote object row of kind in cluster (null when none).
nlohmann::json Row(DispatchFleet& fleet, const std::string& name, const std::string& cluster,
                   const std::string& kind) {
  for (auto& row : fleet.RemoteObjects("team-a", name)) {
    if (row.value("cluster", "") == cluster && row.value("kind", "") == kind) return row;
  }
  return nullptr;
}

std::string ObservedState(const nlohmann::json& row) {
  if (!row.is_object() || !row.contains("observed")) return "";
  return row["observed"].value("state", "");
}

}  // namespace

TEST_CASE("a waiting copy shows Kueue's reason, the owner's objects their admission and run",
          "[e2e][dispatch][status]") {
  DispatchFleetOptions options;
  options.sim_config_yaml = kTwoH100Clusters;  // 16 GPUs of quota in each
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // Two jobs fill both clusters for two minutes.
  for (const char* name : {"fill-1", "fill-2"}) {
    REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 2, 8, "120s")) == 201);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Running"}));
  }
  const std::string owner = fleet.Job("team-a", "fill-1")["status"].value("cluster", "");
  REQUIRE(!owner.empty());
  CHECK(PollFor([&] { return ObservedState(Row(fleet, "fill-1", owner, "Workload")) == "Admitted"; },
                std::chrono::seconds(20)));
  CHECK(PollFor([&] { return ObservedState(Row(fleet, "fill-1", owner, "Job")) == "Running"; },
                std::chrono::seconds(20)));
  CHECK(Row(fleet, "fill-1", owner, "Job").value("objectKind", "") == "Job");  // the template's kind

  // A third waits in both, and each copy says why, in Kueue's words.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("waits", "team-a", 1, 8, "1s")) == 201);
  for (const char* cluster : {"c1", "c2"}) {
    INFO(cluster);
    nlohmann::json row;
    CHECK(PollFor(
        [&] {
          row = Row(fleet, "waits", cluster, "Workload");
          return ObservedState(row) == "Pending" &&
                 row["observed"].value("message", "").find("insufficient unused quota") != std::string::npos;
        },
        std::chrono::seconds(20)));
    INFO(row.dump());
    CHECK(row.value("state", "") == "Wanted");
    CHECK(row["observed"].value("epoch", 0) == row.value("epoch", -1));
  }
  CHECK(fleet.Phase("team-a", "waits") == "Nominating");
  auto status = Cli(fleet.url(), {"status", "waits", "-n", "team-a"});
  INFO(status.out);
  CHECK(status.code == 0);
  CHECK(status.out.find("IN CLUSTER") != std::string::npos);
  CHECK(status.out.find("Pending: couldn't assign flavors") != std::string::npos);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a copy whose create keeps failing shows the cluster's answer, until a create goes through",
          "[e2e][dispatch][status]") {
  DispatchFleetOptions options;
  options.sim_config_yaml = kTwoH100Clusters;
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Ctl({"errors", "c1", "1.0", "500", "create"}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("stuck", "team-a", 1, 0, "1s", "  placement: {clusters: [c1]}")) == 201);
  nlohmann::json row;
  REQUIRE(PollFor(
      [&] {
        row = Row(fleet, "stuck", "c1", "Workload");
        return row.is_object() && row.contains("lastError");
      },
      std::chrono::seconds(20)));
  INFO(row.dump());
  CHECK(row.value("state", "") == "Wanted");
  CHECK(row["lastError"].value("message", "").find("HTTP 500") != std::string::npos);
  CHECK_FALSE(row["lastError"].value("time", "").empty());
  auto status = Cli(fleet.url(), {"status", "stuck", "-n", "team-a"});
  INFO(status.out);
  CHECK(status.out.find("create failed") != std::string::npos);
  CHECK(status.out.find("HTTP 500") != std::string::npos);

  // The cluster answers again: the job runs, and the error is gone.
  REQUIRE(fleet.Ctl({"errors", "c1", "0"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "stuck", {"Succeeded", "Failed"}, std::chrono::seconds(40)));
  CHECK(fleet.Phase("team-a", "stuck") == "Succeeded");
  for (const auto& r : fleet.RemoteObjects("team-a", "stuck")) CHECK_FALSE(r.contains("lastError"));
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("an owner whose probe fails shows its objects as last seen at once, not only once its watches time out",
          "[e2e][dispatch][status]") {
  DispatchFleetOptions options;
  options.clusters = 2;
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("held", "team-a", 1, 0, "300s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "held", {"Running"}, std::chrono::seconds(30)));
  REQUIRE(PollFor([&] { return ObservedState(Row(fleet, "held", "c1", "Job")) == "Running"; },
                  std::chrono::seconds(20)));
  CHECK_FALSE(Row(fleet, "held", "c1", "Job")["observed"].contains("lastSeen"));
  // Cut off with the streams held open: they say nothing until the watch
  // times out, while the probe fails within its own timeout.
  REQUIRE(fleet.Ctl({"partition", "c1", "2"}).code == 0);
  REQUIRE(PollFor([&] { return fleet.Cluster("c1")["status"].value("health", "") == "NotReady"; },
                  std::chrono::seconds(30)));
  const nlohmann::json row = Row(fleet, "held", "c1", "Job");
  INFO(row.dump());
  CHECK(ObservedState(row) == "Running");
  CHECK(row["observed"].value("lastSeen", false));
  auto status = Cli(fleet.url(), {"status", "held", "-n", "team-a"});
  INFO(status.out);
  CHECK(status.out.find("last seen Running") != std::string::npos);
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
}

}  // namespace gantry::testing
