// The canonical JSON of a JobSpec and its inverse.
//
// Layout (every key always present unless marked optional):
//   {queue, priority,
//    placement: {clusters, regions, complianceZones, datasets: [..],
//                clusterSelector: {matchLabels: {..}},
//                accelerator (optional): {model?, minMemoryGiB?, interconnect?},
//                maxPricePerGPUHour (optional)},
//    dispatch: {mode, stepSize, roundSeconds, timeoutSeconds (optional)},
//    onClusterLoss, finishedRetentionSeconds (optional), template,
//    podSets: [{name, count, requests: {resource: "canonical quantity"}, template}]}
// Keys are written in byte order, as nlohmann's ordered maps dump them, so
// SpecToJson(spec).dump() == SpecToJsonText(spec).
#include <fmt/format.h>

#include "gantry/job/job_document.h"
#include "gantry/common/json_text.h"
#include "gantry/job/quantity.h"
#include "json_fields.h"
#include "spec_fields.h"

namespace gantry {
namespace {

using job_internal::Child;
using job_internal::FieldErrors;
using job_internal::Index;
using nlohmann::json;

json PlacementToJson(const PlacementConstraints& p) {
  json out = {{"clusters", p.clusters},
              {"regions", p.regions},
              {"complianceZones", p.compliance_zones},
              {"datasets", p.datasets},
              {"clusterSelector", {{"matchLabels", p.cluster_match_labels}}}};
  if (p.accelerator) {
    json accel = json::object();
    if (!p.accelerator->model.empty()) accel["model"] = p.accelerator->model;
    if (p.accelerator->min_memory_gib) accel["minMemoryGiB"] = *p.accelerator->min_memory_gib;
    if (!p.accelerator->interconnect.empty()) accel["interconnect"] = p.accelerator->interconnect;
    out["accelerator"] = std::move(accel);
  }
  if (p.max_price_per_gpu_hour) out["maxPricePerGPUHour"] = *p.max_price_per_gpu_hour;
  return out;
}

json PodSetToJson(const PodSet& set) {
  json requests = json::object();
  for (const auto& [name, milli] : set.requests_milli) requests[name] = FormatQuantityMilli(milli);
  return {{"name", set.name},
          {"count", set.count},
          {"requests", std::move(requests)},
          {"template", set.pod_template}};
}

// A stored pod set; the template was checked when the job was submitted.
std::optional<PodSet> PodSetFromJson(const json& entry, const std::string& path,
                                     FieldErrors& errors) {
  if (!entry.is_object()) {
    errors.Add(path, "must be an object");
    return std::nullopt;
  }
  PodSet set;
  std::optional<std::string> name = job_internal::ReadString(entry, "name", path, errors);
  std::optional<int64_t> count =
      job_internal::ReadInt(entry, "count", path, 0, std::numeric_limits<int32_t>::max(), errors);
  const json* requests = job_internal::ReadObject(entry, "requests", path, errors);
  const json* pod_template = job_internal::ReadObject(entry, "template", path, errors);
  if (!name || !count || requests == nullptr || pod_template == nullptr) {
    errors.Add(path, "name, count, requests and template are required");
    return std::nullopt;
  }
  set.name = *name;
  set.count = static_cast<int32_t>(*count);
  set.pod_template = *pod_template;
  for (const auto& [resource, quantity] : requests->items()) {
    Result<int64_t> milli = ParseQuantityMilli(quantity);
    if (!milli.ok()) {
      errors.Add(Child(Child(path, "requests"), resource), milli.status().message());
      continue;
    }
    set.requests_milli[resource] = *milli;
  }
  return set;
}

}  // namespace

std::string_view DispatchModeName(DispatchMode mode) {
  switch (mode) {
    case DispatchMode::kAllAtOnce:
      return "AllAtOnce";
    case DispatchMode::kIncremental:
      return "Incremental";
  }
  return "AllAtOnce";
}

std::string_view OnClusterLossName(OnClusterLoss policy) {
  switch (policy) {
    case OnClusterLoss::kRequeue:
      return "Requeue";
    case OnClusterLoss::kFail:
      return "Fail";
    case OnClusterLoss::kWait:
      return "Wait";
  }
  return "Requeue";
}

nlohmann::json PodSetsToJson(const std::vector<PodSet>& pod_sets) {
  json out = json::array();
  for (const PodSet& set : pod_sets) out.push_back(PodSetToJson(set));
  return out;
}

nlohmann::json SpecToJson(const JobSpec& spec) {
  json dispatch = {{"mode", DispatchModeName(spec.dispatch.mode)},
                   {"stepSize", spec.dispatch.step_size},
                   {"roundSeconds", spec.dispatch.round_seconds}};
  if (spec.dispatch.timeout_seconds) dispatch["timeoutSeconds"] = *spec.dispatch.timeout_seconds;
  json out = {{"queue", spec.queue},
              {"priority", spec.priority},
              {"placement", PlacementToJson(spec.placement)},
              {"dispatch", std::move(dispatch)},
              {"onClusterLoss", OnClusterLossName(spec.on_cluster_loss)},
              {"template", spec.template_object},
              {"podSets", PodSetsToJson(spec.pod_sets)}};
  // Only when set: a spec stored before the field existed keeps its text.
  if (spec.finished_retention_seconds) out["finishedRetentionSeconds"] = *spec.finished_retention_seconds;
  return out;
}

namespace {

void AppendStrings(std::string& out, const std::vector<std::string>& items) {
  out.push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(out, items[i]);
  }
  out.push_back(']');
}

// Keys in the order of nlohmann's sorted objects (byte order).
void AppendPlacement(std::string& out, const PlacementConstraints& p) {
  out.push_back('{');
  if (p.accelerator) {
    const AcceleratorConstraint& a = *p.accelerator;
    out += "\"accelerator\":{";
    bool first = true;
    auto sep = [&] {
      if (!first) out.push_back(',');
      first = false;
    };
    if (!a.interconnect.empty()) {
      sep();
      out += "\"interconnect\":";
      AppendJsonString(out, a.interconnect);
    }
    if (a.min_memory_gib) {
      sep();
      out += "\"minMemoryGiB\":";
      AppendJson(out, *a.min_memory_gib);
    }
    if (!a.model.empty()) {
      sep();
      out += "\"model\":";
      AppendJsonString(out, a.model);
    }
    out += "},";
  }
  out += "\"clusterSelector\":{\"matchLabels\":";
  AppendJsonObject(out, p.cluster_match_labels);
  out += "},\"clusters\":";
  AppendStrings(out, p.clusters);
  out += ",\"complianceZones\":";
  AppendStrings(out, p.compliance_zones);
  out += ",\"datasets\":";
  AppendStrings(out, p.datasets);
  if (p.max_price_per_gpu_hour) {
    out += ",\"maxPricePerGPUHour\":";
    AppendJson(out, *p.max_price_per_gpu_hour);
  }
  out += ",\"regions\":";
  AppendStrings(out, p.regions);
  out.push_back('}');
}

void AppendDispatch(std::string& out, const DispatchOptions& d) {
  out += "{\"mode\":";
  AppendJsonString(out, DispatchModeName(d.mode));
  out += ",\"roundSeconds\":";
  AppendJson(out, d.round_seconds);
  out += ",\"stepSize\":";
  AppendJson(out, d.step_size);
  if (d.timeout_seconds) {
    out += ",\"timeoutSeconds\":";
    AppendJson(out, *d.timeout_seconds);
  }
  out.push_back('}');
}

void AppendPodSet(std::string& out, const PodSet& set) {
  out += "{\"count\":";
  AppendJson(out, set.count);
  out += ",\"name\":";
  AppendJsonString(out, set.name);
  out += ",\"requests\":{";
  bool first = true;
  for (const auto& [name, milli] : set.requests_milli) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, name);
    out.push_back(':');
    AppendJsonString(out, FormatQuantityMilli(milli));
  }
  out += "},\"template\":";
  AppendJson(out, set.pod_template);
  out.push_back('}');
}

}  // namespace

