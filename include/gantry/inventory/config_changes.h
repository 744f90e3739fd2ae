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
#include "gantry/inventory/kubeconfig.h"

namespace gantry::inventory {

std::string ConfigChanges(const ClusterConfig& was, const ClusterConfig& now);

// What changed in the connection its kubeconfig gives (a file rewritten in
// place, its path the same): "API server A -> B", the CA, or the client
// credentials, named without their values. "" when nothing did.
std::string CredentialChanges(const ClusterCredentials& was, const ClusterCredentials& now);

}  // namespace gantry::inventory
