// Builders for placement tests: a fixed fleet of twelve clusters and terse
// job constructors. Quantities are given in whole units and converted here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gantry/placement/cluster_snapshot.h"
#include "gantry/placement/job_demand.h"

namespace gantry::placement::testing {

inline constexpr int64_t kGi = int64_t{1} << 30;
inline constexpr char kGpu[] = "nvidia.com/gpu";

// Milli-units of n whole units, and of n GiB of memory.
constexpr int64_t Units(int64_t n) { return n * 1000; }
constexpr int64_t GiB(int64_t n) { return n * kGi * 1000; }

// A Ready GPU cluster: one accelerator pool, nodes of 96 cpu / 1 TiB, quota
// gpus (reserved `reserved_gpus`), 4000 cpu and 64 TiB memory.
ClusterSnapshot GpuCluster(std::string name, std::string region, std::string model,
                           int64_t memory_gib, int32_t gpus_per_node, Interconnect interconnect,
                           double price, int64_t quota_gpus, int64_t reserved_gpus = 0);

// The twelve clusters of the table test, sorted by name:
//   0 ap-a100      ap-northeast-1  A100 80 nvlink x8  $2.8  gpu 64/0
//   1 eu-a100      eu-central-1    A100 80 nvlink x8  $2.5  gpu 64/16  gdpr  pending 2, stats
//   2 eu-cordoned  eu-central-1    A100 80 nvlink x8  $2.0  gpu 64/0   gdpr  cordoned
//   3 eu-h100      eu-central-1    H100 80 nvlink x8  $4.0  gpu 128/120 gdpr pending 10
//   4 eu-l4        eu-west-1       L4 24 pcie x4      $0.8  gpu 32/0   gdpr  tier=dev, small nodes
//   5 eu-stale     eu-central-1    A100 80 nvlink x8  $2.2  gpu 64/0   gdpr  capacity stale
//   6 us-a100-40   us-east-1       A100 40 pcie x4    $1.8  gpu 64/0         64 cpu / 512Gi nodes
//   7 us-cpu       us-east-1       no accelerators          cpu 2000, 8Ti; 64 cpu / 256Gi nodes
//   8 us-h100      us-east-1       H100 80 nvlink x8  $3.5  gpu 256/64 hipaa pending 4
//   9 us-lost      us-west-2       H100 80 nvlink x8  $3.0  gpu 256/0  hipaa Lost
//  10 us-notready  us-east-1       A100 80 nvlink x8  $2.6  gpu 64/0         NotReady
//  11 us-west-h100 us-west-2       H100 80 nvlink x8  $3.0  gpu 512/0  hipaa pending 1, slow stats
// All carry tier=prod except eu-l4. Datasets: see fixtures.cc.
std::vector<ClusterSnapshot> TableFleet();

// A job with one pod set "workers" of `count` pods, each asking `gpus` GPUs,
// `cpu` cores and `memory_gib` GiB (zero requests are left out).
JobDemand Workers(int32_t count, int64_t gpus, int64_t cpu, int64_t memory_gib);

}  // namespace gantry::placement::testing
