// ResourceList: amounts per resource name ("cpu", "memory", "nvidia.com/gpu")
// in milli-units, the unit Kueue's quota accounting works in, plus the small
// arithmetic the simulated Kueue needs.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"

namespace gantry::sim {

using ResourceList = std::map<std::string, int64_t>;

inline constexpr const char* kGpuResource = "nvidia.com/gpu";

// a += b, a -= b (never below zero: releasing twice is a bug upstream, not a
// reason to report negative usage).
void AddTo(ResourceList* a, const ResourceList& b);
void SubtractFrom(ResourceList* a, const ResourceList& b);
// Scaled by an integer count (pod count of a pod set).
ResourceList Scale(const ResourceList& r, int64_t count);

// {"cpu": "4", "memory": "16Gi"} -> milli-units. Invalid quantities are errors.
Result<ResourceList> ParseResourceList(const nlohmann::json& j);
// Canonical text: memory-like multiples of Gi/Mi get the suffix; else
// integers or "NNNm".
std::string FormatQuantity(const std::string& resource, int64_t milli);
nlohmann::json ToJson(const ResourceList& r);

}  // namespace gantry::sim
