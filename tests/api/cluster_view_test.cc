// ClusterToJson: what `gantry clusters` and GET /api/v1/clusters show of a
// cluster's health.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gantry/api/cluster_view.h"

namespace gantry::api {

TEST_CASE("a cluster gantry cannot reach shows no health from before, nor an outage running", "[api][clusters]") {
  inventory::ClusterView view;
  view.config.name = "c1";
  view.health.state = inventory::HealthState::kNotReady;
  view.health.since_ms = 1'764'000'000'000;
  view.health.RestoreFirstLost(1'764'000'000'000, /*credentials_refused=*/true);
  view.health.last_error = "/readyz answered 401";
  const int64_t now = 1'764'000'600'000;

  const nlohmann::json reached = ClusterToJson(view, now, 60'000);
  CHECK(reached["status"]["health"] == "NotReady");
  CHECK(reached["status"].contains("firstLostAt"));
  CHECK(reached["status"]["credentialsRefused"] == true);
  CHECK(reached["status"]["lastError"] == "/readyz answered 401");

  // Its file refused since (held), or its kubeconfig not loading: not probed.
  for (const bool held : {true, false}) {
    inventory::ClusterView unreachable = view;
    (held ? unreachable.config_error : unreachable.credentials_error) = "refused";
    const nlohmann::json j = ClusterToJson(unreachable, now, 60'000);
    INFO(j.dump());
    CHECK(j["status"]["health"] == "Unknown");
    CHECK_FALSE(j["status"].contains("firstLostAt"));
    CHECK_FALSE(j["status"].contains("since"));
    CHECK_FALSE(j["status"].contains("credentialsRefused"));
    CHECK_FALSE(j["status"].contains("lastError"));  // from before: its error now is the one below
    CHECK(j["status"].contains(held ? "configError" : "credentialsError"));
  }
}

}  // namespace gantry::api

namespace gantry::api {

// c1, Ready since 1'764'000'000'000.
inventory::ClusterView ReadyView() {
  inventory::ClusterView view;
  view.config.name = "c1";
  view.health.OnProbeOk(1'764'000'000'000);
  return view;
}

TEST_CASE("a cluster served from its last good file or kubeconfig shows why the new one was refused",
          "[api][clusters]") {
  inventory::ClusterView view = ReadyView();
  const int64_t now = 1'764'000'600'000;
  CHECK_FALSE(ClusterToJson(view, now, 60'000)["status"].contains("configWarning"));
  view.config_warning = "cluster file clusters.d/c1.yaml: line 3: regoin: unknown field";
  view.credentials_warning = "cluster c1: kubeconfig: line 2: bad";
  const nlohmann::json j = ClusterToJson(view, now, 60'000);
  CHECK(j["status"]["health"] == "Ready");  // still served
  CHECK(j["status"]["configWarning"] == view.config_warning);
  CHECK(j["status"]["credentialsWarning"] == view.credentials_warning);
}

}  // namespace gantry::api

namespace gantry::api {

TEST_CASE("a cluster Ready again shows its last failure as recoveredFrom, not as lastError", "[api][clusters]") {
  inventory::ClusterView view;
  view.config.name = "c1";
  view.health.OnProbeFailed(1'764'000'000'000, "dial 10.0.0.1:6443: connection refused");
  CHECK(ClusterToJson(view, 1'764'000'001'000, 60'000)["status"]["lastError"] ==
        "dial 10.0.0.1:6443: connection refused");
  view.health.OnProbeOk(1'764'000'005'000);
  const nlohmann::json j = ClusterToJson(view, 1'764'000'006'000, 60'000);
  INFO(j.dump());
  CHECK(j["status"]["health"] == "Ready");
  CHECK_FALSE(j["status"].contains("lastError"));
  CHECK(j["status"]["recoveredFrom"] == "dial 10.0.0.1:6443: connection refused");
  view.health.OnProbeFailed(1'764'000'010'000, "dial 10.0.0.1:6443: i/o timeout");
  CHECK(ClusterToJson(view, 1'764'000'011'000, 60'000)["status"]["lastError"] == "dial 10.0.0.1:6443: i/o timeout");
  CHECK_FALSE(ClusterToJson(view, 1'764'000'011'000, 60'000)["status"].contains("recoveredFrom"));
}

}  // namespace gantry::api

namespace gantry::api {

TEST_CASE("a cluster whose clock is off gantry's by more than its Date header can tell shows the offset",
          "[api][clusters]") {
  inventory::ClusterView view = ReadyView();
  CHECK_FALSE(ClusterToJson(view, 1'764'000'001'000, 60'000)["status"].contains("clockOffsetSeconds"));
  view.clock_offset_ms = 900;  // within a Date header's second
  CHECK_FALSE(ClusterToJson(view, 1'764'000'001'000, 60'000)["status"].contains("clockOffsetSeconds"));
  view.clock_offset_ms = -95'400;
  CHECK(ClusterToJson(view, 1'764'000'001'000, 60'000)["status"]["clockOffsetSeconds"] == -95);
}

}  // namespace gantry::api

namespace gantry::api {

TEST_CASE("a Ready cluster whose last probe failed short of the threshold shows that failure as lastError",
          "[api][clusters]") {
  inventory::ClusterView view = ReadyView();
  view.health.failure_threshold = 2;
  view.health.OnProbeOk(1'764'000'000'000);
  view.health.OnProbeRefused(1'764'000'005'000, "401 Unauthorized");
  const nlohmann::json j = ClusterToJson(view, 1'764'000'006'000, 60'000);
  INFO(j.dump());
  CHECK(j["status"]["health"] == "Ready");
  CHECK(j["status"]["lastError"] == "401 Unauthorized");
  CHECK_FALSE(j["status"].contains("recoveredFrom"));
  CHECK(j["status"]["failedProbes"] == 1);
  CHECK(j["status"]["firstLostAt"] == "2025-11-24T16:00:05Z");
  CHECK_FALSE(j["status"].contains("credentialsRefused"));  // not NotReady for it (yet)
  view.health.OnProbeRefused(1'764'000'006'000, "401 Unauthorized");
  CHECK(ClusterToJson(view, 1'764'000'007'000, 60'000)["status"]["credentialsRefused"] == true);
}

}  // namespace gantry::api