std::string SpecToJsonText(const JobSpec& spec) {
  std::string out;
  out.reserve(2048);
  out += "{\"dispatch\":";
  AppendDispatch(out, spec.dispatch);
  if (spec.finished_retention_seconds) {
    out += ",\"finishedRetentionSeconds\":";
    AppendJson(out, *spec.finished_retention_seconds);
  }
  out += ",\"onClusterLoss\":";
  AppendJsonString(out, OnClusterLossName(spec.on_cluster_loss));
  out += ",\"placement\":";
  AppendPlacement(out, spec.placement);
  out += ",\"podSets\":[";
  for (size_t i = 0; i < spec.pod_sets.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendPodSet(out, spec.pod_sets[i]);
  }
  out += "],\"priority\":";
  AppendJson(out, spec.priority);
  out += ",\"queue\":";
  AppendJsonString(out, spec.queue);
  out += ",\"template\":";
  AppendJson(out, spec.template_object);
  out.push_back('}');
  return out;
}

std::variant<JobSpec, DocumentError> SpecFromJson(
    const nlohmann::json& spec_json, const std::string& name, const std::string& ns,
    const std::map<std::string, std::string>& labels) {
  if (!spec_json.is_object()) return DocumentError{422, "stored job spec is not an object", {}};
  JobSpec spec;
  spec.name = name;
  spec.ns = ns;
  spec.labels = labels;
  FieldErrors errors;
  job_internal::CheckSpecFieldNames(spec_json, "spec", errors);
  job_internal::ReadSpecFields(spec_json, "spec", spec, errors);
  if (const json* t = job_internal::RequireObject(spec_json, "template", "spec", errors)) {
    spec.template_object = *t;
  }
  if (const json* sets = job_internal::ReadArray(spec_json, "podSets", "spec", errors)) {
    for (std::size_t i = 0; i < sets->size(); ++i) {
      if (auto set = PodSetFromJson((*sets)[i], Index("spec.podSets", i), errors)) {
        spec.pod_sets.push_back(*std::move(set));
      }
    }
  }
  if (!errors.empty()) {
    const FieldError& first = errors.causes().front();
    return DocumentError{
        422, fmt::format("stored job spec is invalid: {}: {}", first.field, first.message),
        errors.causes()};
  }
  return spec;
}

}  // namespace gantry
