// ConfigChanges: what a reload changed in one cluster's entry, in words
// for the reload's answer and its log line, e.g.
//   "cordoned, region eu-west-1 -> us-east-1, labels (+tier=gold, -team)"
// Values are the operator's own settings (no credentials: a changed
// kubeconfig is only named). "" when nothing changed.
//
// Thread-safety: pure.
#pragma once

#include <string>

#include "gantry/inventory/cluster_config.h"

namespace gantry::inventory {

std::string ConfigChanges(const ClusterConfig& was, const ClusterConfig& now);

}  // namespace gantry::inventory
