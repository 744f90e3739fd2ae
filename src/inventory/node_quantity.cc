#include "node_quantity.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace gantry::inventory::internal {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Longest suffixes first so "Mi" is not read as "M" followed by garbage.
constexpr Suffix kSuffixes[] = {
    {"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50},
    {"Ei", 0x1p60}, {"m", 1e-3},    {"k", 1e3},     {"M", 1e6},     {"G", 1e9},
    {"T", 1e12},    {"P", 1e15},    {"E", 1e18},
};

}  // namespace

Result<int64_t> ParseNodeQuantityMilli(std::string_view text) {
  const auto bad = [&] {
    return Status::Invalid(fmt::format("'{}' is not a quantity like 96, 500m or 512Gi", text));
  };
  std::string_view number = text;
  double factor = 1;
  for (const Suffix& s : kSuffixes) {
    if (number.ends_with(s.text)) {
      number.remove_suffix(s.text.size());
      factor = s.factor;
      break;
    }
  }
  if (number.empty()) return bad();
  double mantissa = 0;
  double scale = 0;  // 0 while in the integer part, then 0.1, 0.01, ...
  bool digits = false;
  for (char c : number) {
    if (c == '.' && scale == 0) {
      scale = 0.1;
    } else if (c >= '0' && c <= '9') {
      digits = true;
      if (scale == 0) {
        mantissa = mantissa * 10 + (c - '0');
      } else {
        mantissa += (c - '0') * scale;
        scale /= 10;
      }
    } else {
      return bad();
    }
  }
  if (!digits) return bad();
  const double milli = std::round(mantissa * factor * 1000);
  if (milli <= 0) return Status::Invalid(fmt::format("'{}' must be greater than zero", text));
  if (milli >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return Status::Invalid(fmt::format("'{}' is too large", text));
  }
  return static_cast<int64_t>(milli);
}

}  // namespace gantry::inventory::internal
