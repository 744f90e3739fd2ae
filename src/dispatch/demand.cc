#include "gantry/dispatch/demand.h"

#include <variant>

#include "gantry/common/json_text.h"
#include "gantry/job/kueue_labels.h"

namespace gantry {

JobRecord RecordOfSpec(const JobSpec& spec, std::string uid, int64_t now_ms) {
  JobRecord record;
  record.uid = std::move(uid);
  record.ns = spec.ns;
  record.name = spec.name;
  record.queue = spec.queue;
  record.priority = spec.priority;
  record.spec_json = SpecToJsonText(spec);
  record.labels_json.clear();  // its default is "{}"
  AppendJsonObject(record.labels_json, spec.labels);
  record.created_ms = record.updated_ms = now_ms;
  return record;
}

Result<JobSpec> SpecOfRecord(const JobRecord& job) {
  nlohmann::json spec_json = nlohmann::json::parse(job.spec_json, nullptr, false);
  nlohmann::json labels = nlohmann::json::parse(job.labels_json, nullptr, false);
  std::map<std::string, std::string> label_map;
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      if (v.is_string()) label_map[k] = v.get<std::string>();
    }
  }
  auto spec = SpecFromJson(spec_json, job.name, job.ns, label_map);
  if (auto* err = std::get_if<DocumentError>(&spec)) return Status::Corruption(err->message);
  return std::move(std::get<JobSpec>(spec));
}

placement::JobDemand DemandFromSpec(const JobSpec& spec) {
  placement::JobDemand demand;
  // As the Workload copy has them: metadata.namespace, and spec.queueName
  // mapped per cluster (LocalQueueFor, placement::LocalQueueIn).
  demand.ns = spec.ns;
  demand.queue = spec.queue;
  demand.priority_class = WorkloadPriorityClass(spec.template_object);
  for (const PodSet& ps : spec.pod_sets) {
    demand.pod_sets.push_back({ps.name, ps.count, ps.requests_milli});
  }
  const PlacementConstraints& in = spec.placement;
  placement::PlacementConstraints& out = demand.constraints;
  out.clusters = in.clusters;
  out.regions = in.regions;
  out.compliance_zones = in.compliance_zones;
  out.cluster_match_labels = in.cluster_match_labels;
  out.datasets = in.datasets;
  out.max_price_per_gpu_hour = in.max_price_per_gpu_hour;
  if (in.accelerator) {
    placement::AcceleratorRequirement acc;
    acc.model = in.accelerator->model;
    acc.min_memory_gib = in.accelerator->min_memory_gib;
    if (in.accelerator->interconnect == "nvlink") acc.interconnect = placement::Interconnect::kNvlink;
    if (in.accelerator->interconnect == "pcie") acc.interconnect = placement::Interconnect::kPcie;
    out.accelerator = acc;
  }
  demand.dispatch.mode = spec.dispatch.mode == DispatchMode::kIncremental ? placement::DispatchMode::kIncremental
                                                                          : placement::DispatchMode::kAllAtOnce;
  demand.dispatch.step_size = spec.dispatch.step_size;
  demand.dispatch.round_seconds = spec.dispatch.round_seconds;
  return demand;
}

}  // namespace gantry
