#include "gantry/placement/job_demand.h"

namespace gantry::placement {

std::string_view InterconnectName(Interconnect interconnect) {
  switch (interconnect) {
    case Interconnect::kAny:
      return "any";
    case Interconnect::kNvlink:
      return "nvlink";
    case Interconnect::kPcie:
      return "pcie";
  }
  return "any";
}

std::string_view DispatchModeName(DispatchMode mode) {
  switch (mode) {
    case DispatchMode::kAllAtOnce:
      return "AllAtOnce";
    case DispatchMode::kIncremental:
      return "Incremental";
  }
  return "AllAtOnce";
}

}  // namespace gantry::placement
