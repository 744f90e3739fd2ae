// KubeProber: probes a worker cluster over HTTPS: GET /readyz, then lists
// Kueue ClusterQueues to read nominal quota, reservation and pending
// workloads. Trusts the cluster's CA only, sends the bearer token, and has a
// deadline on every step.
//
// It does not retry: a failed probe is itself the signal, and the Fleet backs
// off between probes. A 401 or 403, or no token to send while the cluster
// answers, comes back as kUnauthenticated or kPermissionDenied: the cluster
// is up and refuses us, which the Fleet does not count as an outage.
//
// Thread-safety: Probe from any thread (the Fleet's probe workers share one
// prober). A probe takes its cluster's kept client out of the cache for its
// duration, so two probes of one cluster never share a connection: the
// second opens its own.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
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
    inventory::ClusterCredentials made_from;  // a change (SameConnection) makes a new client
    std::unique_ptr<KubeClient> client;
  };
  Status WithoutToken(const inventory::ClusterCredentials& creds, const Status& no_token);

  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::map<std::string, Conn> conns_;  // idle clients by cluster name; guarded by mu_
};

// Sums a ClusterQueueList's quota and usage (exposed for tests).
Result<inventory::CapacityReading> ParseClusterQueues(const nlohmann::json& list);

}  // namespace gantry::kube
