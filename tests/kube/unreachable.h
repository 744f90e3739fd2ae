// Credentials of a cluster at 127.0.0.1:port, where nothing listens (port 1
// by default): for pools and clients whose tests need no server, or need a
// request to find none.
#pragma once

#include <cstdint>
#include <string>

#include "gantry/inventory/kubeconfig.h"

namespace gantry::testing {

inline inventory::ClusterCredentials UnreachableCluster(uint16_t port = 1) {
  inventory::ClusterCredentials creds;
  creds.server = "https://127.0.0.1:" + std::to_string(port);
  creds.host = "127.0.0.1";
  creds.port = port;
  return creds;
}

}  // namespace gantry::testing
