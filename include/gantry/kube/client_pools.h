// ClientPools: the engine's ClientPool for each cluster, made on first use
// from the cluster's credentials as the inventory has them now.
//
// After an inventory reload, Retain keeps the pool of every cluster whose
// connection did not change (inventory::SameConnection: server, trust and
// identity) and drops the others. A kept pool keeps its open connections
// and what its limit learned of the cluster's round trips; dropping every
// pool at each reload (adding one cluster, relabelling another) would cost
// a TLS handshake per connection to every cluster and start each limit
// again at its least. A dropped pool lives on while leases still hold it.
//
// Thread-safety: every method from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "gantry/inventory/kubeconfig.h"
#include "gantry/kube/client_pool.h"

namespace gantry::kube {

class ClientPools {
 public:
  // The credentials a cluster has now; nullopt when it has none (not in the
  // inventory, or its kubeconfig cannot be read).
  using CredentialsFn = std::function<std::optional<inventory::ClusterCredentials>(const std::string& cluster)>;

  ClientPools(ClientPoolOptions options, CredentialsFn credentials);

  // The cluster's pool; null when it has no credentials.
  std::shared_ptr<ClientPool> For(const std::string& cluster);
  // Its pool's limit now; 0 before its first request.
  int Limit(const std::string& cluster) const;
  // After an inventory reload. Returns how many pools were dropped.
  int Retain();
  // Closes every pool's connections idle for its idle_close
  // (ClientPool::CloseIdle); returns how many.
  int CloseIdle();

  // Over the adaptive pools: how many were answering lately, and how many
  // of those beyond twice their base (ClientPool::Load).
  struct Totals {
    int answering = 0;
    int congested = 0;
  };
  Totals Load() const;
  // The clusters whose pools are stalling (ClientPool::stalled_for_ms), and
  // for how long.
  std::map<std::string, int64_t> Stalled() const;
  // The same for one cluster (-1: not stalling, or no pool yet).
  int64_t StalledForMs(const std::string& cluster) const;

 private:
  const ClientPoolOptions options_;
  const CredentialsFn credentials_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<ClientPool>> pools_;
};

}  // namespace gantry::kube
