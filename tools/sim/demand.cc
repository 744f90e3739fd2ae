#include "demand.h"

#include <fmt/format.h>

#include <algorithm>

#include "object_store.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

Result<ResourceList> ContainerRequests(const json& c) {
  const json* res = c.contains("resources") ? &c["resources"] : nullptr;
  if (!res || !res->is_object()) return ResourceList{};
  static const json kNone;
  auto limits = ParseResourceList(MemberOr(*res, "limits", kNone));
  if (!limits.ok()) return limits.status();
  auto requests = ParseResourceList(MemberOr(*res, "requests", kNone));
  if (!requests.ok()) return requests.status();
  ResourceList out = *limits;
  for (const auto& [k, v] : *requests) out[k] = v;
  return out;
}

}  // namespace

Result<ResourceList> PodRequests(const json& pod_spec) {
  ResourceList sum;
  if (pod_spec.contains("containers") && pod_spec["containers"].is_array()) {
    for (const json& c : pod_spec["containers"]) {
      auto r = ContainerRequests(c);
      if (!r.ok()) return r.status();
      AddTo(&sum, *r);
    }
  }
  // As Kubernetes' PodRequests: a sidecar (an init container with
  // restartPolicy Always) runs beside the containers and every later init
  // container; the pod needs the most of those moments.
  ResourceList sidecars;
  ResourceList init_max;
  if (pod_spec.contains("initContainers") && pod_spec["initContainers"].is_array()) {
    for (const json& c : pod_spec["initContainers"]) {
      auto r = ContainerRequests(c);
      if (!r.ok()) return r.status();
      if (c.is_object() && c.value("restartPolicy", "") == "Always") {
        AddTo(&sum, *r);
        AddTo(&sidecars, *r);
        for (const auto& [k, v] : sidecars) init_max[k] = std::max(init_max[k], v);
      } else {
        ResourceList during = *r;
        AddTo(&during, sidecars);
        for (const auto& [k, v] : during) init_max[k] = std::max(init_max[k], v);
      }
    }
  }
  for (const auto& [k, v] : init_max) sum[k] = std::max(sum[k], v);
  return sum;
}

Result<WorkloadDemand> ComputeDemand(const json& workload, const NodeShape& shape) {
  WorkloadDemand out;
  const json& spec = MemberOr(workload, "spec", EmptyObject());
  const json& sets = MemberOr(spec, "podSets", EmptyArray());
  if (!sets.is_array()) return Status::Invalid("spec.podSets must be a list");
  for (const json& ps : sets) {
    PodSetDemand d;
    d.name = ps.value("name", "main");
    d.count = ps.value("count", int64_t{1});
    const json& pod_spec = MemberOr(MemberOr(ps, "template", EmptyObject()), "spec", EmptyObject());
    auto req = PodRequests(pod_spec);
    if (!req.ok()) return Status::Invalid(fmt::format("pod set {}: {}", d.name, req.status().message()));
    d.per_pod = std::move(*req);
    std::erase_if(d.per_pod, [&](const auto& entry) {
      return std::any_of(shape.exclude_resource_prefixes.begin(), shape.exclude_resource_prefixes.end(),
                         [&](const std::string& prefix) { return entry.first.starts_with(prefix); });
    });
    d.total = Scale(d.per_pod, d.count);
    AddTo(&out.total, d.total);
    if (out.never_fits.empty()) {
      int64_t gpus = d.per_pod.count(kGpuResource) ? d.per_pod.at(kGpuResource) / 1000 : 0;
      const json& sel = MemberOr(pod_spec, "nodeSelector", EmptyObject());
      std::string want;
      for (const char* key : {kGpuProductLabel, kGantryModelLabel}) {
        if (sel.is_object() && sel.contains(key) && sel[key].is_string()) want = sel[key].get<std::string>();
      }
      if (gpus > 0 && shape.gpus_per_node == 0) {
        out.never_fits = fmt::format("pod set {}: the cluster has no {} nodes", d.name, kGpuResource);
      } else if (gpus > shape.gpus_per_node) {
        out.never_fits = fmt::format("pod set {}: a pod needs {} GPUs but a node has {}", d.name, gpus,
                                     shape.gpus_per_node);
      } else if (!want.empty() && want != shape.gpu_model) {
        out.never_fits = fmt::format("pod set {}: GPU model {} not available (cluster has {})", d.name, want,
                                     shape.gpu_model.empty() ? "none" : shape.gpu_model);
      }
    }
    out.pod_sets.push_back(std::move(d));
  }
  return out;
}

}  // namespace gantry::sim
