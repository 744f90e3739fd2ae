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
  if (pool_ && client_) pool_->Return(std::move(client_), in_flight_, late_at_ms_);
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

int64_t ClientPool::NoteLate() {
  const int64_t now = SteadyMillis();
  std::lock_guard lock(mu_);
  late_out_.insert(now);
  return now;
}

int64_t ClientPool::StalledSinceLocked(int64_t now_ms) const {
  if (!unanswered_since_ms_.empty() && in_use_ == 0 && now_ms - stall_seen_ms_ >= options_.stall_retry.count()) {
    unanswered_since_ms_.clear();
  }
  int64_t since = -1;
  for (const auto& [method, at] : unanswered_since_ms_) since = since < 0 ? at : std::min(since, at);
  if (!late_out_.empty() && now_ms - *late_out_.begin() >= options_.stall_after.count()) {
    const int64_t late = *late_out_.begin() + options_.stall_after.count();
    since = since < 0 ? late : std::min(since, late);
  }
  return since;
}

void ClientPool::TakeExpiredLocked(int64_t now, std::vector<std::unique_ptr<KubeClient>>* out) {
  while (!idle_.empty() && now - idle_.front().since_ms >= options_.idle_close.count()) {
    out->push_back(std::move(idle_.front().client));
    idle_.pop_front();
  }
}

int ClientPool::CloseIdle() {
  std::vector<std::unique_ptr<KubeClient>> expired;
  {
    std::lock_guard lock(mu_);
    TakeExpiredLocked(SteadyMillis(), &expired);
  }
  return static_cast<int>(expired.size());  // closed as they go out of scope
}

int64_t ClientPool::stalled_for_ms() const {
  std::lock_guard lock(mu_);
  const int64_t now = SteadyMillis();
  const int64_t since = StalledSinceLocked(now);
  return since < 0 ? -1 : std::max<int64_t>(0, now - since);
}

Result<ClientPool::Lease> ClientPool::Acquire() {
  std::unique_lock lock(mu_);
  const int64_t now = SteadyMillis();
  if (const int64_t since = StalledSinceLocked(now); since >= 0 && in_use_ > 0) {
    // One at a time tells when it answers again; the rest would only wait.
    return Status::Unavailable(fmt::format(
        "{} has left requests unanswered for {} ms; until it answers one, one request at a time goes there",
        creds_.server, std::max<int64_t>(0, now - since)));
  }
  if (!late_out_.empty() && in_use_ >= LimitLocked()) {
    // A connection comes back when a late answer does, or its deadline.
    return Status::Unavailable(fmt::format("all {} connections to {} in use (the limit now) are busy, {} of them "
                                           "with requests whose answers are late",
                                           LimitLocked(), creds_.server, late_out_.size()));
  }
  if (!cv_.wait_for(lock, options_.acquire_timeout, [&] { return in_use_ < LimitLocked(); })) {
    return Status::Unavailable(
        fmt::format("all {} connections to {} in use (the limit now) are busy", LimitLocked(), creds_.server));
  }
  const int in_flight = ++in_use_;
  std::vector<std::unique_ptr<KubeClient>> expired;
  TakeExpiredLocked(SteadyMillis(), &expired);
  if (!idle_.empty()) {
    auto client = std::move(idle_.back().client);
    idle_.pop_back();
    lock.unlock();
    expired.clear();  // closed outside the lock
    return Lease(shared_from_this(), std::move(client), in_flight);
  }
  lock.unlock();
  expired.clear();
  auto client = KubeClient::Create(creds_, options_.client);  // connects lazily on first use
  if (!client.ok()) {
    std::lock_guard relock(mu_);
    --in_use_;
    cv_.notify_one();
    return client.status();
  }
  return Lease(shared_from_this(), std::move(client.value()), in_flight);
}

void ClientPool::Return(std::unique_ptr<KubeClient> client, int in_flight, int64_t late_at_ms) {
  const KubeClient::Exchange exchange = client->TakeExchange();
  bool grew = false;
  std::vector<std::unique_ptr<KubeClient>> expired;  // closed at the end, outside the lock
  {
    std::lock_guard lock(mu_);
    --in_use_;
    TakeExpiredLocked(SteadyMillis(), &expired);
    // Kept open for the next request, also beyond a limit that shrank:
    // closing them as the limit moves down and up would cost a TLS
    // handshake each time it grows again (measured: a worse tail nearby).
    idle_.push_back({std::move(client), SteadyMillis()});
    if (late_at_ms >= 0) {
      if (auto it = late_out_.find(late_at_ms); it != late_out_.end()) late_out_.erase(it);
    }
    if (exchange.answered && exchange.write && exchange.status < 500 && exchange.status != 429) {
      unanswered_since_ms_.erase(exchange.method);
      unanswered_since_ms_.erase("GET");  // a read's answer may come from a cache: only a write's counts
    } else if (exchange.no_answer) {
      stall_seen_ms_ = SteadyMillis();
      unanswered_since_ms_.emplace(exchange.method, stall_seen_ms_);  // kept if already there
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
