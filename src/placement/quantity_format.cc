#include "gantry/placement/quantity_format.h"

#include <fmt/format.h>

namespace gantry::placement {
namespace {

// Beyond this many names a list is elided: the numbers, not the full list,
// are what an operator needs from a one-line reason.
constexpr size_t kMaxListedNames = 6;

constexpr int64_t kMilli = 1000;

bool IsByteResource(std::string_view resource) {
  return resource == "memory" || resource.ends_with("storage") ||
         resource.starts_with("hugepages-");
}

}  // namespace

std::string FormatQuantity(std::string_view resource, int64_t milli) {
  if (milli % kMilli != 0) return fmt::format("{}m", milli);
  const int64_t units = milli / kMilli;
  if (IsByteResource(resource) && units != 0) {
    struct Suffix {
      int64_t factor;
      const char* name;
    };
    static constexpr Suffix kSuffixes[] = {{int64_t{1} << 50, "Pi"},
                                           {int64_t{1} << 40, "Ti"},
                                           {int64_t{1} << 30, "Gi"},
                                           {int64_t{1} << 20, "Mi"},
                                           {int64_t{1} << 10, "Ki"}};
    for (const Suffix& s : kSuffixes) {
      if (units % s.factor == 0) return fmt::format("{}{}", units / s.factor, s.name);
    }
  }
  return fmt::format("{}", units);
}

std::string FormatList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size() && i < kMaxListedNames; ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  if (names.size() > kMaxListedNames) {
    out += fmt::format(", ... (+{} more)", names.size() - kMaxListedNames);
  }
  out += "]";
  return out;
}

}  // namespace gantry::placement
