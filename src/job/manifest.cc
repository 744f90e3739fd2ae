// Plain Kubernetes manifests (batch/v1 Job, jobset.x-k8s.io/v1alpha2 JobSet).
//
// Queue: label kueue.x-k8s.io/queue-name (required).
// Supported annotations (values are strings; lists are comma-separated,
// spaces around items ignored):
//   gantry.dev/priority                int32              -> spec.priority
//   gantry.dev/clusters                list               -> placement.clusters
//   gantry.dev/regions                 list               -> placement.regions
//   gantry.dev/compliance-zones        list               -> placement.complianceZones
//   gantry.dev/datasets                list               -> placement.datasets
//   gantry.dev/accelerator-model       string             -> placement.accelerator.model
//   gantry.dev/max-price-per-gpu-hour  positive number    -> placement.maxPricePerGPUHour
//   gantry.dev/on-cluster-loss         Requeue|Fail|Wait  -> onClusterLoss
//   gantry.dev/dispatch-mode           AllAtOnce|Incremental -> dispatch.mode
//   gantry.dev/finished-retention-seconds  0..604800      -> finishedRetentionSeconds
// Any other gantry.dev/* annotation is refused (a typo would silently do
// nothing). Errors are reported at metadata.annotations[<key>].
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "document_parsers.h"
#include "gantry/common/cut_text.h"
#include "kueue_label_checks.h"
#include "pod_sets.h"
#include "spec_fields.h"
#include "worker_names.h"

namespace gantry::job_internal {
namespace {

constexpr std::string_view kQueueLabel = "kueue.x-k8s.io/queue-name";
constexpr std::string_view kAnnotationPrefix = "gantry.dev/";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::vector<std::string> SplitList(std::string_view value, const std::string& path,
                                   FieldErrors& errors) {
  std::vector<std::string> out;
  while (true) {
    std::size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
    if (item.empty()) {
      errors.Add(path, "must be a comma-separated list of non-empty values");
      return {};
    }
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      errors.Add(path, fmt::format("Duplicate value: \"{}\"", item));
      return {};
    }
    out.emplace_back(item);
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

void ApplyAnnotation(std::string_view name, const std::string& value, const std::string& path,
                     JobSpec& spec, FieldErrors& errors) {
  PlacementConstraints& p = spec.placement;
  // Names of clusters, regions, datasets, models: told in logs and events.
  if (HasControlText(value)) {
    errors.Add(path, kNoControlText);
    return;
  }
  if (name == "priority") {
    int32_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size()) {
      errors.Add(path, fmt::format("Invalid value: \"{}\": must be a 32-bit integer", value));
    } else {
      spec.priority = n;
    }
  } else if (name == "clusters") {
    p.clusters = SplitList(value, path, errors);
  } else if (name == "regions") {
    p.regions = SplitList(value, path, errors);
  } else if (name == "compliance-zones") {
    p.compliance_zones = SplitList(value, path, errors);
  } else if (name == "datasets") {
    p.datasets = SplitList(value, path, errors);
  } else if (name == "accelerator-model") {
    if (value.empty()) errors.Add(path, "must not be empty");
    if (!p.accelerator) p.accelerator.emplace();
    p.accelerator->model = value;
  } else if (name == "max-price-per-gpu-hour") {
    double price = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), price);
    if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(price) ||
        price <= 0) {
      errors.Add(path, fmt::format("Invalid value: \"{}\": must be a positive number", value));
    } else {
      p.max_price_per_gpu_hour = price;
    }
  } else if (name == "on-cluster-loss") {
    if (auto v = OnClusterLossFromName(value)) {
      spec.on_cluster_loss = *v;
    } else {
      errors.Add(path, UnsupportedValue(value, {"Requeue", "Fail", "Wait"}));
    }
  } else if (name == "dispatch-mode") {
    if (auto v = DispatchModeFromName(value)) {
      spec.dispatch.mode = *v;
    } else {
      errors.Add(path, UnsupportedValue(value, {"AllAtOnce", "Incremental"}));
    }
  } else if (name == "finished-retention-seconds") {
    int32_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < 0 || n > kMaxFinishedRetentionSeconds) {
      errors.Add(path, fmt::format("Invalid value: \"{}\": must be an integer in 0..{} (seconds)", value,
                                   kMaxFinishedRetentionSeconds));
    } else {
      spec.finished_retention_seconds = n;
    }
  } else {
    errors.Add(path,
               "unknown gantry annotation; supported: priority, clusters, regions, "
               "compliance-zones, datasets, accelerator-model, max-price-per-gpu-hour, "
               "on-cluster-loss, dispatch-mode, finished-retention-seconds");
  }
}

}  // namespace

JobSpec ReadManifest(const json& doc, std::optional<std::string_view> path_namespace,
                     FieldErrors& errors) {
  JobSpec spec;
  CheckKnownFields(doc, "", {"apiVersion", "kind", "metadata", "spec", "status"}, errors);
  const json* meta = RequireObject(doc, "metadata", "", errors);
  static const json kEmpty = json::object();
  if (meta == nullptr) meta = &kEmpty;
  std::optional<std::string> name = ReadString(*meta, "name", "metadata", errors);
  if (name || Member(*meta, "name") == nullptr) CheckJobName(name, "metadata.name", errors);
  if (name) spec.name = *name;
  std::optional<std::string> ns = ReadString(*meta, "namespace", "metadata", errors);
  spec.ns = ResolveNamespace(ns, path_namespace, "metadata.namespace", errors);
  spec.labels = ReadLabels(*meta, "labels", "metadata", errors);
  auto queue = spec.labels.find(std::string(kQueueLabel));
  std::optional<std::string> queue_name;
  if (queue != spec.labels.end()) queue_name = queue->second;
  if (queue_name || Member(*meta, "labels") == nullptr || Member(*meta, "labels")->is_object()) {
    CheckQueue(queue_name, Key("metadata.labels", kQueueLabel), errors);
  }
  if (queue_name) spec.queue = *queue_name;
  for (const auto& [key, value] : ReadStringMap(*meta, "annotations", "metadata", errors)) {
    if (!key.starts_with(kAnnotationPrefix)) continue;
    ApplyAnnotation(std::string_view(key).substr(kAnnotationPrefix.size()), value,
                    Key("metadata.annotations", key), spec, errors);
  }
  CheckKueueLabels(doc, "", errors);
  spec.pod_sets = DerivePodSets(doc, "", nullptr, "", errors);
  CheckWorkerNames(doc, "", spec.name, "metadata.name", errors);
  return spec;
}

}  // namespace gantry::job_internal
