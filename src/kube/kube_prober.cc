#include "gantry/kube/kube_prober.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "gantry/job/quantity.h"

namespace gantry::kube {

namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kMaxQuantityMilli : sum;
}

// A capacity that cannot be read, told in the reading, never as a probe
// error: /readyz answered, so the cluster is up (CapacityReading::unreadable).
inventory::CapacityReading Unreadable(std::string why) {
  inventory::CapacityReading none;
  none.unreadable = std::move(why);
  return none;
}

// The API server's own refusal: 401 or 403 with a Kubernetes Status object,
// as kube-apiserver writes them (a proxy's or a load balancer's error page
// is not one).
bool ApiServerRefusal(const KubeReply& reply) {
  return (reply.status == 401 || reply.status == 403) && reply.body.is_object() &&
         reply.body.value("kind", "") == "Status";
}

}  // namespace

inventory::CapacityReading ParseClusterQueues(const nlohmann::json& list) {
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
    return Unreadable("the ClusterQueue list is not a Kubernetes list");
  }
  inventory::CapacityReading reading;
  int64_t pending = 0;
  try {
    for (const auto& cq : list["items"]) {
      const std::string cq_name = cq.value("/metadata/name"_json_pointer, "");
      reading.cluster_queues.push_back(cq_name);
      // One resource's amount: its nominalQuota, or a reservation's total.
      auto read = [&](const nlohmann::json& res, const char* field) -> Result<int64_t> {
        Result<int64_t> q = ParseQuantityMilliSaturating(res.value(field, nlohmann::json("0")));
        if (q.ok()) return q;
        return Status::Invalid(fmt::format("ClusterQueue {}: {} of {}: {}", cq_name, field,
                                           res.value("name", "?"), q.status().message()));
      };
      // Sums saturate: ten ClusterQueues of 1Pi memory (bytes x 1000) are
      // more than int64 holds, and a quota that large is as good as unlimited.
      for (const auto& group : cq.value("/spec/resourceGroups"_json_pointer, nlohmann::json::array())) {
        for (const auto& flavor : group.value("flavors", nlohmann::json::array())) {
          for (const auto& res : flavor.value("resources", nlohmann::json::array())) {
            Result<int64_t> q = read(res, "nominalQuota");
            if (!q.ok()) return Unreadable(q.status().message());
            int64_t& nominal = reading.quota[res.value("name", "")].nominal_milli;
            nominal = SaturatingAdd(nominal, *q);
          }
        }
      }
      for (const auto& flavor : cq.value("/status/flavorsReservation"_json_pointer, nlohmann::json::array())) {
        for (const auto& res : flavor.value("resources", nlohmann::json::array())) {
          Result<int64_t> q = read(res, "total");
          if (!q.ok()) return Unreadable(q.status().message());
          int64_t& reserved = reading.quota[res.value("name", "")].reserved_milli;
          reserved = SaturatingAdd(reserved, *q);
        }
      }
      const int64_t cq_pending = cq.value("/status/pendingWorkloads"_json_pointer, int64_t{0});
      pending = SaturatingAdd(pending, std::max<int64_t>(0, cq_pending));
    }
  } catch (const nlohmann::json::exception& e) {
    return Unreadable(std::string("the ClusterQueue list: ") + e.what());
  }
  reading.pending_workloads =
      static_cast<int32_t>(std::min<int64_t>(pending, std::numeric_limits<int32_t>::max()));
  return reading;
}

Status RefusalOrOutage(const KubeReply& reply, bool verified, std::string what) {
  // Without TLS verification anyone on the path could have answered.
  if (!verified || !ApiServerRefusal(reply)) return Status::Unavailable(std::move(what));
  if (reply.status == 401) return {Code::kUnauthenticated, what + ": the cluster refuses gantry's credentials"};
  return {Code::kPermissionDenied, what + ": gantry's credentials lack the permission"};
}

