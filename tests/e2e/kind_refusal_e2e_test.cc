// A cluster that cannot list one optional kind (its JobSets: a broken
// conversion webhook answers 500) is out of reach for the jobs of that kind
// only: its Jobs are followed as before, even from a daemon restarted
// meanwhile, and a JobSet is not sent there until the list works again.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "daemon_fixture.h"
#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

DispatchFleetOptions TwoClustersTellingListErrorsAfter2s() {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoH100Clusters;
  o.daemon_config_yaml = "listErrorsToldAfterSeconds: 2\n";
  return o;
}

TEST_CASE("a cluster whose JobSets cannot be listed still follows its Jobs after a restart, and takes no JobSet",
          "[e2e][dispatch][inventory][recovery]") {
  DispatchFleet fleet(TwoClustersTellingListErrorsAfter2s());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("runner", "team-a", 1, 1, "12s", "  placement: {clusters: [c1]}")) ==
          201);
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Running"}));

  // c1's JobSets answer 500 to every request, and the daemon restarts: its
  // lists of JobSets there fail from the start. Before, c1 never counted as
  // synced, and its Job waited, Running, without a word, for as long.
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobsets=500"}).code == 0);
  fleet.RestartDaemon(true);
  REQUIRE(fleet.ok());

  // Once it has lasted listErrorsToldAfterSeconds, the operator sees why.
  REQUIRE(PollFor([&] {
    return Cli(fleet.url(), {"clusters"}).out.find("listing jobsets answered 500") != std::string::npos;
  }, std::chrono::seconds(30)));
  // A JobSet that only c1 may run waits, saying why, with no copy there.
  REQUIRE(fleet.Submit("team-a", JobSetYaml("sweep", "team-a", "1s", "c1")) == 201);
  REQUIRE(WaitFor([&] {
    return fleet.Job("team-a", "sweep")["status"].value("message", "").find("keep gantry from listing its kind "
                                                                           "(jobsets)") != std::string::npos;
  }, std::chrono::seconds(20)));
  CHECK(fleet.Phase("team-a", "sweep") == "Queued");
  // gantry explain says so of c1, and names no candidate (it named c1).
  auto explained = Cli(fleet.url(), {"explain", "sweep", "-n", "team-a"});
  INFO(explained.out);
  CHECK(explained.out.find("refuses kind") != std::string::npos);
  CHECK(explained.out.find("keeps gantry from listing jobsets") != std::string::npos);
  CHECK(explained.out.find("Candidates:    <none>") != std::string::npos);

  // The Job is followed meanwhile: it finishes in c1, once, with no condition.
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Succeeded", "Failed"}, std::chrono::seconds(40)));
  auto runner = fleet.Job("team-a", "runner");
  CHECK(runner["status"]["phase"] == "Succeeded");
  CHECK(runner["status"]["cluster"] == "c1");
  CHECK(runner["status"]["epoch"] == 1);
  for (const auto& c : runner["status"].value("conditions", nlohmann::json::array())) {
    CHECK(c.value("type", "") != "OwnerUnreachable");
  }
  CHECK(fleet.Runs(fleet.Uid("team-a", "runner")).size() == 1);

  // Listed again: the JobSet goes to c1 and finishes there.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "sweep", {"Succeeded", "Failed"}, std::chrono::seconds(40)));
  CHECK(fleet.Job("team-a", "sweep")["status"]["phase"] == "Succeeded");
  CHECK(fleet.Job("team-a", "sweep")["status"]["cluster"] == "c1");
  CHECK(PollFor([&] { return Cli(fleet.url(), {"clusters"}).out.find("WatchRefused") == std::string::npos; },
                std::chrono::seconds(20)));
}

TEST_CASE("a JobSet whose CRD is uninstalled from its cluster does not show Running for ever: it fails, saying why",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClustersTellingListErrorsAfter2s());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", JobSetYaml("sweep", "team-a", "120s", "c1")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "sweep", {"Running"}));

  // c1 stops serving JobSets (404 to every request, as for a CRD gone).
  // Past listErrorsToldAfterSeconds (2 s here), the JobSet is taken to be
  // gone with it; creating it again answers 404, and the job fails with that.
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobsets=404"}).code == 0);
  REQUIRE(fleet.Ctl({"kill-watches", "c1"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "sweep", {"Failed", "Succeeded"}, std::chrono::seconds(40)));
  const nlohmann::json sweep = fleet.Job("team-a", "sweep");
  CHECK(sweep["status"]["phase"] == "Failed");
  CHECK_THAT(sweep["status"].value("message", ""), Catch::Contains("404"));
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
}

}  // namespace
}  // namespace gantry::testing
