// A job whose Workload Kueue deactivates for good (its
// kueue.x-k8s.io/max-exec-time-seconds ran out) fails there, once: it is
// not dispatched again for a fresh budget elsewhere.
#include <catch2/catch.hpp>

#include "dispatch_fixture.h"

namespace gantry::testing {

TEST_CASE("a job past its maximum execution time fails once, not requeued to run again", "[e2e][dispatch][evicted]") {
  DispatchFleet fleet;  // three clusters
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // A minute's run with a 2 s limit, onClusterLoss Requeue (the default).
  std::string yaml = SimJobYaml("overdue", "team-a", 1, 0, "60s");
  const std::string at = "    metadata:\n      annotations:";
  REQUIRE(yaml.find(at) != std::string::npos);
  yaml.replace(yaml.find(at), at.size(),
               "    metadata:\n      labels: {kueue.x-k8s.io/max-exec-time-seconds: \"2\"}\n      annotations:");
  REQUIRE(fleet.Submit("team-a", yaml) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "overdue", {"Failed", "Succeeded", "Cancelled"}, std::chrono::seconds(60)));
  nlohmann::json job = fleet.Job("team-a", "overdue");
  INFO(job.dump());
  CHECK(job["status"].value("phase", "") == "Failed");
  CHECK(job["status"].value("epoch", 0) == 1);  // never dispatched again
  CHECK(job["status"].value("message", "").find("MaximumExecutionTimeExceeded") != std::string::npos);
  const std::vector<std::string> reasons = Reasons(fleet, "team-a", "overdue");
  CHECK(Count(reasons, "MaximumExecutionTimeExceeded") == 1);
  CHECK(Count(reasons, "Nominated") == 1);  // one dispatch: a requeue would nominate again
  CHECK(Count(reasons, "Evicted") == 0);    // the reason a requeue after an eviction is recorded under
  const std::vector<nlohmann::json> runs = fleet.Runs(fleet.Uid("team-a", "overdue"));
  INFO(Describe(runs));
  CHECK(runs.size() == 1);
}

}  // namespace gantry::testing
