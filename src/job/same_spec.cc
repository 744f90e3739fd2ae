// SameJobSpec: two canonical spec texts that mean the same job, though the
// pod templates spell a quantity differently ("1" and "1000m").
#include <string>

#include "gantry/job/job_document.h"
#include "gantry/job/quantity.h"

namespace gantry {
namespace {

using nlohmann::json;

// Each value of a map of quantities that is a whole number of milli-units,
// written as FormatQuantityMilli writes it. Any other value (no quantity,
// one below milli precision, one too large) is left as written: the two
// sides then compare as they were written.
void CanonicalAmounts(json& amounts) {
  if (!amounts.is_object()) return;
  for (auto& [resource, quantity] : amounts.items()) {
    if (std::optional<int64_t> milli = ExactQuantityMilli(quantity)) quantity = FormatQuantityMilli(*milli);
  }
}

// The quantities of the pod specs below node, where Kubernetes has them: a
// container's (or init container's) resources.requests and .limits, and a
// pod spec's overhead. Other fields named so (a custom kind's own) are left.
void CanonicalQuantities(json& node) {
  if (node.is_array()) {
    for (json& item : node) CanonicalQuantities(item);
    return;
  }
  if (!node.is_object()) return;
  for (const char* list : {"containers", "initContainers"}) {
    auto it = node.find(list);
    if (it == node.end() || !it->is_array()) continue;
    for (json& container : *it) {
      if (!container.is_object()) continue;
      auto resources = container.find("resources");
      if (resources == container.end() || !resources->is_object()) continue;
      for (const char* map : {"requests", "limits"}) {
        if (auto amounts = resources->find(map); amounts != resources->end()) CanonicalAmounts(*amounts);
      }
    }
  }
  if (node.contains("containers")) {  // a pod spec
    if (auto overhead = node.find("overhead"); overhead != node.end()) CanonicalAmounts(*overhead);
  }
  for (auto& [key, value] : node.items()) CanonicalQuantities(value);
}

}  // namespace

bool SameJobSpec(std::string_view stored_spec_json, std::string_view spec_json) {
  if (stored_spec_json == spec_json) return true;
  json stored = json::parse(stored_spec_json, nullptr, false);
  json other = json::parse(spec_json, nullptr, false);
  if (stored.is_discarded() || other.is_discarded()) return false;
  CanonicalQuantities(stored);
  CanonicalQuantities(other);
  return stored == other;
}

}  // namespace gantry
