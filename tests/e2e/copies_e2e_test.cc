// The daemon's maxCopies caps how many Workload copies one job has at once:
// an AllAtOnce job whose every cluster could take it gets copies in its
// best-ranked ones only, and the placement route selects the same ones.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

// Three clusters alike: each could take any of the test's jobs.
constexpr const char* kThreeAlike = R"(clusters:
- {name: c1}
- {name: c2}
- {name: c3}
)";

// Three clusters of 4 CPUs of quota each: a job of 4 one-CPU pods fills one.
constexpr const char* kThreeSmall = R"(clusters:
- {name: c1, quota: {cpu: "4", memory: 64Gi}}
- {name: c2, quota: {cpu: "4", memory: 64Gi}}
- {name: c3, quota: {cpu: "4", memory: 64Gi}}
)";

}  // namespace

TEST_CASE("with maxCopies 2, a job waiting in two full clusters moves a copy to a third once it has room, and runs "
          "there",
          "[e2e][dispatch][copies]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kThreeSmall;
  // A waiting job's next look comes at its resync: room freed wakes none.
  o.daemon_config_yaml = "maxCopies: 2\nresyncSeconds: 3\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  for (const char* c : {"c1", "c2", "c3"}) {
    const std::string name = std::string("fill-") + c;
    REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 4, 0, "1h",
                                              std::string("  placement: {clusters: [") + c + "]}")) == 201);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Running"}));
  }
  REQUIRE(fleet.Submit("team-a", SimJobYaml("waiter", "team-a", 4, 0, "1s")) == 201);
  REQUIRE(WaitFor([&] { return fleet.Phase("team-a", "waiter") == "Nominating"; }, seconds(20)));
  // Its two copies; the cluster without one is freed.
  std::set<std::string> copies;
  for (const nlohmann::json& row : fleet.RemoteObjects("team-a", "waiter")) {
    if (row.value("kind", "") != "Workload" || row.value("state", "") != "Wanted") continue;
    copies.insert(row.value("cluster", ""));
  }
  REQUIRE(copies.size() == 2);
  std::string freed;
  for (const char* c : {"c1", "c2", "c3"}) {
    if (!copies.count(c)) freed = c;
  }
  REQUIRE(Cli(fleet.url(), {"cancel", "fill-" + freed, "-n", "team-a"}).code == 0);

  REQUIRE(fleet.WaitPhase("team-a", "waiter", {"Succeeded"}, seconds(60)));
  const nlohmann::json waiter = fleet.Job("team-a", "waiter");
  CHECK(waiter["status"]["cluster"] == freed);
  CHECK(waiter["status"]["epoch"] == 1);
  CHECK(Count(Reasons(fleet, "team-a", "waiter"), "CopiesMoved") == 1);
  CHECK(fleet.Runs(fleet.Uid("team-a", "waiter")).size() == 1);
  for (const std::string& c : copies) CHECK(fleet.Phase("team-a", "fill-" + c) == "Running");
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("with maxCopies 2, an AllAtOnce job that three clusters could take gets two copies, and runs once",
          "[e2e][dispatch][copies]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kThreeAlike;
  o.daemon_config_yaml = "maxCopies: 2\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  constexpr int kJobs = 4;
  for (int i = 0; i < kJobs; ++i) {
    REQUIRE(fleet.Submit("team-a", SimJobYaml("capped-" + std::to_string(i), "team-a", 1, 0, "1s")) == 201);
  }
  for (int i = 0; i < kJobs; ++i) {
    const std::string name = "capped-" + std::to_string(i);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded"}, seconds(40)));
    CHECK(fleet.Runs(fleet.Uid("team-a", name)).size() == 1);
  }

  // Each job: two copies and its real job. Copies in every feasible cluster
  // would have made it three and the real job.
  CHECK(fleet.RemoteCalls("", "create", 201) == kJobs * 3);

  // The route tells the same cap: three feasible, two selected.
  const nlohmann::json placement = fleet.Placement("team-a", "capped-0");
  INFO(placement.dump());
  CHECK(placement.value("feasibleCount", 0) == 3);
  int selected = 0;
  for (const nlohmann::json& c : placement.value("clusters", nlohmann::json::array())) {
    if (c.value("selected", false)) ++selected;
  }
  CHECK(selected == 2);
  CHECK(placement.value("maxCopies", 0) == 2);
  // gantry explain and the Nominated event say why the third has no copy.
  RunResult explain = Cli(fleet.url(), {"explain", "capped-0", "-n", "team-a"});
  INFO(explain.out);
  CHECK(explain.out.find("; beyond maxCopies (2)") != std::string::npos);
  bool told = false;
  for (const nlohmann::json& e : fleet.Events("team-a", "capped-0")) {
    told |= e.value("reason", "") == "Nominated" &&
            e.value("message", "").find("; beyond maxCopies (2), ranked lower: ") != std::string::npos;
  }
  CHECK(told);

  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

}  // namespace gantry::testing
