#include "quota.h"

#include <fmt/format.h>

#include "gantry/job/quantity.h"

namespace gantry::sim {

void AddTo(ResourceList* a, const ResourceList& b) {
  for (const auto& [name, v] : b) (*a)[name] += v;
}

void SubtractFrom(ResourceList* a, const ResourceList& b) {
  for (const auto& [name, v] : b) {
    int64_t& cur = (*a)[name];
    cur = cur > v ? cur - v : 0;
  }
}

ResourceList Scale(const ResourceList& r, int64_t count) {
  ResourceList out;
  for (const auto& [name, v] : r) out[name] = v * count;
  return out;
}

Result<ResourceList> ParseResourceList(const nlohmann::json& j) {
  ResourceList out;
  if (j.is_null()) return out;
  if (!j.is_object()) return Status::Invalid("resources must be a mapping of name to quantity");
  for (const auto& [name, value] : j.items()) {
    auto q = ParseQuantityMilli(value);
    if (!q.ok()) return Status::Invalid(fmt::format("{}: {}", name, q.status().message()));
    out[name] = *q;
  }
  return out;
}

std::string FormatQuantity(const std::string& resource, int64_t milli) {
  constexpr int64_t kGi = int64_t{1} << 30;
  constexpr int64_t kMi = int64_t{1} << 20;
  if (milli % 1000 != 0) return fmt::format("{}m", milli);
  int64_t n = milli / 1000;
  bool bytes = resource == "memory" || resource.find("storage") != std::string::npos;
  if (bytes && n != 0 && n % kGi == 0) return fmt::format("{}Gi", n / kGi);
  if (bytes && n != 0 && n % kMi == 0) return fmt::format("{}Mi", n / kMi);
  return std::to_string(n);
}

nlohmann::json ToJson(const ResourceList& r) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, v] : r) out[name] = FormatQuantity(name, v);
  return out;
}

}  // namespace gantry::sim
