#include "gantry/inventory/snapshot.h"

#include <catch2/catch.hpp>

namespace gantry::inventory {
namespace {

TEST_CASE("ToClusterSnapshot copies the static fields", "[inventory][snapshot]") {
  ClusterConfig c;
  c.name = "gpu-eu-1";
  c.region = "eu-central-1";
  c.zone = "eu-central-1a";
  c.provider = "aws";
  c.compliance_zones = {"eu"};
  c.labels = {{"tier", "prod"}};
  c.accelerators = {{"H100", 80, 8, AcceleratorInterconnect::kNvlink, true},
                    {"L4", 24, 4, AcceleratorInterconnect::kPcie, false}};
  c.nodes = NodeShapeConfig{96'000, 1'000, 16};
  c.price_per_gpu_hour = {2.5, 1.0};
  c.datasets = {"imagenet"};
  c.cordoned = true;
  const placement::ClusterSnapshot s = ToClusterSnapshot(c);
  CHECK(s.name == "gpu-eu-1");
  CHECK(s.region == "eu-central-1");
  CHECK(s.zone == "eu-central-1a");
  CHECK(s.provider == "aws");
  CHECK(s.compliance_zones == c.compliance_zones);
  CHECK(s.labels == c.labels);
  REQUIRE(s.accelerators.size() == 2);
  CHECK(s.accelerators[0].interconnect == placement::Interconnect::kNvlink);
  CHECK(s.accelerators[0].rdma);
  CHECK(s.accelerators[1].interconnect == placement::Interconnect::kPcie);
  CHECK(s.node.gpus_per_node == 8);
  CHECK(s.node.cpu_milli == 96'000);
  CHECK(s.node.node_count == 16);
  CHECK(s.price_per_gpu_hour == 2.5);
  CHECK(s.datasets == c.datasets);
  CHECK(s.cordoned);
  CHECK(s.health == placement::ClusterHealth::kUnknown);  // left to the caller
}

TEST_CASE("ToPlacementHealth turns a long outage into Lost", "[inventory][snapshot]") {
  ClusterHealth h;
  CHECK(ToPlacementHealth(h, 0, 1000) == placement::ClusterHealth::kUnknown);
  h.OnProbeOk(0);
  CHECK(ToPlacementHealth(h, 0, 1000) == placement::ClusterHealth::kReady);
  h.OnProbeFailed(100, "x");
  CHECK(ToPlacementHealth(h, 1099, 1000) == placement::ClusterHealth::kNotReady);
  CHECK(ToPlacementHealth(h, 1100, 1000) == placement::ClusterHealth::kLost);
}

}  // namespace
}  // namespace gantry::inventory
