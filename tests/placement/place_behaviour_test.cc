// Focused behaviours of Place(): exclusion messages, unschedulable, stale and
// transient states, determinism under shuffling, and edge inputs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gantry/placement/explain.h"
#include "gantry/placement/place.h"

namespace gantry::placement {
namespace {

using namespace gantry::placement::testing;  // NOLINT: test-local builders

const Exclusion& ExclusionOf(const Decision& d, const std::string& name) {
  auto it = std::find_if(d.excluded.begin(), d.excluded.end(),
                         [&](const ExcludedCluster& v) { return v.cluster == name; });
  REQUIRE(it != d.excluded.end());
  return it->exclusion;
}

const Score& ScoreOf(const Decision& d, const std::string& name) {
  auto it = std::find_if(d.feasible.begin(), d.feasible.end(),
                         [&](const RankedCluster& v) { return v.cluster == name; });
  REQUIRE(it != d.feasible.end());
  return it->score;
}

std::vector<ClusterSnapshot> ThreeClusters(int64_t reserved_gpus) {
  return {GpuCluster("a", "r1", "H100", 80, 8, Interconnect::kNvlink, 3.0, 64, reserved_gpus),
          GpuCluster("b", "r1", "H100", 80, 8, Interconnect::kNvlink, 3.0, 64, reserved_gpus),
          GpuCluster("c", "r2", "H100", 80, 8, Interconnect::kNvlink, 3.0, 64, reserved_gpus)};
}

TEST_CASE("gang above every nominal quota but below their sum is unschedulable",
          "[placement][unschedulable]") {
  const auto fleet = ThreeClusters(0);                     // 3 x 64 = 192 GPUs in total
  const Decision d = Place(Workers(12, 8, 8, 64), fleet);  // 96 GPUs
  CHECK(d.unschedulable);
  CHECK(d.candidates.empty());
  for (const ExcludedCluster& v : d.excluded) {
    CHECK(v.exclusion.filter == Filter::kQuota);
    CHECK(v.exclusion.permanent);
    CHECK(v.exclusion.message == "needs 96 nvidia.com/gpu; the cluster's ClusterQueues hold 64 in all");
  }
}

TEST_CASE("a pod larger than every node is unschedulable", "[placement][unschedulable]") {
  const Decision d = Place(Workers(2, 16, 8, 64), ThreeClusters(0));
  CHECK(d.unschedulable);
  CHECK(ExclusionOf(d, "a").message ==
        "pod set 'workers' needs 16 nvidia.com/gpu per pod; nodes have 8");
}

TEST_CASE("gang above free but within nominal stays a low-scored candidate",
          "[placement][unschedulable]") {
  auto fleet = ThreeClusters(32);  // 32 of 64 free in each
  fleet.push_back(GpuCluster("d", "r1", "H100", 80, 8, Interconnect::kNvlink, 3.0, 64, 0));
  const Decision d = Place(Workers(6, 8, 8, 64), fleet);  // 48 GPUs
  CHECK_FALSE(d.unschedulable);
  REQUIRE(d.candidates == std::vector<std::string>{"d", "a", "b", "c"});
  CHECK(ScoreOf(d, "d").value(Term::kFitsNow) == 1);
  const Score& a = ScoreOf(d, "a");
  CHECK(a.value(Term::kFitsNow) == 0);
  CHECK(a.value(Term::kFreeQuota) == 0);
  CHECK(a.total < ScoreOf(d, "d").total - 50);
}

TEST_CASE("transient exclusions never make a job unschedulable", "[placement][unschedulable]") {
  auto fleet = ThreeClusters(0);
  fleet[0].cordoned = true;
  fleet[1].health = ClusterHealth::kLost;
  fleet[2].capacity.stale = true;
  fleet[2].capacity.quota[kGpu].nominal_milli = Units(16);
  const Decision d = Place(Workers(4, 8, 8, 64), fleet);
  CHECK(d.candidates.empty());
  CHECK_FALSE(d.unschedulable);
  CHECK(ExclusionOf(d, "a").filter == Filter::kCordoned);
  CHECK(ExclusionOf(d, "b").message == "Lost: out of gantry's reach for longer than its loss timeout allows");
  CHECK(ExclusionOf(d, "c").filter == Filter::kQuota);
  CHECK_FALSE(ExclusionOf(d, "c").permanent);
}

TEST_CASE("a cluster out of reach is told as such, not by a quota reading that may be old or was never made",
          "[placement][unschedulable]") {
  auto fleet = ThreeClusters(0);
  // Out of reach since the daemon started: nothing read of its quota.
  fleet[0].health = ClusterHealth::kLost;
  fleet[0].capacity = ClusterCapacity{};
  fleet[0].capacity.stale = true;
  // Out of reach, its last reading short of the gang's free quota only.
  fleet[1].health = ClusterHealth::kNotReady;
  fleet[1].capacity.stale = true;
  fleet[1].capacity.quota[kGpu].nominal_milli = Units(16);
  // Out of reach, and its quota, read fresh, can never hold the gang: that is said.
  fleet[2].health = ClusterHealth::kNotReady;
  fleet[2].capacity.quota[kGpu].nominal_milli = Units(16);
  const Decision d = Place(Workers(4, 8, 8, 64), fleet);  // 32 GPUs
  CHECK(ExclusionOf(d, "a").filter == Filter::kHealth);
  CHECK(ExclusionOf(d, "a").message == "Lost: out of gantry's reach for longer than its loss timeout allows");
  CHECK(ExclusionOf(d, "b").filter == Filter::kHealth);
  CHECK(ExclusionOf(d, "b").message == "NotReady: gantry cannot reach it, or follow what runs there, now");
  CHECK(ExclusionOf(d, "c").filter == Filter::kQuota);
  CHECK(ExclusionOf(d, "c").permanent);

  // One whose kubeconfig does not load is not probed: told as that, not as an Unknown connection.
  fleet[0].credentials_unloadable = true;
  fleet[0].health = ClusterHealth::kUnknown;
  const Decision unloadable = Place(Workers(4, 8, 8, 64), fleet);
  CHECK(ExclusionOf(unloadable, "a").filter == Filter::kHealth);
  CHECK(ExclusionOf(unloadable, "a").message == "its kubeconfig does not load (gantry clusters says why), not Ready");
  CHECK_FALSE(ExclusionOf(unloadable, "a").permanent);
}

TEST_CASE("a Ready cluster whose quota was never read says so, not that no ClusterQueue has quota",
          "[placement][unschedulable]") {
  auto fleet = ThreeClusters(0);
  fleet[0].capacity = ClusterCapacity{};
  fleet[0].capacity.stale = true;
  fleet[0].capacity_unread = true;
  fleet[1].capacity = ClusterCapacity{};  // read, fresh, and empty: that is said, and for good
  const Decision d = Place(Workers(4, 8, 8, 64), fleet);
  CHECK(ExclusionOf(d, "a").filter == Filter::kQuota);
  CHECK(ExclusionOf(d, "a").message == "its quota has not been read yet (gantry clusters says why if it cannot be)");
  CHECK_FALSE(ExclusionOf(d, "a").permanent);
  CHECK_THAT(ExclusionOf(d, "b").message, Catch::Contains("no ClusterQueue has quota for"));
  CHECK(ExclusionOf(d, "b").permanent);
  // Out of reach as well: the outage is told first.
  fleet[0].health = ClusterHealth::kNotReady;
  CHECK(ExclusionOf(Place(Workers(4, 8, 8, 64), fleet), "a").message == "NotReady: gantry cannot reach it, or follow what runs there, now");
}

TEST_CASE("a cluster declared lost is excluded as a cordoned one is, and says why", "[placement][unschedulable]") {
  auto fleet = ThreeClusters(0);
  fleet[0].declared_lost = true;
  fleet[1].declared_lost = true;
  fleet[1].cordoned = true;
  const Decision d = Place(Workers(1, 1, 1, 1), fleet);
  CHECK(d.candidates == std::vector<std::string>{"c"});
  CHECK(ExclusionOf(d, "a").filter == Filter::kCordoned);
  CHECK(ExclusionOf(d, "a").message == "declared lost by an operator");
  CHECK(ExclusionOf(d, "b").message == "declared lost by an operator");
  CHECK_FALSE(ExclusionOf(d, "a").permanent);  // lifted by an operator: the job waits, not Unschedulable
}

TEST_CASE("a cluster whose file is refused is left out for now, never permanently, whatever its empty fields say",
          "[placement][unschedulable]") {
  auto fleet = ThreeClusters(0);
  // The inventory holds b with only its name: no region, no accelerators.
  fleet[1].config_refused = true;
  fleet[1].region.clear();
  fleet[1].accelerators.clear();
  fleet[1].health = ClusterHealth::kUnknown;
  JobDemand job = Workers(1, 1, 1, 1);
  job.constraints.regions = {"r2"};
  job.constraints.clusters = {"b"};  // only b could run it
  const Decision d = Place(job, fleet);
  CHECK(d.candidates.empty());
  CHECK(ExclusionOf(d, "b").filter == Filter::kHealth);
  CHECK(ExclusionOf(d, "b").message ==
        "its cluster file is refused, or held (gantry clusters says why); nothing is known of it until a reload "
        "loads it");
  CHECK_FALSE(ExclusionOf(d, "b").permanent);
  CHECK_FALSE(d.unschedulable);  // it waits for the file, not Unschedulable for a region it may well have
  // The allowlist names clusters: that one still holds, the cluster's name being known.
  job.constraints.clusters = {"a"};
  CHECK(ExclusionOf(Place(job, fleet), "b").filter == Filter::kAllowlist);
}

TEST_CASE("a static failure is reported before a transient one", "[placement]") {
  auto fleet = ThreeClusters(0);
  fleet[0].cordoned = true;
  fleet[0].health = ClusterHealth::kNotReady;
  JobDemand job = Workers(1, 1, 1, 1);
  job.constraints.regions = {"r2"};
  const Decision d = Place(job, fleet);
  CHECK(ExclusionOf(d, "a").filter == Filter::kRegion);
  CHECK(ExclusionOf(d, "a").message == "region r1 not in [r2]");
}

TEST_CASE("an empty snapshot is unknown, not unschedulable", "[placement]") {
  const Decision d = Place(Workers(1, 1, 1, 1), {});
  CHECK(d.candidates.empty());
  CHECK(d.feasible.empty());
  CHECK(d.excluded.empty());
  CHECK_FALSE(d.unschedulable);
}

TEST_CASE("exclusion messages carry the numbers", "[placement][messages]") {
  const auto fleet = TableFleet();
  auto message = [&](const JobDemand& job, const std::string& cluster) {
    return ExclusionOf(Place(job, fleet), cluster).message;
  };
  JobDemand small = Workers(1, 1, 4, 16);
  CHECK(message(small, "us-cpu") == "needs 1 nvidia.com/gpu; cluster has no accelerators");
  CHECK(message(Workers(1, 0, 4, 3000), "ap-a100") ==
        "pod set 'workers' needs 3000Gi memory per pod; nodes have 1Ti");
  CHECK(message(Workers(150, 0, 16, 512), "ap-a100") ==
        "needs 75Ti memory; the cluster's ClusterQueues hold 64Ti in all");
  JobDemand fpga = Workers(1, 0, 1, 0);
  fpga.pod_sets[0].requests_milli["example.com/fpga"] = 500;
  CHECK(message(fpga, "us-cpu") ==
        "needs 500m example.com/fpga; no ClusterQueue has quota for example.com/fpga");
  JobDemand priced = small;
  priced.constraints.max_price_per_gpu_hour = 2.5;
  CHECK(message(priced, "eu-h100") == "price 4.00 per GPU hour above ceiling 2.50");
  JobDemand acc = small;
  acc.constraints.accelerator = AcceleratorRequirement{"H100", 80, Interconnect::kNvlink};
  CHECK(message(acc, "eu-l4") ==
        "no accelerator matches H100 >= 80 GiB nvlink; cluster has [L4 24 GiB pcie]");
  JobDemand zoned = small;
  zoned.constraints.compliance_zones = {"hipaa"};
  CHECK(message(zoned, "eu-a100") == "compliance zones [gdpr] not in [hipaa]");
  JobDemand labelled = small;
  labelled.constraints.cluster_match_labels = {{"tier", "dev"}};
  CHECK(message(labelled, "eu-a100") == "label tier=dev required; cluster has tier=prod");
  JobDemand data = small;
  data.constraints.datasets = {"c4", "laion", "imagenet"};
  CHECK(message(data, "eu-h100") == "missing datasets [laion, imagenet]");
  JobDemand allow = small;
  allow.constraints.clusters = {"x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8"};
  CHECK(message(allow, "eu-a100") ==
        "cluster eu-a100 not in allowlist [x1, x2, x3, x4, x5, x6, ... (+2 more)]");
}

TEST_CASE("shuffled snapshots give identical decisions", "[placement][determinism]") {
  auto fleet = TableFleet();
  // Identical twins stress the name tie-break.
  fleet.push_back(fleet[0]);
  fleet.back().name = "ap-a100-twin";
  const std::vector<JobDemand> jobs = {Workers(1, 1, 4, 16), Workers(4, 0, 8, 32),
                                       Workers(8, 8, 64, 512), Workers(75, 8, 32, 256)};
  std::mt19937 rng(7);
  for (const JobDemand& job : jobs) {
    const std::string expected = DecisionToJson(Place(job, fleet)).dump();
    for (int i = 0; i < 20; ++i) {
      auto shuffled = fleet;
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      CHECK(DecisionToJson(Place(job, shuffled)).dump() == expected);
    }
  }
}

TEST_CASE("huge gangs saturate instead of overflowing", "[placement]") {
  JobDemand job = Workers(std::numeric_limits<int32_t>::max(), 0, 1, 1024 * 1024);
  const Decision d = Place(job, TableFleet());
  CHECK(d.candidates.empty());
  CHECK(ExclusionOf(d, "ap-a100").filter == Filter::kNodeFit);
  job = Workers(std::numeric_limits<int32_t>::max(), 0, 1, 512);
  CHECK(ExclusionOf(Place(job, TableFleet()), "ap-a100").filter == Filter::kQuota);
}

TEST_CASE("insane statistics and prices never poison the order", "[placement]") {
  auto fleet = ThreeClusters(0);
  fleet[0].admission = AdmissionStats{-5, std::nan("")};
  fleet[1].price_per_gpu_hour = std::numeric_limits<double>::infinity();
  fleet[2].price_per_gpu_hour = -1;
  const Decision d = Place(Workers(1, 1, 1, 1), fleet);
  REQUIRE(d.candidates.size() == 3);
  for (const RankedCluster& v : d.feasible) CHECK(std::isfinite(v.score.total));
  JobDemand ceiling = Workers(1, 1, 1, 1);
  ceiling.constraints.max_price_per_gpu_hour = 10;
  const Decision c = Place(ceiling, fleet);
  CHECK(c.candidates == std::vector<std::string>{"a"});
  CHECK(ExclusionOf(c, "b").message == "price per GPU hour unknown; ceiling 10.00");
}

TEST_CASE("options: max copies and custom GPU resource", "[placement][options]") {
  const auto fleet = ThreeClusters(0);
  PlacementOptions options;
  options.max_copies = 2;
  CHECK(Place(Workers(1, 1, 1, 1), fleet, options).candidates.size() == 2);
  options.max_copies = 0;
  const Decision none = Place(Workers(1, 1, 1, 1), fleet, options);
  CHECK(none.candidates.empty());
  CHECK(none.feasible.size() == 3);
  CHECK_FALSE(none.unschedulable);

  PlacementOptions amd;
  amd.gpu_resource = "amd.com/gpu";
  JobDemand job = Workers(1, 0, 1, 1);
  job.pod_sets[0].requests_milli["amd.com/gpu"] = Units(16);
  auto cpu_fleet = TableFleet();
  const Decision d = Place(job, cpu_fleet, amd);
  CHECK(ExclusionOf(d, "us-cpu").filter == Filter::kAccelerator);
  CHECK(ExclusionOf(d, "ap-a100").message ==
        "pod set 'workers' needs 16 amd.com/gpu per pod; nodes have 8");
}

TEST_CASE("score terms follow the documented shapes", "[placement][score]") {
  auto fleet = ThreeClusters(0);
  fleet[0].capacity.pending_workloads = 10;           // queue term 0.5
  fleet[1].admission = AdmissionStats{30'000, 0.25};  // latency 0.5, failures 0.75
  fleet[2].datasets = {"imagenet"};
  fleet[2].price_per_gpu_hour = 2.0;
  JobDemand job = Workers(2, 8, 8, 64);  // 16 of 64 GPUs: 0.75 free after
  job.preferred_datasets = {"imagenet", "c4"};
  const Decision d = Place(job, fleet);
  const Score& a = ScoreOf(d, "a");
  const Score& b = ScoreOf(d, "b");
  const Score& c = ScoreOf(d, "c");
  CHECK(a.value(Term::kQueueDepth) == Approx(0.5));
  CHECK(a.value(Term::kAdmissionLatency) == Approx(0.5));  // unknown: midpoint
  CHECK(b.value(Term::kAdmissionLatency) == Approx(0.5));
  CHECK(b.value(Term::kAdmissionFailures) == Approx(0.75));
  CHECK(c.value(Term::kDataLocality) == Approx(0.5));
  CHECK(a.value(Term::kDataLocality) == 0);
  CHECK(c.value(Term::kPrice) == 1);
  CHECK(a.value(Term::kPrice) == 0);
  CHECK(a.value(Term::kFreeQuota) == Approx(0.75));
  double sum = 0;
  for (int t = 0; t < kTermCount; ++t) sum += d.Points(c, static_cast<Term>(t));
  CHECK(c.total == Approx(sum));
  CHECK(d.candidates.front() == "c");
}

}  // namespace
}  // namespace gantry::placement
