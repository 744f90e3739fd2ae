// The dispatch protocol end to end: jobs submitted to a real daemon run in
// simulated Kueue clusters, whole and exactly once.
#include <catch2/catch.hpp>

#include <set>

#include <fmt/format.h>

#include "dispatch_fixture.h"
#include "gantry/http/client.h"

namespace gantry::testing {
namespace {

// Runs per job uid, from the simulator's journal.
std::map<std::string, std::vector<nlohmann::json>> RunsByJob(DispatchFleet& fleet) {
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (auto& run : fleet.Journal()) out[run.value("jobUid", "")].push_back(run);
  return out;
}

}  // namespace

TEST_CASE("30 jobs of mixed shapes all succeed, each once, on a cluster that fits it", "[e2e][dispatch]") {
  DispatchFleet fleet;
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // c1: us-east-1 H100, c2: eu-central-1 A100, c3: us-west-2 L40S.
  std::map<std::string, std::set<std::string>> allowed;
  for (int i = 0; i < 30; ++i) {
    std::string name = fmt::format("job-{}", i);
    std::string extra;
    int gpus = 0;
    if (i % 3 == 1) {
      extra = "  placement: {regions: [eu-central-1]}";
      allowed[name] = {"c2"};
    } else if (i % 3 == 2) {
      extra = "  placement: {accelerator: {model: L40S}}";
      gpus = 2;
      allowed[name] = {"c3"};
    } else {
      allowed[name] = {"c1", "c2", "c3"};
    }
    REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 1 + i % 2, gpus, "500ms", extra)) == 201);
  }
  for (auto& [name, clusters] : allowed) {
    INFO(name);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded", "Failed", "Unschedulable"}, std::chrono::seconds(120)));
    auto job = fleet.Job("team-a", name);
    CHECK(job["status"]["phase"] == "Succeeded");
    CHECK(clusters.count(job["status"].value("cluster", "")) == 1);
    CHECK(job["status"]["epoch"] == 1);
  }
  auto check = fleet.Ctl({"check"});
  CHECK(check.code == 0);
  INFO(check.out);
  auto runs = RunsByJob(fleet);
  CHECK(runs.size() == 30);
  for (auto& [uid, list] : runs) {
    INFO(uid);
    CHECK(list.size() == 1);
  }
  // Dispatch metrics: 30 nominations, 30 leases, an admission latency for each.
  auto client = http::Client::Create(fleet.url());
  REQUIRE(client.ok());
  auto metrics = (*client)->Do("GET", "/metrics");
  REQUIRE(metrics.ok());
  CHECK_THAT(metrics->body, Catch::Contains(
      R"(gantry_dispatch_transitions_total{from="Queued",step="nominate",to="Nominating"} 30)"));
  CHECK_THAT(metrics->body, Catch::Contains(
      R"(gantry_dispatch_transitions_total{from="Nominating",step="lease",to="Admitted"} 30)"));
  CHECK_THAT(metrics->body, Catch::Contains("gantry_dispatch_admission_seconds_count 30"));
  // One lease won per job, by the cluster that ran it.
  std::map<std::string, int> ran_on;
  for (const auto& run : fleet.Journal()) ++ran_on[run.value("cluster", "")];
  for (const auto& [cluster, n] : ran_on) {
    INFO(cluster);
    CHECK_THAT(metrics->body,
               Catch::Contains(fmt::format(R"(gantry_dispatch_leases_total{{cluster="{}",outcome="won"}} {})", cluster, n)));
  }
  CHECK_THAT(metrics->body, Catch::Contains(R"(gantry_dispatch_remote_calls_total{cluster="c2",code="201",verb="create"})"));
  // The history tells the story.
  // (A short run may finish before a pass sees it running: Started is optional.)
  std::vector<std::string> reasons;
  for (auto& e : fleet.Events("team-a", "job-0")) {
    if (e.value("reason", "") != "Started") reasons.push_back(e.value("reason", ""));
  }
  CHECK(reasons == std::vector<std::string>{"Submitted", "Nominated", "LeaseTaken", "Succeeded"});
}

}  // namespace gantry::testing

namespace gantry::testing {

// A running job's pod counts are shown, not acted on: a change to them alone
// is recorded a moment later (EngineOptions::status_delay_ms), so that a
// large gang's many status updates cost a pass or so a second, not one each.
TEST_CASE("a running job's pod counts show in its status a moment after they change", "[e2e][dispatch][status]") {
  DispatchFleet fleet;
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("counted", "team-a", 2, 0, "120s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "counted", {"Running"}));
  auto remote_status = [&] { return fleet.Job("team-a", "counted")["status"].value("remote", ""); };
  REQUIRE(PollFor([&] { return remote_status().find("active 2") != std::string::npos; }, std::chrono::seconds(20)));
  INFO(remote_status());

  // Pods end one by one (their counts, as the worker's job controller
  // writes them). Each change is recorded by a pass within a moment: its own
  // (status_delay_ms), or one already due after the lease (this test does
  // not tell which; the observer's test pins that such a change is told as
  // status only).
  const std::string cluster = fleet.Job("team-a", "counted")["status"].value("cluster", "");
  auto client = fleet.RemoteClient(cluster);
  REQUIRE(client);
  const std::string path =
      RemoteJobPath("team-a", RemoteName("counted", fleet.Uid("team-a", "counted"))) + "/status";
  for (int failed = 1; failed <= 2; ++failed) {
    auto patched = client->MergePatch(path, {{"status", {{"active", 2 - failed}, {"failed", failed}}}});
    REQUIRE(patched.ok());
    REQUIRE(patched->ok());
    const std::string want = fmt::format("active {}, succeeded 0, failed {}", 2 - failed, failed);
    INFO(want);
    CHECK(PollFor([&] { return remote_status().find(want) != std::string::npos; }, std::chrono::seconds(20)));
  }
  CHECK(fleet.Phase("team-a", "counted") == "Running");
}

}  // namespace gantry::testing
