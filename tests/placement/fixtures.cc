#include "fixtures.h"

#include <utility>

namespace gantry::placement::testing {

ClusterSnapshot GpuCluster(std::string name, std::string region, std::string model,
                           int64_t memory_gib, int32_t gpus_per_node, Interconnect interconnect,
                           double price, int64_t quota_gpus, int64_t reserved_gpus) {
  ClusterSnapshot c;
  c.name = std::move(name);
  c.region = std::move(region);
  c.provider = "test";
  c.labels = {{"tier", "prod"}};
  c.accelerators = {Accelerator{std::move(model), memory_gib, gpus_per_node, interconnect, true}};
  c.node = NodeShape{Units(96), GiB(1024), gpus_per_node, 32};
  c.price_per_gpu_hour = price;
  c.health = ClusterHealth::kReady;
  c.capacity.quota = {{kGpu, {Units(quota_gpus), Units(reserved_gpus)}},
                      {"cpu", {Units(4000), 0}},
                      {"memory", {GiB(64 * 1024), 0}}};
  return c;
}

std::vector<ClusterSnapshot> TableFleet() {
  constexpr auto kNvlink = Interconnect::kNvlink;
  constexpr auto kPcie = Interconnect::kPcie;
  std::vector<ClusterSnapshot> fleet;
  fleet.reserve(12);  // the references below are used before the next emplace only

  auto& ap =
      fleet.emplace_back(GpuCluster("ap-a100", "ap-northeast-1", "A100", 80, 8, kNvlink, 2.8, 64));
  ap.datasets = {"imagenet"};

  auto& eu_a100 = fleet.emplace_back(
      GpuCluster("eu-a100", "eu-central-1", "A100", 80, 8, kNvlink, 2.5, 64, 16));
  eu_a100.compliance_zones = {"gdpr"};
  eu_a100.datasets = {"imagenet", "c4"};
  eu_a100.capacity.pending_workloads = 2;
  eu_a100.admission = AdmissionStats{5'000, 0.0};

  auto& cordoned = fleet.emplace_back(
      GpuCluster("eu-cordoned", "eu-central-1", "A100", 80, 8, kNvlink, 2.0, 64));
  cordoned.compliance_zones = {"gdpr"};
  cordoned.datasets = {"imagenet", "c4"};
  cordoned.cordoned = true;

  auto& eu_h100 = fleet.emplace_back(
      GpuCluster("eu-h100", "eu-central-1", "H100", 80, 8, kNvlink, 4.0, 128, 120));
  eu_h100.compliance_zones = {"gdpr"};
  eu_h100.datasets = {"c4"};
  eu_h100.capacity.pending_workloads = 10;

  auto& l4 = fleet.emplace_back(GpuCluster("eu-l4", "eu-west-1", "L4", 24, 4, kPcie, 0.8, 32));
  l4.compliance_zones = {"gdpr"};
  l4.labels = {{"tier", "dev"}};
  l4.datasets = {"imagenet"};
  l4.node = NodeShape{Units(48), GiB(192), 4, 8};
  l4.capacity.quota["cpu"].nominal_milli = Units(512);
  l4.capacity.quota["memory"].nominal_milli = GiB(2048);

  auto& stale =
      fleet.emplace_back(GpuCluster("eu-stale", "eu-central-1", "A100", 80, 8, kNvlink, 2.2, 64));
  stale.compliance_zones = {"gdpr"};
  stale.datasets = {"imagenet", "c4"};
  stale.capacity.stale = true;
  stale.capacity.age_ms = 600'000;

  auto& a100_40 =
      fleet.emplace_back(GpuCluster("us-a100-40", "us-east-1", "A100", 40, 4, kPcie, 1.8, 64));
  a100_40.datasets = {"imagenet"};
  a100_40.node = NodeShape{Units(64), GiB(512), 4, 16};

  ClusterSnapshot& cpu = fleet.emplace_back();
  cpu.name = "us-cpu";
  cpu.region = "us-east-1";
  cpu.labels = {{"tier", "prod"}};
  cpu.node = NodeShape{Units(64), GiB(256), 0, 100};
  cpu.health = ClusterHealth::kReady;
  cpu.capacity.quota = {{"cpu", {Units(2000), 0}}, {"memory", {GiB(8 * 1024), 0}}};

  auto& us_h100 =
      fleet.emplace_back(GpuCluster("us-h100", "us-east-1", "H100", 80, 8, kNvlink, 3.5, 256, 64));
  us_h100.compliance_zones = {"hipaa"};
  us_h100.datasets = {"imagenet", "c4"};
  us_h100.capacity.pending_workloads = 4;

  auto& lost =
      fleet.emplace_back(GpuCluster("us-lost", "us-west-2", "H100", 80, 8, kNvlink, 3.0, 256));
  lost.compliance_zones = {"hipaa"};
  lost.health = ClusterHealth::kLost;

  auto& notready =
      fleet.emplace_back(GpuCluster("us-notready", "us-east-1", "A100", 80, 8, kNvlink, 2.6, 64));
  notready.health = ClusterHealth::kNotReady;

  auto& west =
      fleet.emplace_back(GpuCluster("us-west-h100", "us-west-2", "H100", 80, 8, kNvlink, 3.0, 512));
  west.compliance_zones = {"hipaa"};
  west.datasets = {"c4"};
  west.capacity.pending_workloads = 1;
  west.admission = AdmissionStats{60'000, 0.5};
  return fleet;
}

JobDemand Workers(int32_t count, int64_t gpus, int64_t cpu, int64_t memory_gib) {
  PodSetDemand set;
  set.name = "workers";
  set.count = count;
  if (gpus > 0) set.requests_milli[kGpu] = Units(gpus);
  if (cpu > 0) set.requests_milli["cpu"] = Units(cpu);
  if (memory_gib > 0) set.requests_milli["memory"] = GiB(memory_gib);
  JobDemand job;
  job.pod_sets.push_back(std::move(set));
  return job;
}

}  // namespace gantry::placement::testing
