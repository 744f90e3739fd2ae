#include "gantry/kube/client_pools.h"

#include <utility>
#include <vector>

namespace gantry::kube {

ClientPools::ClientPools(ClientPoolOptions options, CredentialsFn credentials)
    : options_(options), credentials_(std::move(credentials)) {}

std::shared_ptr<ClientPool> ClientPools::For(const std::string& cluster) {
  std::lock_guard lock(mu_);
  auto it = pools_.find(cluster);
  if (it != pools_.end()) return it->second;
  auto creds = credentials_(cluster);
  if (!creds) return nullptr;
  auto pool = ClientPool::Create(std::move(*creds), options_);
  pools_.emplace(cluster, pool);
  return pool;
}

int ClientPools::Limit(const std::string& cluster) const {
  std::lock_guard lock(mu_);
  auto it = pools_.find(cluster);
  return it == pools_.end() ? 0 : it->second->limit();
}

int ClientPools::CloseIdle() {
  std::map<std::string, std::shared_ptr<ClientPool>> pools;
  {
    std::lock_guard lock(mu_);
    pools = pools_;
  }
  int closed = 0;
  for (const auto& [cluster, pool] : pools) closed += pool->CloseIdle();
  return closed;
}

int ClientPools::Retain() {
  // Every cluster's credentials are read outside the lock, so that passes
  // asking for a pool meanwhile are not held up by the whole reload.
  std::map<std::string, std::shared_ptr<ClientPool>> pools;
  {
    std::lock_guard lock(mu_);
    pools = pools_;
  }
  std::vector<std::pair<std::string, std::shared_ptr<ClientPool>>> stale;
  for (const auto& [cluster, pool] : pools) {
    auto now = credentials_(cluster);
    if (!now || !inventory::SameConnection(pool->credentials(), *now)) stale.emplace_back(cluster, pool);
  }
  std::lock_guard lock(mu_);
  // Only the very pool found stale: one made meanwhile (by a pass's first
  // request since the reload) came from the new credentials.
  for (const auto& [cluster, pool] : stale) {
    auto it = pools_.find(cluster);
    if (it != pools_.end() && it->second == pool) pools_.erase(it);
  }
  return static_cast<int>(stale.size());
}

ClientPools::Totals ClientPools::Load() const {
  std::lock_guard lock(mu_);
  Totals t;
  for (const auto& [cluster, pool] : pools_) {
    const ClientPool::Load l = pool->load();
    t.answering += l.answered;
    t.congested += l.congested;
  }
  return t;
}

int64_t ClientPools::StalledForMs(const std::string& cluster) const {
  std::shared_ptr<ClientPool> pool;
  {
    std::lock_guard lock(mu_);
    auto it = pools_.find(cluster);
    if (it == pools_.end()) return -1;
    pool = it->second;
  }
  return pool->stalled_for_ms();
}

std::map<std::string, int64_t> ClientPools::Stalled() const {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> out;
  for (const auto& [cluster, pool] : pools_) {
    if (const int64_t for_ms = pool->stalled_for_ms(); for_ms >= 0) out.emplace(cluster, for_ms);
  }
  return out;
}

}  // namespace gantry::kube
