#include "spec_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "gantry/common/cut_text.h"
#include "gantry/common/names.h"

namespace gantry::job_internal {
namespace {

void ReadAccelerator(const json& accel, std::string_view path, AcceleratorConstraint& out,
                     FieldErrors& errors) {
  CheckKnownFields(accel, path, {"model", "minMemoryGiB", "interconnect"}, errors);
  if (auto model = ReadString(accel, "model", path, errors)) out.model = *model;
  out.min_memory_gib =
      ReadInt(accel, "minMemoryGiB", path, kMinGpuMemoryGiB, kMaxGpuMemoryGiB, errors);
  if (auto ic = ReadString(accel, "interconnect", path, errors)) {
    if (*ic != "nvlink" && *ic != "pcie") {
      errors.Add(Child(path, "interconnect"), UnsupportedValue(*ic, {"nvlink", "pcie"}));
    } else {
      out.interconnect = *ic;
    }
  }
}

void ReadPlacement(const json& placement, std::string_view path, PlacementConstraints& out,
                   FieldErrors& errors) {
  CheckKnownFields(placement, path,
                   {"clusters", "regions", "complianceZones", "clusterSelector", "accelerator",
                    "datasets", "maxPricePerGPUHour"},
                   errors);
  out.clusters = ReadStringList(placement, "clusters", path, errors);
  out.regions = ReadStringList(placement, "regions", path, errors);
  out.compliance_zones = ReadStringList(placement, "complianceZones", path, errors);
  out.datasets = ReadStringList(placement, "datasets", path, errors);
  if (const json* sel = ReadObject(placement, "clusterSelector", path, errors)) {
    std::string sel_path = Child(path, "clusterSelector");
    CheckKnownFields(*sel, sel_path, {"matchLabels"}, errors);
    out.cluster_match_labels = ReadLabels(*sel, "matchLabels", sel_path, errors);
  }
  if (const json* accel = ReadObject(placement, "accelerator", path, errors)) {
    ReadAccelerator(*accel, Child(path, "accelerator"), out.accelerator.emplace(), errors);
  }
  if (auto price = ReadNumber(placement, "maxPricePerGPUHour", path, errors)) {
    if (!std::isfinite(*price) || *price <= 0) {
      errors.Add(Child(path, "maxPricePerGPUHour"), "must be a positive number");
    } else {
      out.max_price_per_gpu_hour = *price;
    }
  }
}

void ReadDispatch(const json& dispatch, std::string_view path, DispatchOptions& out,
                  FieldErrors& errors) {
  CheckKnownFields(dispatch, path, {"mode", "stepSize", "roundSeconds", "timeoutSeconds"}, errors);
  if (auto mode = ReadString(dispatch, "mode", path, errors)) {
    if (auto m = DispatchModeFromName(*mode)) {
      out.mode = *m;
    } else {
      errors.Add(Child(path, "mode"), UnsupportedValue(*mode, {"AllAtOnce", "Incremental"}));
    }
  }
  if (auto n = ReadInt(dispatch, "stepSize", path, kMinStepSize, kMaxStepSize, errors)) {
    out.step_size = static_cast<int32_t>(*n);
  }
  if (auto n =
          ReadInt(dispatch, "roundSeconds", path, kMinRoundSeconds, kMaxRoundSeconds, errors)) {
    out.round_seconds = static_cast<int32_t>(*n);
  }
  if (auto n = ReadInt(dispatch, "timeoutSeconds", path, kMinTimeoutSeconds, kMaxTimeoutSeconds,
                       errors)) {
    out.timeout_seconds = static_cast<int32_t>(*n);
  }
}

}  // namespace

std::optional<DispatchMode> DispatchModeFromName(std::string_view name) {
  if (name == "AllAtOnce") return DispatchMode::kAllAtOnce;
  if (name == "Incremental") return DispatchMode::kIncremental;
  return std::nullopt;
}

std::optional<OnClusterLoss> OnClusterLossFromName(std::string_view name) {
  if (name == "Requeue") return OnClusterLoss::kRequeue;
  if (name == "Fail") return OnClusterLoss::kFail;
  if (name == "Wait") return OnClusterLoss::kWait;
  return std::nullopt;
}

std::string UnsupportedValue(std::string_view value,
                             std::initializer_list<std::string_view> supported) {
  std::string out = fmt::format("Unsupported value: \"{}\": supported values: ", value);
  bool first = true;
  for (std::string_view s : supported) {
    out += fmt::format("{}\"{}\"", first ? "" : ", ", s);
    first = false;
  }
  return out;
}

void CheckJobName(const std::optional<std::string>& name, std::string_view path,
                  FieldErrors& errors) {
  if (!name) {
    errors.Add(std::string(path), "Required value");
  } else if (std::string e = CheckDns1123Label(*name, kMaxJobNameLength); !e.empty()) {
    errors.Add(std::string(path), fmt::format("Invalid value: \"{}\": {}", *name, e));
  }
}

std::string ResolveNamespace(const std::optional<std::string>& doc_namespace,
                             std::optional<std::string_view> path_namespace, std::string_view path,
                             FieldErrors& errors) {
  if (!doc_namespace) return path_namespace ? std::string(*path_namespace) : "default";
  if (std::string e = CheckDns1123Label(*doc_namespace); !e.empty()) {
    errors.Add(std::string(path), fmt::format("Invalid value: \"{}\": {}", *doc_namespace, e));
  } else if (path_namespace && *path_namespace != *doc_namespace) {
    errors.Add(
        std::string(path),
        fmt::format("Invalid value: \"{}\": does not match the namespace in the URL (\"{}\")",
                    *doc_namespace, *path_namespace));
  }
  return *doc_namespace;
}

std::map<std::string, std::string> ReadLabels(const json& obj, std::string_view key,
                                              std::string_view path, FieldErrors& errors) {
  std::map<std::string, std::string> labels = ReadStringMap(obj, key, path, errors);
  for (const auto& [k, v] : labels) {
    if (std::string e = CheckLabelKey(k); !e.empty()) {
      errors.Add(Key(Child(path, key), k), fmt::format("Invalid label key: {}", e));
    } else if (std::string ve = CheckLabelValue(v); !ve.empty()) {
      errors.Add(Key(Child(path, key), k), fmt::format("Invalid value: \"{}\": {}", v, ve));
    }
  }
  return labels;
}

void CheckQueue(const std::optional<std::string>& queue, std::string_view path,
                FieldErrors& errors) {
  if (!queue) {
    errors.Add(std::string(path), "Required value: the worker LocalQueue to submit to");
  } else if (std::string e = CheckQueueName(*queue); !e.empty()) {
    errors.Add(std::string(path), fmt::format("Invalid value: \"{}\": {}", *queue, e));
  }
}

void CheckSpecFieldNames(const json& spec_obj, std::string_view path, FieldErrors& errors) {
  CheckKnownFields(spec_obj, path,
                   {"queue", "priority", "placement", "dispatch", "onClusterLoss", "finishedRetentionSeconds",
                    "template", "podSets"},
                   errors);
}

void ReadSpecFields(const json& spec_obj, std::string_view path, JobSpec& spec,
                    FieldErrors& errors) {
  std::optional<std::string> queue = ReadString(spec_obj, "queue", path, errors);
  if (queue || Member(spec_obj, "queue") == nullptr)
    CheckQueue(queue, Child(path, "queue"), errors);
  if (queue) spec.queue = *queue;
  if (auto p = ReadInt(spec_obj, "priority", path, std::numeric_limits<int32_t>::min(),
                       std::numeric_limits<int32_t>::max(), errors)) {
    spec.priority = static_cast<int32_t>(*p);
  }
  if (const json* placement = ReadObject(spec_obj, "placement", path, errors)) {
    ReadPlacement(*placement, Child(path, "placement"), spec.placement, errors);
  }
  if (const json* dispatch = ReadObject(spec_obj, "dispatch", path, errors)) {
    ReadDispatch(*dispatch, Child(path, "dispatch"), spec.dispatch, errors);
  }
  if (auto policy = ReadString(spec_obj, "onClusterLoss", path, errors)) {
    if (auto p = OnClusterLossFromName(*policy)) {
      spec.on_cluster_loss = *p;
    } else {
      errors.Add(Child(path, "onClusterLoss"),
                 UnsupportedValue(*policy, {"Requeue", "Fail", "Wait"}));
    }
  }
  if (auto n = ReadInt(spec_obj, "finishedRetentionSeconds", path, 0, kMaxFinishedRetentionSeconds, errors)) {
    spec.finished_retention_seconds = static_cast<int32_t>(*n);
  }
}

void CheckPlacementText(const PlacementConstraints& placement, std::string_view path, FieldErrors& errors) {
  const std::string base(path);
  auto list = [&](const char* key, const std::vector<std::string>& values) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (HasControlText(values[i])) errors.Add(Index(Child(base, key), i), kNoControlText);
    }
  };
  list("clusters", placement.clusters);
  list("regions", placement.regions);
  list("complianceZones", placement.compliance_zones);
  list("datasets", placement.datasets);
  if (placement.accelerator && HasControlText(placement.accelerator->model)) {
    errors.Add(Child(Child(base, "accelerator"), "model"), kNoControlText);
  }
}

}  // namespace gantry::job_internal
