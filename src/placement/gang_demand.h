// GangDemand: a JobDemand reduced once per Place() call to what the per-cluster
// filters and scores need, so the per-cluster work does no summing.
//
// Sums saturate at INT64_MAX instead of overflowing: memory in bytes x 1000
// times a large pod count exceeds int64, and a saturated demand still fails
// every quota check, which is the right answer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gantry/placement/job_demand.h"
#include "gantry/placement/placement_options.h"

namespace gantry::placement {

struct ResourceTotal {
  std::string resource;
  int64_t milli = 0;  // > 0
};

// The largest per-pod request of one resource, and the pod set that asks it.
struct PodMax {
  int64_t milli = 0;
  std::string_view pod_set;  // points into the JobDemand
};

struct GangDemand {
  // sum over pod sets of count x per-pod request; only resources with a
  // positive total, sorted by resource name.
  std::vector<ResourceTotal> totals;
  int64_t gpu_total_milli = 0;
  PodMax max_gpu;
  PodMax max_cpu;
  PodMax max_memory;
  // The job's accelerator requirement in words ("H100 >= 80 GiB nvlink"),
  // rendered once because every excluded cluster's message repeats it.
  std::string accelerator_text;
  bool needs_gpu() const { return gpu_total_milli > 0; }
};

// The JobDemand must outlive the result (PodMax::pod_set views into it).
GangDemand SummarizeDemand(const JobDemand& job, const PlacementOptions& options);

int64_t SaturatingAdd(int64_t a, int64_t b);  // REQUIRES: a, b >= 0
int64_t SaturatingMul(int64_t a, int64_t b);  // REQUIRES: a, b >= 0

}  // namespace gantry::placement
