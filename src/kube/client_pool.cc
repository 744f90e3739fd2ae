#include "gantry/kube/client_pool.h"

#include <fmt/format.h>

namespace gantry::kube {
namespace {

// The limit's windows are kept on the steady clock.
int64_t SteadyMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ClientPool::Lease::~Lease() {
  if (pool_ && client_) pool_->Return(std::move(client_), in_flight_);
}

ClientPool::ClientPool(Passkey, inventory::ClusterCredentials creds, ClientPoolOptions options)
    : creds_(std::move(creds)), options_(options) {
  if (options_.adaptive()) {
    ConcurrencyLimitOptions limit;
    limit.min = options_.min_size;
    limit.max = options_.size;
    limit.initial = options_.min_size;
    adaptive_.emplace(limit);
  }
}

ClientPool::Load ClientPool::load() const {
  const int64_t now_ms = SteadyMillis();
  std::lock_guard lock(mu_);
  Load l;
  if (!adaptive_) return l;
  l.answered = adaptive_->answered_since(now_ms);
  l.congested = l.answered && adaptive_->congested();
  return l;
}

int ClientPool::limit() const {
  std::lock_guard lock(mu_);
  return LimitLocked();
}

void ClientPool::NoteLate() {
  std::lock_guard lock(mu_);
  stall_seen_ms_ = SteadyMillis();
  if (stalled_since_ms_ < 0) stalled_since_ms_ = stall_seen_ms_;
}

void ClientPool::ExpireStallLocked(int64_t now_ms) const {
  if (stalled_since_ms_ >= 0 && in_use_ == 0 && now_ms - stall_seen_ms_ >= options_.stall_retry.count()) {
    stalled_since_ms_ = -1;
  }
}

int64_t ClientPool::stalled_for_ms() const {
  std::lock_guard lock(mu_);
  const int64_t now = SteadyMillis();
  ExpireStallLocked(now);
  return stalled_since_ms_ < 0 ? -1 : std::max<int64_t>(0, now - stalled_since_ms_);
}

Result<ClientPool::Lease> ClientPool::Acquire() {
  std::unique_lock lock(mu_);
  ExpireStallLocked(SteadyMillis());
  if (stalled_since_ms_ >= 0 && in_use_ > 0) {
    // One at a time tells when it answers again; the rest would only wait.
    return Status::Unavailable(fmt::format(
        "{} has left requests unanswered for {} ms; until it answers one, one request at a time goes there",
        creds_.server, std::max<int64_t>(0, SteadyMillis() - stalled_since_ms_)));
  }
  if (!cv_.wait_for(lock, options_.acquire_timeout, [&] { return in_use_ < LimitLocked(); })) {
    return Status::Unavailable(
        fmt::format("all {} connections to {} in use (the limit now) are busy", LimitLocked(), creds_.server));
  }
  const int in_flight = ++in_use_;
  if (!idle_.empty()) {
    auto client = std::move(idle_.back());
    idle_.pop_back();
    return Lease(shared_from_this(), std::move(client), in_flight);
  }
  lock.unlock();
  auto client = KubeClient::Create(creds_, options_.client);  // connects lazily on first use
  if (!client.ok()) {
    std::lock_guard relock(mu_);
    --in_use_;
    cv_.notify_one();
    return client.status();
  }
  return Lease(shared_from_this(), std::move(client.value()), in_flight);
}

void ClientPool::Return(std::unique_ptr<KubeClient> client, int in_flight) {
  const KubeClient::Exchange exchange = client->TakeExchange();
  bool grew = false;
  {
    std::lock_guard lock(mu_);
    --in_use_;
    // Kept open for the next request, also beyond a limit that shrank:
    // closing them as the limit moves down and up would cost a TLS
    // handshake each time it grows again (measured: a worse tail nearby).
    idle_.push_back(std::move(client));
    if (exchange.answered) {
      stalled_since_ms_ = -1;
    } else if (exchange.no_answer) {
      stall_seen_ms_ = SteadyMillis();
      if (stalled_since_ms_ < 0) stalled_since_ms_ = stall_seen_ms_;
    }
    if (adaptive_) {
      const int before = adaptive_->limit();
      if (exchange.outcome == KubeClient::Exchange::Outcome::kAnswered) {
        adaptive_->OnAnswer(exchange.round_trip, in_flight, SteadyMillis());
      } else if (exchange.outcome == KubeClient::Exchange::Outcome::kOverloaded) {
        adaptive_->OnOverload();
      }
      grew = adaptive_->limit() > before;
    }
  }
  if (grew) {
    cv_.notify_all();  // room for more than the one returned
  } else {
    cv_.notify_one();
  }
}

int ClientPool::in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

}  // namespace gantry::kube
