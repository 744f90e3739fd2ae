#include "gantry/inventory/cluster_config.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_support.h"

namespace gantry::inventory {
namespace {

constexpr const char* kEveryField = R"(name: gpu-eu-1
kubeconfig: ../kube/gpu-eu-1.kubeconfig
context: gantry@gpu-eu-1
kueueAPIVersion: v1beta1
region: eu-central-1
zone: eu-central-1a
provider: aws
complianceZones: [eu, gdpr]
labels:
  tier: prod
  gantry.dev/team: ml
  gpu: ""
  spot:
accelerators:
  - model: H100
    memoryGiB: 80
    gpusPerNode: 8
    interconnect: nvlink
    rdma: true
  - model: L4
    memoryGiB: 24
    gpusPerNode: 4
nodes:
  cpu: 96
  memory: 2Ti
  count: 16
pricePerGPUHour:
  onDemand: 2.5
  spot: 1.25
datasets: [imagenet, laion-5b]
excludeResourcePrefixes: [ephemeral-storage, example.com/]
localQueues:
  team-a: team-a-gpu
cordoned: true
declaredLost: true
allowInsecure: true
)";

TEST_CASE("A cluster file with every field parses", "[inventory][config]") {
  Result<ClusterConfig> r =
      ParseClusterConfig(kEveryField, "clusters.d/gpu-eu-1.yaml", "/etc/gantry/clusters.d");
  REQUIRE(r.ok());
  const ClusterConfig& c = *r;
  CHECK(c.name == "gpu-eu-1");
  CHECK(c.kubeconfig == "/etc/gantry/kube/gpu-eu-1.kubeconfig");
  CHECK(c.context == "gantry@gpu-eu-1");
  CHECK(c.kueue_api_version == KueueApiVersion::kV1beta1);
  CHECK(KueueApiVersionName(c.kueue_api_version) == "v1beta1");
  CHECK(c.region == "eu-central-1");
  CHECK(c.zone == "eu-central-1a");
  CHECK(c.provider == "aws");
  CHECK(c.compliance_zones == std::vector<std::string>{"eu", "gdpr"});
  CHECK(c.labels ==
        std::map<std::string, std::string>{{"gantry.dev/team", "ml"}, {"gpu", ""}, {"spot", ""}, {"tier", "prod"}});
  REQUIRE(c.accelerators.size() == 2);
  CHECK(c.accelerators[0] ==
        AcceleratorConfig{"H100", 80, 8, AcceleratorInterconnect::kNvlink, true});
  CHECK(c.accelerators[1] == AcceleratorConfig{"L4", 24, 4, AcceleratorInterconnect::kPcie, false});
  REQUIRE(c.nodes.has_value());
  CHECK(c.nodes->cpu_milli == 96'000);
  CHECK(c.nodes->memory_milli == (int64_t{2} << 40) * 1000);
  CHECK(c.nodes->count == 16);
  CHECK(c.price_per_gpu_hour.on_demand == 2.5);
  CHECK(c.price_per_gpu_hour.spot == 1.25);
  CHECK(c.datasets == std::vector<std::string>{"imagenet", "laion-5b"});
  CHECK(c.exclude_resource_prefixes == std::vector<std::string>{"ephemeral-storage", "example.com/"});
  CHECK(LocalQueueFor(c, "team-a", "gpu") == "team-a-gpu");
  CHECK(LocalQueueFor(c, "team-b", "gpu") == "gpu");
  CHECK(c.cordoned);
  CHECK(c.declared_lost);
  CHECK(c.allow_insecure);
}

TEST_CASE("A minimal cluster file takes the documented defaults", "[inventory][config]") {
  Result<ClusterConfig> r =
      ParseClusterConfig("name: c1\nkubeconfig: /k/c1.yaml\n", "clusters.d/c1.yaml", "/x");
  REQUIRE(r.ok());
  CHECK(r->kubeconfig == "/k/c1.yaml");  // absolute paths are kept
  CHECK(r->context.empty());
  CHECK(r->kueue_api_version == KueueApiVersion::kV1beta2);
  CHECK(r->accelerators.empty());
  CHECK_FALSE(r->nodes.has_value());
  CHECK_FALSE(r->price_per_gpu_hour.on_demand.has_value());
  CHECK_FALSE(r->cordoned);
  CHECK_FALSE(r->declared_lost);
  CHECK_FALSE(r->allow_insecure);
}

TEST_CASE("A bare price is the on-demand price, node quantities take suffixes",
          "[inventory][config]") {
  Result<ClusterConfig> r = ParseClusterConfig(
      "name: c1\nkubeconfig: k\npricePerGPUHour: 3\nnodes: {cpu: 500m, memory: 512Gi}\n",
      "clusters.d/c1.yaml", "/etc/gantry/clusters.d");
  REQUIRE(r.ok());
  CHECK(r->kubeconfig == "/etc/gantry/clusters.d/k");
  CHECK(r->price_per_gpu_hour.on_demand == 3.0);
  CHECK_FALSE(r->price_per_gpu_hour.spot.has_value());
  CHECK(r->nodes->cpu_milli == 500);
  CHECK(r->nodes->memory_milli == (int64_t{512} << 30) * 1000);
  CHECK(r->nodes->count == 0);
}

TEST_CASE("LoadClusterFile names the file as clusters.d/<file> and records its path",
          "[inventory][config]") {
  gantry::testing::TempDir tmp;
  std::filesystem::create_directories(tmp.File("clusters.d"));
  const std::string good = tmp.File("clusters.d/gpu-eu-1.yaml");
  gantry::testing::WriteFile(good, "name: gpu-eu-1\nkubeconfig: kube.yaml\n");
  Result<ClusterConfig> r = LoadClusterFile(good);
  REQUIRE(r.ok());
  CHECK(r->source_file == good);
  CHECK(r->kubeconfig == tmp.File("clusters.d/kube.yaml"));

  const std::string bad = tmp.File("clusters.d/gpu-eu-2.yaml");
  gantry::testing::WriteFile(bad, R"(name: gpu-eu-2
kubeconfig: kube.yaml
region: eu
accelerators:
  - model: H100
    memoryGiB: 80
    interconnect: infiniband
    gpusPerNode: 8
)");
  Result<ClusterConfig> e = LoadClusterFile(bad);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().code() == Code::kInvalidArgument);
  CHECK(e.status().message() ==
        "clusters.d/gpu-eu-2.yaml: line 7: accelerators[0].interconnect: must be nvlink or pcie");

  Result<ClusterConfig> missing = LoadClusterFile(tmp.File("clusters.d/nope.yaml"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kIo);
  CHECK(missing.status().message().rfind("clusters.d/nope.yaml: cannot be read", 0) == 0);
}

}  // namespace
}  // namespace gantry::inventory
