// Kubernetes resource quantities ("500m", "4Gi", "1.5", "2e3") as integers in
// milli-units, the unit Kueue's accounting works in.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"

namespace gantry {

// Parses a quantity (string or JSON number) into milli-units. Rejects
// negative values, garbage, and values that overflow int64 milli-units.
Result<int64_t> ParseQuantityMilli(std::string_view text);
Result<int64_t> ParseQuantityMilli(const nlohmann::json& value);
// Text overloads: a std::string or string literal converts to both
// string_view and json, so without these such calls would be ambiguous.
inline Result<int64_t> ParseQuantityMilli(const std::string& text) {
  return ParseQuantityMilli(std::string_view(text));
}
inline Result<int64_t> ParseQuantityMilli(const char* text) {
  return ParseQuantityMilli(std::string_view(text));
}

// The amount of a quantity (string or JSON number) in milli-units when it
// is a whole number of them ("1", "1000m", "1Gi", 0.5); nullopt for one
// that would be rounded ("100u", "0.0001"), and for anything that is not a
// quantity or is too large.
std::optional<int64_t> ExactQuantityMilli(const nlohmann::json& value);

// The largest amount: what ParseQuantityMilliSaturating reads a larger one as.
inline constexpr int64_t kMaxQuantityMilli = std::numeric_limits<int64_t>::max();

// As ParseQuantityMilli, but a value beyond int64 milli-units reads as
// kMaxQuantityMilli: for a capacity read from a cluster, where a huge
// quota ("1000Pi" of memory, bytes x 1000) stands for "unlimited" and is
// valid to Kubernetes. Garbage and negative values are still errors.
Result<int64_t> ParseQuantityMilliSaturating(const nlohmann::json& value);

// Canonical text of a milli-unit amount: "250m", "4", and for values that are
// exact multiples of 2^30 / 2^20 bytes with memory-like use, callers format
// themselves. Integers print without suffix; fractions as "NNNm".
std::string FormatQuantityMilli(int64_t milli);

// Rewrites each quantity of a PodTemplateSpec (the containers' and init
// containers' resources.requests and .limits, spec.overhead) that is a JSON
// number but not an integer as a string of the same value: 0.5 -> "500m",
// 0.0001 -> "0.0001". In a Workload's pod sets those fields are
// int-or-string, and the API server refuses 0.5; a Job takes either.
// Integers, strings and anything malformed are left as they are.
void QuantityNumbersToStrings(nlohmann::json& pod_template);

}  // namespace gantry
