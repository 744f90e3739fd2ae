// placement_bench: the cost of one Place() call over 1,000 and 10,000 clusters
// (a realistic mix: several regions and accelerator models, some CPU-only,
// cordoned, unhealthy or stale clusters), and the memory one ClusterSnapshot
// takes. Build RelWithDebInfo (-O2) before reading the numbers.
//
//   placement_bench [runs [clusters...]]   (default: 301 runs over 1,000 and 10,000)
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gantry/placement/place.h"

namespace {

using gantry::placement::Accelerator;
using gantry::placement::AcceleratorRequirement;
using gantry::placement::ClusterHealth;
using gantry::placement::ClusterSnapshot;
using gantry::placement::Decision;
using gantry::placement::Interconnect;
using gantry::placement::JobDemand;
using gantry::placement::NodeShape;
using gantry::placement::PodSetDemand;
using gantry::placement::ResourceQuota;

constexpr int64_t kGiMilli = (int64_t{1} << 30) * 1000;
constexpr int kDefaultRuns = 301;
constexpr uint32_t kSeed = 42;

const std::vector<std::string> kRegions = {"us-east-1", "us-west-2",      "eu-central-1",
                                           "eu-west-1", "ap-northeast-1", "ap-south-1"};

ClusterSnapshot MakeCluster(std::mt19937& rng, int index) {
  auto pick = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  ClusterSnapshot c;
  c.name = "gpu-" + kRegions[index % kRegions.size()] + "-" + std::to_string(index);
  c.region = kRegions[index % kRegions.size()];
  c.zone = c.region + "a";
  c.provider = pick(2) ? "aws" : "gcp";
  c.compliance_zones = {c.region.starts_with("eu") ? "gdpr" : "none"};
  c.labels = {{"tier", pick(4) ? "prod" : "dev"}, {"team", "ml-" + std::to_string(pick(8))}};
  const int kind = pick(10);  // 0: CPU-only, 1-3: A100, 4-7: H100, 8-9: L4
  const int64_t gpus_per_node = kind == 0 ? 0 : kind >= 8 ? 4 : 8;
  if (kind != 0) {
    c.accelerators = {Accelerator{kind < 4   ? "A100"
                                  : kind < 8 ? "H100"
                                             : "L4",
                                  kind >= 8 ? 24 : 80, static_cast<int32_t>(gpus_per_node),
                                  kind >= 8 ? Interconnect::kPcie : Interconnect::kNvlink, true}};
    c.price_per_gpu_hour = 0.8 + pick(300) / 100.0;
  }
  c.node = NodeShape{96'000, 1024 * kGiMilli, static_cast<int32_t>(gpus_per_node), 64};
  c.datasets = {"c4", pick(2) ? "imagenet" : "laion"};
  c.cordoned = pick(50) == 0;
  c.health = pick(20) == 0 ? ClusterHealth::kNotReady : ClusterHealth::kReady;
  const int64_t gpus = gpus_per_node * (8 + pick(56));
  c.capacity.quota = {{"cpu", {4'000'000, pick(4'000'000)}},
                      {"memory", {64 * 1024 * kGiMilli, pick(64) * 1024 * kGiMilli}}};
  if (gpus > 0) c.capacity.quota["nvidia.com/gpu"] = ResourceQuota{gpus * 1000, pick(gpus) * 1000};
  c.capacity.pending_workloads = pick(20);
  c.capacity.age_ms = pick(60'000);
  c.capacity.stale = pick(30) == 0;
  if (pick(2)) c.admission = gantry::placement::AdmissionStats{pick(60'000), pick(10) / 100.0};
  return c;
}

std::vector<ClusterSnapshot> MakeFleet(int n) {
  std::mt19937 rng(kSeed);
  std::vector<ClusterSnapshot> fleet;
  fleet.reserve(n);
  for (int i = 0; i < n; ++i) fleet.push_back(MakeCluster(rng, i));
  std::sort(fleet.begin(), fleet.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return fleet;
}

// A typical training gang: launcher + 4 workers x 8 H100-class GPUs, GDPR-free,
// needing the c4 dataset and a price ceiling.
JobDemand TypicalJob() {
  JobDemand job;
  job.pod_sets = {
      PodSetDemand{"launcher", 1, {{"cpu", 4'000}, {"memory", 16 * kGiMilli}}},
      PodSetDemand{
          "workers", 4, {{"cpu", 64'000}, {"memory", 512 * kGiMilli}, {"nvidia.com/gpu", 8'000}}}};
  job.constraints.accelerator = AcceleratorRequirement{"", 80, Interconnect::kNvlink};
  job.constraints.datasets = {"c4"};
  job.constraints.max_price_per_gpu_hour = 3.5;
  job.preferred_datasets = {"imagenet"};
  return job;
}

struct Timing {
  double median_us = 0;      // wall clock
  double min_us = 0;         // wall clock; closest to an unloaded machine
  double median_cpu_us = 0;  // this thread's CPU time: robust when cores are shared
};

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

Timing Measure(const JobDemand& job, const std::vector<ClusterSnapshot>& fleet, int runs,
               size_t* feasible) {
  std::vector<double> micros;
  std::vector<double> cpu;
  micros.reserve(runs);
  cpu.reserve(runs);
  for (int i = 0; i < runs; ++i) {
    const double cpu_start = ThreadCpuMicros();
    const auto start = std::chrono::steady_clock::now();
    {
      const Decision d = gantry::placement::Place(job, fleet);  // destroyed inside the timing
      *feasible = d.feasible.size();
    }
    const auto end = std::chrono::steady_clock::now();
    cpu.push_back(ThreadCpuMicros() - cpu_start);
    micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  std::sort(micros.begin(), micros.end());
  std::sort(cpu.begin(), cpu.end());
  return Timing{micros[runs / 2], micros.front(), cpu[runs / 2]};
}

// Resident set size in bytes, from /proc/self/statm (second field, in pages).
long ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;
  long resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : kDefaultRuns;
  // Memory first, on a fresh heap: measured later, the allocator would hand
  // back pages freed by earlier fleets and the RSS delta would read near zero.
  const long before = ResidentBytes();
  const auto big = MakeFleet(10'000);
  const long after = ResidentBytes();
  std::printf("snapshot memory: %.0f bytes per cluster (RSS delta over %zu; sizeof %zu)\n",
              static_cast<double>(after - before) / static_cast<double>(big.size()), big.size(),
              sizeof(ClusterSnapshot));
  const JobDemand job = TypicalJob();
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::max(1, std::atoi(argv[i])));
  if (sizes.empty()) sizes = {1'000, 10'000};
  for (int n : sizes) {
    const auto fleet = n == 10'000 ? big : MakeFleet(n);
    size_t feasible = 0;
    const Timing t = Measure(job, fleet, runs, &feasible);
    std::printf(
        "place over %6d clusters: median %8.1f us (cpu %8.1f us), min %8.1f us per "
        "decision (%zu feasible, %d runs)\n",
        n, t.median_us, t.median_cpu_us, t.min_us, feasible, runs);
  }
  return 0;
}
