#include "gang_demand.h"

#include <fmt/format.h>

#include <limits>
#include <map>

namespace gantry::placement {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

void TrackMax(PodMax& max, int64_t milli, std::string_view pod_set) {
  if (milli > max.milli) max = PodMax{milli, pod_set};
}

std::string DescribeRequirement(const AcceleratorRequirement& req) {
  std::string out = req.model.empty() ? "any model" : req.model;
  if (req.min_memory_gib) out += fmt::format(" >= {} GiB", *req.min_memory_gib);
  if (req.interconnect != Interconnect::kAny) {
    out += ' ';
    out += InterconnectName(req.interconnect);
  }
  return out;
}

}  // namespace

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? kMax : out;
}

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? kMax : out;
}

GangDemand SummarizeDemand(const JobDemand& job, const PlacementOptions& options) {
  GangDemand out;
  std::map<std::string_view, int64_t> totals;
  for (const PodSetDemand& set : job.pod_sets) {
    if (set.count <= 0) continue;  // an empty pod set asks for nothing
    for (const auto& [resource, per_pod] : set.requests_milli) {
      if (per_pod <= 0) continue;
      int64_t& total = totals[resource];
      total = SaturatingAdd(total, SaturatingMul(per_pod, set.count));
      if (resource == options.gpu_resource) {
        TrackMax(out.max_gpu, per_pod, set.name);
      } else if (resource == "cpu") {
        TrackMax(out.max_cpu, per_pod, set.name);
      } else if (resource == "memory") {
        TrackMax(out.max_memory, per_pod, set.name);
      }
    }
  }
  if (job.constraints.accelerator) {
    out.accelerator_text = DescribeRequirement(*job.constraints.accelerator);
  }
  out.totals.reserve(totals.size());
  for (const auto& [resource, milli] : totals) {
    out.totals.push_back(ResourceTotal{std::string(resource), milli});
    if (resource == options.gpu_resource) out.gpu_total_milli = milli;
  }
  return out;
}

}  // namespace gantry::placement
