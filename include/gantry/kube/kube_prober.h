// KubeProber: probes a worker cluster over HTTPS: GET /readyz, then lists
// Kueue ClusterQueues to read nominal quota, reservation and pending
// workloads. Trusts the cluster's CA only, sends the bearer token, and has a
// deadline on every step.
//
// It does not retry: a failed probe is itself the signal, and the Fleet backs
// off between probes.
//
// Thread-safety: one prober per thread (the Fleet calls it from its worker).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "gantry/kube/kube_client.h"
#include "gantry/inventory/fleet.h"

namespace gantry::kube {

class KubeProber final : public inventory::ClusterProber {
 public:
  explicit KubeProber(std::chrono::milliseconds timeout = std::chrono::seconds(5)) : timeout_(timeout) {}
  Result<inventory::CapacityReading> Probe(const inventory::ClusterConfig& config,
                                           const inventory::ClusterCredentials& creds) override;

 private:
  struct Conn {
    std::string key;  // server + CA + client cert: a change makes a new client
    std::unique_ptr<KubeClient> client;
  };
  std::chrono::milliseconds timeout_;
  std::map<std::string, Conn> conns_;
};

// Sums a ClusterQueueList's quota and usage (exposed for tests).
Result<inventory::CapacityReading> ParseClusterQueues(const nlohmann::json& list);

}  // namespace gantry::kube
