#include "gantry/kube/client_pool.h"

#include <fmt/format.h>

namespace gantry::kube {

ClientPool::Lease::~Lease() {
  if (pool_ && client_) pool_->Return(std::move(client_));
}

Result<ClientPool::Lease> ClientPool::Acquire() {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, options_.acquire_timeout, [&] { return in_use_ < options_.size; })) {
    return Status::Unavailable(fmt::format("all {} connections to {} are busy", options_.size, creds_.server));
  }
  ++in_use_;
  if (!idle_.empty()) {
    auto client = std::move(idle_.back());
    idle_.pop_back();
    return Lease(shared_from_this(), std::move(client));
  }
  lock.unlock();
  auto client = KubeClient::Create(creds_, options_.client);  // connects lazily on first use
  if (!client.ok()) {
    std::lock_guard relock(mu_);
    --in_use_;
    cv_.notify_one();
    return client.status();
  }
  return Lease(shared_from_this(), std::move(client.value()));
}

void ClientPool::Return(std::unique_ptr<KubeClient> client) {
  {
    std::lock_guard lock(mu_);
    --in_use_;
    idle_.push_back(std::move(client));
  }
  cv_.notify_one();
}

int ClientPool::in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

}  // namespace gantry::kube
