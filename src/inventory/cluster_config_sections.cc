#include "cluster_config_sections.h"

#include <fmt/format.h>

#include "gantry/common/names.h"
#include "node_quantity.h"

namespace gantry::inventory::internal {
namespace {

// Assigns the value of a typed read to *out, or returns its error.
template <typename T, typename U>
Status Assign(Result<T> result, U* out) {
  if (!result.ok()) return result.status();
  *out = static_cast<U>(std::move(result).value());
  return Status::Ok();
}

Result<AcceleratorConfig> ReadAccelerator(const YAML::Node& node, const Field& field) {
  AcceleratorConfig a;
  FieldHandlers handlers = {
      {"model",
       [&](const YAML::Node& n, const Field& f) { return Assign(ReadString(n, f), &a.model); }},
      {"memoryGiB",
       [&](const YAML::Node& n, const Field& f) {
         return Assign(ReadInt(n, f, 1, kMaxAcceleratorMemoryGiB), &a.memory_gib);
       }},
      {"gpusPerNode",
       [&](const YAML::Node& n, const Field& f) {
         return Assign(ReadInt(n, f, 1, kMaxGpusPerNode), &a.gpus_per_node);
       }},
      {"interconnect",
       [&](const YAML::Node& n, const Field& f) -> Status {
         Result<std::string> s = ReadString(n, f);
         if (!s.ok()) return s.status();
         if (*s == "nvlink") {
           a.interconnect = AcceleratorInterconnect::kNvlink;
         } else if (*s == "pcie") {
           a.interconnect = AcceleratorInterconnect::kPcie;
         } else {
           return FieldError(f, "must be nvlink or pcie");
         }
         return Status::Ok();
       }},
      {"rdma",
       [&](const YAML::Node& n, const Field& f) { return Assign(ReadBool(n, f), &a.rdma); }},
  };
  GANTRY_RETURN_IF_ERROR(ReadFields(node, field, handlers, {"model", "memoryGiB", "gpusPerNode"}));
  return a;
}

Status AssignQuantity(const YAML::Node& node, const Field& field, int64_t* out) {
  if (!node.IsScalar()) return FieldError(field, "must be a quantity like 96, 500m or 512Gi");
  Result<int64_t> milli = ParseNodeQuantityMilli(node.Scalar());
  if (!milli.ok()) return FieldError(field, milli.status().message());
  *out = *milli;
  return Status::Ok();
}

}  // namespace

Result<std::vector<AcceleratorConfig>> ReadAccelerators(const YAML::Node& node,
                                                        const Field& field) {
  std::vector<AcceleratorConfig> out;
  if (node.IsNull()) return out;
  if (!node.IsSequence()) return FieldError(field, "must be a list of accelerator pools");
  size_t index = 0;
  for (const YAML::Node& item : node) {
    Result<AcceleratorConfig> a = ReadAccelerator(item, field.Item(index++, LineOf(item)));
    if (!a.ok()) return a.status();
    out.push_back(std::move(a).value());
  }
  return out;
}

Result<NodeShapeConfig> ReadNodeShape(const YAML::Node& node, const Field& field) {
  NodeShapeConfig shape;
  FieldHandlers handlers = {
      {"cpu",
       [&](const YAML::Node& n, const Field& f) { return AssignQuantity(n, f, &shape.cpu_milli); }},
      {"memory", [&](const YAML::Node& n,
                     const Field& f) { return AssignQuantity(n, f, &shape.memory_milli); }},
      {"count",
       [&](const YAML::Node& n, const Field& f) {
         return Assign(ReadInt(n, f, 0, kMaxNodeCount), &shape.count);
       }},
  };
  GANTRY_RETURN_IF_ERROR(ReadFields(node, field, handlers, {"cpu", "memory"}));
  return shape;
}

Result<GpuPrice> ReadGpuPrice(const YAML::Node& node, const Field& field) {
  GpuPrice price;
  if (node.IsScalar()) {  // a bare number is the on-demand price
    Result<double> on_demand = ReadNumber(node, field, 0);
    if (!on_demand.ok()) return on_demand.status();
    price.on_demand = *on_demand;
    return price;
  }
  FieldHandlers handlers = {
      {"onDemand", [&](const YAML::Node& n,
                       const Field& f) { return Assign(ReadNumber(n, f, 0), &price.on_demand); }},
      {"spot", [&](const YAML::Node& n,
                   const Field& f) { return Assign(ReadNumber(n, f, 0), &price.spot); }},
  };
  GANTRY_RETURN_IF_ERROR(ReadFields(node, field, handlers));
  if (!price.on_demand && !price.spot) return FieldError(field, "needs onDemand or spot");
  return price;
}

Result<std::map<std::string, std::string>> ReadLabels(const YAML::Node& node, const Field& field) {
  return ReadStringMap(node, field, [](const std::string& key, const std::string& value) {
    if (std::string e = CheckLabelKey(key); !e.empty()) return "label key " + e;
    if (std::string e = CheckLabelValue(value); !e.empty()) return "label value " + e;
    return std::string();
  }, /*empty_values=*/true);  // a label's value may be empty, as in Kubernetes
}

Result<std::map<std::string, std::string>> ReadLocalQueues(const YAML::Node& node,
                                                           const Field& field) {
  return ReadStringMap(node, field, [](const std::string& ns, const std::string& queue) {
    if (std::string e = CheckDns1123Label(ns); !e.empty()) return "namespace " + e;
    // A subdomain, as LocalQueue names are. One longer than the 63 of the
    // worker job's queue-name label is not refused here (the whole file, the
    // cluster and the jobs it runs would drop out of the inventory at the
    // next start): placement leaves the cluster out for that namespace's
    // jobs, saying why.
    if (std::string e = CheckDns1123Subdomain(queue); !e.empty()) return "LocalQueue name " + e;
    return std::string();
  });
}

}  // namespace gantry::inventory::internal