Status WithoutTokenOutcome(const Result<KubeReply>& anonymous_readyz, bool verified, const Status& no_token) {
  const std::string& why = no_token.message();
  if (!anonymous_readyz.ok()) {
    return {anonymous_readyz.status().code(),
            fmt::format("no token: {}; and the cluster does not answer: {}", why, anonymous_readyz.status().message())};
  }
  const KubeReply& r = *anonymous_readyz;
  if (verified && (r.status == 200 || ApiServerRefusal(r))) {
    return {Code::kUnauthenticated, fmt::format("no token: {} (the cluster answers)", why)};
  }
  return Status::Unavailable(fmt::format("no token: {}; and /readyz asked without one answered {}", why, r.status));
}

// No token could be had (a failing exec plugin, a token file gone): /readyz
// is asked without one (WithoutTokenOutcome).
Status KubeProber::WithoutToken(const inventory::ClusterCredentials& creds, const Status& no_token) {
  inventory::ClusterCredentials anonymous = creds;
  anonymous.token_source = nullptr;
  KubeClientOptions options;
  options.timeout = timeout_;
  options.max_attempts = 1;
  auto client = KubeClient::Create(anonymous, options);
  Result<KubeReply> ready = client.ok() ? (*client)->Get("/readyz") : Result<KubeReply>(client.status());
  return WithoutTokenOutcome(ready, !creds.insecure, no_token);
}

Result<inventory::CapacityReading> KubeProber::Probe(const inventory::ClusterConfig& config,
                                                      const inventory::ClusterCredentials& creds) {
  if (creds.token_source) {
    // Cached: this runs an exec plugin only when its token is due anyway.
    if (auto token = creds.token_source->Token(); !token.ok()) return WithoutToken(creds, token.status());
  }
  // A client is kept while what it was made from stays.
  Conn conn;
  {
    std::lock_guard lock(mu_);
    if (auto it = conns_.find(config.name); it != conns_.end()) {
      if (inventory::SameConnection(it->second.made_from, creds)) conn = std::move(it->second);
      conns_.erase(it);
    }
  }
  if (!conn.client) {
    KubeClientOptions options;
    options.timeout = timeout_;
    options.max_attempts = 1;
    auto client = KubeClient::Create(creds, options);
    if (!client.ok()) return client.status();
    conn.client = std::move(client.value());
    conn.made_from = creds;
  }
  // A transport failure drops the connection (conn goes out of scope); an
  // answer, even a refusal, gives it back for the next probe.
  auto keep = [&] {
    std::lock_guard lock(mu_);
    conns_[config.name] = std::move(conn);
  };
  auto ready = conn.client->Get("/readyz");
  if (!ready.ok()) return ready.status();
  if (ready->status != 200) {
    keep();
    return RefusalOrOutage(*ready, !creds.insecure, fmt::format("/readyz answered {}", ready->status));
  }
  std::string version = std::string(inventory::KueueApiVersionName(config.kueue_api_version));
  auto cqs = conn.client->Get("/apis/kueue.x-k8s.io/" + version + "/clusterqueues");
  if (!cqs.ok()) return cqs.status();
  keep();
  if (cqs->status == 403 && !creds.insecure && ApiServerRefusal(*cqs)) {
    // /readyz took the token: the credentials work, only this permission is
    // missing (RBAC drift, e.g. after a Kueue upgrade). The cluster stays
    // Ready for the jobs it runs, whose watches need other permissions.
    return Unreadable(
        fmt::format("listing ClusterQueues is forbidden (403: {}); grant gantry list on "
                    "clusterqueues.kueue.x-k8s.io",
                    cqs->error ? cqs->error->message : ""));
  }
  if (!cqs->ok()) {
    return RefusalOrOutage(
        *cqs, !creds.insecure,
        fmt::format("listing ClusterQueues answered {}: {}", cqs->status, cqs->error ? cqs->error->message : ""));
  }
  return ParseClusterQueues(cqs->body);
}

}  // namespace gantry::kube
