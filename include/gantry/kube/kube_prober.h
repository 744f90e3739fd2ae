// KubeProber: probes a worker cluster over HTTPS: GET /readyz, then lists
// Kueue ClusterQueues to read nominal quota, reservation and pending
// workloads. Trusts the cluster's CA only, sends the bearer token, and has a
// deadline on every step.
//
// This is the first piece of kube/; the full client (pool, watch, retries,
// typed Status errors) is still to come.
//
// Thread-safety: one prober per thread (the Fleet calls it from its worker).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "gantry/http/client.h"
#include "gantry/inventory/fleet.h"

namespace gantry::kube {

class KubeProber final : public inventory::ClusterProber {
 public:
  explicit KubeProber(std::chrono::milliseconds timeout = std::chrono::seconds(5)) : timeout_(timeout) {}
  Result<inventory::CapacityReading> Probe(const inventory::ClusterConfig& config,
                                           const inventory::ClusterCredentials& creds) override;

 private:
  struct Conn {
    std::string key;  // server + CA: a change makes a new connection
    std::unique_ptr<http::Client> client;
  };
  std::chrono::milliseconds timeout_;
  std::map<std::string, Conn> conns_;
};

// Sums a ClusterQueueList's quota and usage (exposed for tests).
Result<inventory::CapacityReading> ParseClusterQueues(const std::string& body);

}  // namespace gantry::kube
