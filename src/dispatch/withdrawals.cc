#include "withdrawals.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "gantry/common/thread_name.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/http/message.h"

namespace gantry::dispatch {

Withdrawals::Withdrawals(kube::ClientPools& pools, const Clock& clock, std::string origin, EngineMetrics* metrics,
                         WithdrawalOptions options)
    : pools_(pools), clock_(clock), origin_(std::move(origin)), metrics_(metrics), options_(options) {}

Withdrawals::~Withdrawals() { Stop(); }

void Withdrawals::Start() {
  std::lock_guard lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] {
    SetThreadName("withdrawals");
    Run();
  });
}

void Withdrawals::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    pending_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Withdrawals::Selector(const std::string& origin, int64_t epoch, const std::vector<std::string>& job_uids) {
  return fmt::format("{}={},{}={},{} in ({})", kOriginLabel, origin, kEpochLabel, epoch, kJobUidLabel,
                     fmt::join(job_uids, ","));
}

std::string Withdrawals::CollectionOf(const std::string& object_path) {
  const std::size_t slash = object_path.rfind('/');
  return slash == std::string::npos ? object_path : object_path.substr(0, slash);
}

bool Withdrawals::Add(const Action& action) {
  if (action.verb != Verb::kDelete || action.batch_job_uid.empty() || action.epoch <= 0) return false;
  std::unique_lock lock(mu_);
  if (!started_ || stopping_) return false;
  auto refused = refused_until_.find(action.cluster);
  if (refused != refused_until_.end()) {
    if (clock_.NowMillis() < refused->second) return false;
    refused_until_.erase(refused);
  }
  if (pending_.empty()) oldest_ms_ = clock_.NowMillis();
  std::vector<Action>& batch = pending_[{action.cluster, CollectionOf(action.path), action.epoch}];
  batch.push_back(action);
  const bool full = batch.size() >= options_.max_batch;
  lock.unlock();
  if (full || pending_.size() == 1) cv_.notify_one();
  return true;
}

void Withdrawals::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      continue;
    }
    // Wait for the batch to fill, at most flush_ms after its first copy.
    const bool full = std::any_of(pending_.begin(), pending_.end(),
                                  [&](const auto& p) { return p.second.size() >= options_.max_batch; });
    const int64_t due = oldest_ms_ + options_.flush_ms;
    if (!full && clock_.NowMillis() < due) {
      cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, due - clock_.NowMillis())));
      continue;
    }
    std::map<Key, std::vector<Action>> ready;
    ready.swap(pending_);
    lock.unlock();
    for (auto& [key, actions] : ready) {
      for (std::size_t at = 0; at < actions.size(); at += options_.max_batch) {
        const auto end = actions.begin() + static_cast<std::ptrdiff_t>(std::min(actions.size(), at + options_.max_batch));
        Send(key, std::vector<Action>(actions.begin() + static_cast<std::ptrdiff_t>(at), end));
      }
    }
    lock.lock();
  }
}

void Withdrawals::Send(const Key& key, const std::vector<Action>& batch) {
  const auto& [cluster, collection, epoch] = key;
  // One copy alone goes by name: a deletecollection makes the API server
  // look through the namespace's Workloads, worth it only for several.
  if (batch.size() == 1) return SendAlone(batch.front());
  auto pool = pools_.For(cluster);
  if (!pool) return;  // no credentials now: the jobs' passes delete what stays
  std::vector<std::string> uids;
  uids.reserve(batch.size());
  for (const Action& a : batch) uids.push_back(a.batch_job_uid);
  // resourceVersion=0: the API server may select from its watch cache
  // instead of reading the namespace's Workloads from etcd; a copy it has
  // not seen yet stays for the job's passes to delete by name.
  const std::string path =
      collection + "?labelSelector=" + http::PercentEncode(Selector(origin_, epoch, uids)) + "&resourceVersion=0";
  Result<kube::KubeReply> reply = Status::Unavailable("not sent");
  {
    auto lease = pool->Acquire();  // given back before any DELETE one by one below
    if (!lease.ok()) {
      spdlog::debug("dispatch: withdrawing {} copies in {} not sent: {}", batch.size(), cluster,
                    lease.status().message());
      return;
    }
    kube::DeleteOptions opts;
    opts.propagation_policy = "Background";
    reply = (*lease)->Delete(path, opts, kube::KubeClient::Body::kOnlyOnError);
  }
  if (metrics_) metrics_->RemoteCall(cluster, "deletecollection", reply.ok() ? reply->status : 0);
  if (!reply.ok() || reply->ok()) {
    // Sent, or not answered: either way the jobs' passes delete one by one
    // what the cluster still shows once their expectation of it lapses.
    if (!reply.ok()) {
      spdlog::debug("dispatch: withdrawing {} copies in {}: {}", batch.size(), cluster, reply.status().ToString());
    }
    return;
  }
  const int status = reply->status;
  if (status == 403 || status == 404 || status == 405) {
    {
      std::lock_guard lock(mu_);
      refused_until_[cluster] = clock_.NowMillis() + options_.refused_for_ms;
    }
    spdlog::warn("dispatch: cluster {} refuses a deletecollection of Workloads (HTTP {}: {}); the lease losers' "
                 "copies there are withdrawn one by one (grant gantry deletecollection on "
                 "workloads.kueue.x-k8s.io, see config/worker-rbac.yaml)",
                 cluster, status, reply->error ? reply->error->message : "");
  } else {
    spdlog::warn("dispatch: withdrawing {} copies in {}: HTTP {} {}; one by one instead", batch.size(), cluster,
                 status, reply->error ? reply->error->message : "");
  }
  for (const Action& a : batch) SendAlone(a);
}

void Withdrawals::SendAlone(const Action& action) {
  auto pool = pools_.For(action.cluster);
  if (!pool) return;
  auto lease = pool->Acquire();
  if (!lease.ok()) return;
  kube::DeleteOptions opts;
  opts.propagation_policy = "Background";
  opts.precondition_uid = action.precondition_uid;
  auto reply = (*lease)->Delete(action.path, opts, kube::KubeClient::Body::kOnlyOnError);
  if (metrics_) metrics_->RemoteCall(action.cluster, "delete", reply.ok() ? reply->status : 0);
}

}  // namespace gantry::dispatch
