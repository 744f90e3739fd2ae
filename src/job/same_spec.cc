// SameJobSpec: two canonical spec texts that mean the same job, though the
// pod templates spell a quantity differently ("1" and "1000m").
#include <string>

#include "gantry/job/job_document.h"
#include "gantry/job/quantity.h"

namespace gantry {
namespace {

using nlohmann::json;

bool IsQuantityMap(std::string_view key) { return key == "requests" || key == "limits" || key == "overhead"; }

// Every value of a "requests", "limits" or "overhead" object below node that
// reads as a quantity, written as FormatQuantityMilli writes it. Anything
// else (a value that is no quantity, one too large) is left as it is: the
// two sides then compare as they were written.
void CanonicalQuantities(json& node) {
  if (node.is_array()) {
    for (json& item : node) CanonicalQuantities(item);
    return;
  }
  if (!node.is_object()) return;
  for (auto& [key, value] : node.items()) {
    if (IsQuantityMap(key) && value.is_object()) {
      for (auto& [resource, quantity] : value.items()) {
        if (!quantity.is_string() && !quantity.is_number()) continue;
        if (Result<int64_t> milli = ParseQuantityMilli(quantity); milli.ok()) {
          quantity = FormatQuantityMilli(*milli);
        }
      }
      continue;
    }
    CanonicalQuantities(value);
  }
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
