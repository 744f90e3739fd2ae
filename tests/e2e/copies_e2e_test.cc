// The daemon's maxCopies caps how many Workload copies one job has at once:
// an AllAtOnce job whose every cluster could take it gets copies in its
// best-ranked ones only, and the placement route selects the same ones.
#include <catch2/catch.hpp>

#include <chrono>
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

}  // namespace

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

  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

}  // namespace gantry::testing
