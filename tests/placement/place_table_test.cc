// Table-driven: ~30 jobs over the twelve-cluster fleet of fixtures.h, each with
// the expected candidates (in order) and the expected filter for every cluster.
// Expected orders were worked out by hand from the scoring rules in
// src/placement/scoring.h and the default weights.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gantry/placement/place.h"

namespace gantry::placement {
namespace {

using namespace gantry::placement::testing;  // NOLINT: test-local builders

// One character per cluster, in TableFleet() order:
//   ap-a100 eu-a100 eu-cordoned eu-h100 eu-l4 eu-stale us-a100-40 us-cpu us-h100 us-lost
//   us-notready us-west-h100
// '.' feasible; otherwise the first failing filter:
char FilterCode(const Exclusion& x) {
  switch (x.filter) {
    case Filter::kAllowlist:
      return 'A';
    case Filter::kRegion:
      return 'R';
    case Filter::kComplianceZone:
      return 'Z';
    case Filter::kClusterLabels:
      return 'L';
    case Filter::kAccelerator:
      return 'X';
    case Filter::kDatasets:
      return 'D';
    case Filter::kPrice:
      return 'P';
    case Filter::kNodeFit:
      return 'N';
    case Filter::kQuota:
      return 'Q';
    case Filter::kCordoned:
      return 'C';
    case Filter::kHealth:
      return 'H';
    case Filter::kPriorityClass:
      return 'W';
  }
  return '?';
}

struct Row {
  std::string name;
  JobDemand job;
  std::vector<std::string> candidates;
  std::string filters;  // 12 codes, see FilterCode
  bool unschedulable = false;
};

JobDemand WithRegions(JobDemand job, std::vector<std::string> regions) {
  job.constraints.regions = std::move(regions);
  return job;
}
JobDemand WithZones(JobDemand job, std::vector<std::string> zones) {
  job.constraints.compliance_zones = std::move(zones);
  return job;
}
JobDemand WithLabels(JobDemand job, std::map<std::string, std::string> labels) {
  job.constraints.cluster_match_labels = std::move(labels);
  return job;
}
JobDemand WithAccelerator(JobDemand job, AcceleratorRequirement req) {
  job.constraints.accelerator = std::move(req);
  return job;
}
JobDemand WithDatasets(JobDemand job, std::vector<std::string> datasets) {
  job.constraints.datasets = std::move(datasets);
  return job;
}
JobDemand WithMaxPrice(JobDemand job, double price) {
  job.constraints.max_price_per_gpu_hour = price;
  return job;
}
JobDemand WithAllowlist(JobDemand job, std::vector<std::string> clusters) {
  job.constraints.clusters = std::move(clusters);
  return job;
}
JobDemand Incremental(JobDemand job, int32_t step, int32_t rounds) {
  job.dispatch.mode = DispatchMode::kIncremental;
  job.dispatch.step_size = step;
  job.rounds_elapsed = rounds;
  return job;
}
JobDemand WithPreferred(JobDemand job, std::vector<std::string> datasets) {
  job.preferred_datasets = std::move(datasets);
  return job;
}
JobDemand WithExtra(JobDemand job, const std::string& resource, int64_t milli) {
  job.pod_sets[0].requests_milli[resource] = milli;
  return job;
}
JobDemand LauncherAndWorkers() {
  JobDemand job = Workers(7, 8, 32, 256);
  job.pod_sets.insert(job.pod_sets.begin(),
                      PodSetDemand{"launcher", 1, {{"cpu", Units(4)}, {"memory", GiB(8)}}});
  return job;
}

std::vector<Row> Rows() {
  const JobDemand small = Workers(1, 1, 4, 16);
  const JobDemand gang64 = Workers(8, 8, 64, 512);
  const std::vector<std::string> small_order = {"eu-l4",   "us-a100-40", "ap-a100", "us-west-h100",
                                                "eu-a100", "us-h100",    "eu-h100", "eu-stale"};
  return {
      {"small GPU job anywhere", small, small_order, "..C....X.HH."},
      {"CPU job: capped at 8 copies, tie broken by name",
       Workers(4, 0, 8, 32),
       {"eu-a100", "ap-a100", "us-a100-40", "us-cpu", "us-west-h100", "eu-l4", "us-h100",
        "eu-h100"},
       "..C......HH."},
      {"64-GPU gang: fits now first, then within nominal",
       gang64,
       {"us-west-h100", "us-h100", "ap-a100", "eu-a100", "eu-stale", "eu-h100"},
       "..C.N.NX.HH."},
      {"128-GPU gang",
       Workers(16, 8, 64, 512),
       {"us-west-h100", "us-h100", "eu-h100"},
       "QQQ.NQNX.HQ."},
      {"600-GPU gang: no cluster, but stale quota is not proof",
       Workers(75, 8, 32, 256),
       {},
       "QQQQNQNXQQQQ"},
      {"region eu-central-1",
       WithRegions(small, {"eu-central-1"}),
       {"eu-a100", "eu-h100", "eu-stale"},
       "R.C.R.RRRRRR"},
      {"compliance zone gdpr",
       WithZones(small, {"gdpr"}),
       {"eu-l4", "eu-a100", "eu-h100", "eu-stale"},
       "Z.C...ZZZZZZ"},
      {"compliance zones hipaa or gdpr",
       WithZones(small, {"hipaa", "gdpr"}),
       {"eu-l4", "us-west-h100", "eu-a100", "us-h100", "eu-h100", "eu-stale"},
       "Z.C...ZZ.HZ."},
      {"label tier=dev", WithLabels(small, {{"tier", "dev"}}), {"eu-l4"}, "LLLL.LLLLLLL"},
      {"label nobody has", WithLabels(small, {{"team", "ml"}}), {}, "LLLLLLLLLLLL", true},
      {"accelerator H100",
       WithAccelerator(small, {"H100", {}, Interconnect::kAny}),
       {"us-west-h100", "us-h100", "eu-h100"},
       "XXX.XXXX.HX."},
      {"accelerator >= 80 GiB nvlink",
       WithAccelerator(small, {"", 80, Interconnect::kNvlink}),
       {"ap-a100", "eu-a100", "us-west-h100", "us-h100", "eu-h100", "eu-stale"},
       "..C.X.XX.HH."},
      {"accelerator pcie",
       WithAccelerator(small, {"", {}, Interconnect::kPcie}),
       {"eu-l4", "us-a100-40"},
       "XXXX.X.XXXXX"},
      {"datasets imagenet and c4",
       WithDatasets(small, {"imagenet", "c4"}),
       {"eu-a100", "us-h100", "eu-stale"},
       "D.CDD.DX.DDD"},
      {"price ceiling 2.5",
       WithMaxPrice(small, 2.5),
       {"eu-l4", "us-a100-40", "eu-a100", "eu-stale"},
       "P.CP...XPPPP"},
      {"CPU job ignores the GPU price ceiling",
       WithMaxPrice(Workers(1, 0, 4, 16), 1.0),
       {"eu-a100", "ap-a100", "us-a100-40", "us-cpu", "eu-l4", "us-west-h100", "us-h100",
        "eu-h100"},
       "..C......HH."},
      {"allowlist",
       WithAllowlist(small, {"eu-h100", "us-lost", "eu-cordoned", "us-cpu"}),
       {"eu-h100"},
       "AAC.AAAXAHAA"},
      {"pod larger than any node (cpu)", Workers(1, 1, 128, 16), {}, "NNNNNNNXNNNN", true},
      {"pod larger than small nodes (memory)",
       Workers(1, 0, 8, 300),
       {"eu-a100", "ap-a100", "us-a100-40", "us-west-h100", "us-h100", "eu-h100", "eu-stale"},
       "..C.N..N.HH."},
      {"incremental round 0", Incremental(small, 2, 0), {"eu-l4", "us-a100-40"}, "..C....X.HH."},
      {"incremental round 1",
       Incremental(small, 2, 1),
       {"eu-l4", "us-a100-40", "ap-a100", "us-west-h100"},
       "..C....X.HH."},
      {"incremental capped by max copies", Incremental(small, 3, 5), small_order, "..C....X.HH."},
      {"incremental with nonsense step and rounds",
       Incremental(small, 0, -3),
       {"eu-l4"},
       "..C....X.HH."},
      {"preferred datasets add locality",
       WithPreferred(WithAccelerator(small, {"A100", 80, Interconnect::kAny}), {"imagenet"}),
       {"eu-a100", "ap-a100", "eu-stale"},
       "..CXX.XXXXHX"},
      {"memory quota of the whole gang", Workers(150, 0, 16, 512), {}, "QQQQNQQNQQQQ"},
      {"launcher plus workers",
       LauncherAndWorkers(),
       {"us-west-h100", "us-h100", "ap-a100", "eu-a100", "eu-stale", "eu-h100"},
       "..C.N.NX.HH."},
      {"4 GPUs per pod fits 4-GPU nodes exactly",
       WithRegions(Workers(2, 4, 16, 64), {"us-east-1"}),
       {"us-a100-40", "us-h100"},
       "RRRRRR.X.RHR"},
      {"resource nobody has quota for",
       WithExtra(Workers(1, 0, 1, 1), "example.com/fpga", 1000),
       {},
       "QQQQQQQQQQQQ"},
      {"region us-west-2 H100 16 GPUs",
       WithAccelerator(WithRegions(Workers(2, 8, 32, 128), {"us-west-2"}), {"H100", {}, {}}),
       {"us-west-h100"},
       "RRRRRRRRRHR."},
      {"64-GPU gang in eu: within nominal but not free",
       WithRegions(gang64, {"eu-central-1"}),
       {"eu-a100", "eu-stale", "eu-h100"},
       "R.C.R.RRRRRR"},
  };
}

TEST_CASE("placement table over a twelve-cluster fleet", "[placement][table]") {
  const std::vector<ClusterSnapshot> fleet = TableFleet();
  const std::vector<Row> rows = Rows();
  REQUIRE(rows.size() == 30);
  for (const Row& row : rows) {
    INFO(row.name);
    REQUIRE(row.filters.size() == fleet.size());
    const Decision d = Place(row.job, fleet);
    CHECK(d.candidates == row.candidates);
    CHECK(d.unschedulable == row.unschedulable);
    REQUIRE(d.feasible.size() + d.excluded.size() == fleet.size());
    std::map<std::string, char> codes;
    for (const RankedCluster& v : d.feasible) codes[v.cluster] = '.';
    for (const ExcludedCluster& v : d.excluded) codes[v.cluster] = FilterCode(v.exclusion);
    std::string got;
    for (const ClusterSnapshot& c : fleet) got += codes[c.name];
    CHECK(got == row.filters);
  }
}

}  // namespace
}  // namespace gantry::placement
