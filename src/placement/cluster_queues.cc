#include "gantry/placement/cluster_queues.h"

namespace gantry::placement {

const std::string& LocalQueueIn(const std::map<std::string, std::string>& mapping,
                                const std::string& ns, const std::string& queue) {
  auto it = mapping.find(ns);
  return it == mapping.end() ? queue : it->second;
}

}  // namespace gantry::placement
