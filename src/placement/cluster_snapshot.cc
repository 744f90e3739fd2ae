#include "gantry/placement/cluster_snapshot.h"

namespace gantry::placement {

std::string_view ClusterHealthName(ClusterHealth health) {
  switch (health) {
    case ClusterHealth::kReady:
      return "Ready";
    case ClusterHealth::kNotReady:
      return "NotReady";
    case ClusterHealth::kLost:
      return "Lost";
    case ClusterHealth::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

}  // namespace gantry::placement
