#include "gantry/kube/kube_prober.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gantry/common/clock.h"
#include "gantry/common/json_path.h"

namespace gantry::kube {

namespace {

// An answer with a Kubernetes Status object, as kube-apiserver writes its
// errors (a proxy's or a load balancer's error page is not one).
bool ApiServerStatus(const KubeReply& reply) {
  return reply.body.is_object() && JsonStringAt(reply.body, {"kind"}) == "Status";
}

// The API server's own refusal: 401 or 403 with its Status.
bool ApiServerRefusal(const KubeReply& reply) {
  return (reply.status == 401 || reply.status == 403) && ApiServerStatus(reply);
}

// What the read of the kube-system Namespace told of the cluster's identity.
void SetIdentity(inventory::CapacityReading& reading, const Result<KubeReply>& kube_system, bool verified) {
  reading.cluster_id = ClusterIdOf(kube_system);
  reading.cluster_id_status = kube_system.ok() ? kube_system->status : 0;
  reading.cluster_id_refused = kube_system.ok() && verified && ApiServerRefusal(*kube_system);
}

}  // namespace

std::string ClusterIdOf(const Result<KubeReply>& kube_system) {
  if (!kube_system.ok() || kube_system->status != 200 || !kube_system->body.is_object()) return "";
  const nlohmann::json& body = kube_system->body;
  if (JsonStringAt(body, {"kind"}) != "Namespace") return "";
  return JsonStringAt(body, {"metadata", "uid"});
}

std::optional<int64_t> ClockOffsetMs(std::string_view date, int64_t sent_ms, int64_t received_ms) {
  const std::optional<int64_t> server_ms = ParseHttpDate(date);
  if (!server_ms || received_ms < sent_ms || received_ms - sent_ms > 1000) return std::nullopt;
  return *server_ms + 500 - (sent_ms + (received_ms - sent_ms) / 2);
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
  options.stop_fd = stop_.fd();
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
    options.stop_fd = stop_.fd();
    auto client = KubeClient::Create(creds, options);
    if (!client.ok()) return client.status();
    conn.client = std::move(client.value());
    conn.made_from = creds;
  }
  // A transport failure drops the connection (conn goes out of scope), and
  // so does a /readyz answering 5xx: behind a load balancer, an API
  // server replica shutting down (--shutdown-delay-duration) answers
  // /readyz 500 while it still serves the connections it has, and a kept
  // connection would ask it again at every probe, for the whole delay,
  // instead of a ready replica. Any other answer gives it back for the next
  // probe.
  auto keep = [&] {
    std::lock_guard lock(mu_);
    conns_[config.name] = std::move(conn);
  };
  SystemClock wall;
  const int64_t sent_ms = wall.NowMillis();
  auto ready = conn.client->Get("/readyz");
  const int64_t received_ms = wall.NowMillis();
  if (!ready.ok() && ready.status().code() == Code::kUnauthenticated &&
      ready.status().message().starts_with("TLS handshake")) {
    // The transport's word for a certificate that verifies but for its dates
    // (http::Connection::Handshake): the cluster is up, as with a refused
    // token, and its jobs most likely run on.
    return Status(Code::kUnauthenticated,
                  ready.status().message() +
                      "; its CA signed that certificate: the cluster is taken to be up, its jobs running on, as "
                      "for refused credentials (credentialsRefusedTimeoutSeconds applies, not "
                      "clusterLostTimeoutSeconds)");
  }
  if (!ready.ok()) return ready.status();
  if (ready->status == 429 && !creds.insecure && ApiServerStatus(*ready)) {
    // The API server itself (its certificate verified, its Status), busy
    // and throttling gantry: up, and its jobs run on. Not an outage whose
    // clusterLostTimeout would move them; its queues are not read now.
    keep();
    return inventory::CapacityReading::Unreadable(
        "the API server is throttling gantry (/readyz answered 429 Too Many Requests): the cluster is up, but its "
        "queues are not read now");
  }
  if (ready->status != 200) {
    if (ready->status < 500) keep();  // a refusal or 429: the same server answers the next probe
    return RefusalOrOutage(*ready, !creds.insecure, fmt::format("/readyz answered {}", ready->status));
  }
  // Which cluster this is: a failure here is no failure of the probe (a
  // worker whose RBAC predates it, a token without that permission).
  const Result<KubeReply> kube_system = conn.client->Get("/api/v1/namespaces/kube-system");
  const std::string base =
      fmt::format("/apis/kueue.x-k8s.io/{}/", inventory::KueueApiVersionName(config.kueue_api_version));
  auto cqs = conn.client->Get(base + "clusterqueues");
  if (!cqs.ok()) {
    // /readyz answered 200 a moment ago: a list that got no answer in time
    // (a slow API server, a large list) is a capacity problem, as a 5xx is,
    // not an outage whose clusterLostTimeout would move the cluster's jobs.
    // A partition that began since is the next probe's /readyz to find.
    inventory::CapacityReading unread = inventory::CapacityReading::Unreadable(
        fmt::format("listing ClusterQueues got no answer: {}: the cluster is up (/readyz), but its queues could not "
                    "be read",
                    cqs.status().message()));
    // What it said of itself still counts: a start or a changed kubeconfig
    // waits on its identity.
    SetIdentity(unread, kube_system, !creds.insecure);
    unread.clock_offset_ms = ClockOffsetMs(ready->date, sent_ms, received_ms);
    return unread;
  }
  // After the ClusterQueues, and only if they could be read: the LocalQueues
  // of every namespace, with the same client and deadline.
  Result<KubeReply> lqs = Status::Unavailable("not asked");
  if (cqs->ok()) lqs = conn.client->Get(base + "localqueues");
  // Then the WorkloadPriorityClasses (cluster-scoped, a few objects), whose
  // values the Workload copies of jobs that name one carry.
  Result<KubeReply> wpcs = Status::Unavailable("not asked");
  if (cqs->ok() && lqs.ok()) wpcs = conn.client->Get(base + "workloadpriorityclasses");
  if (!cqs->ok() || (lqs.ok() && wpcs.ok())) keep();
  // The cluster answered /readyz: what cannot be read of its queues makes
  // a reading marked unreadable (Ready, its quota stale), never an outage.
  Result<inventory::CapacityReading> reading = Status::Unavailable("not read");
  try {
    reading = ReadCapacity(*cqs, lqs, !creds.insecure, inventory::KueueApiVersionName(config.kueue_api_version));
  } catch (const std::exception& e) {
    reading = inventory::CapacityReading::Unreadable(fmt::format("its queues could not be read: {}", e.what()));
  }
  if (reading.ok()) {
    SetIdentity(*reading, kube_system, !creds.insecure);
    reading->clock_offset_ms = ClockOffsetMs(ready->date, sent_ms, received_ms);
  }
  if (reading.ok() && reading->queues) {
    if (!lqs.ok()) wpcs = Status::Unavailable("not asked: the LocalQueue list failed");
    std::optional<std::map<std::string, int32_t>> last;
    {
      std::lock_guard lock(mu_);
      if (auto it = classes_.find(config.name);
          it != classes_.end() && inventory::SameConnection(it->second.made_from, creds)) {
        last = it->second.values;
      }
    }
    auto read = AddPriorityClasses(*reading, wpcs, last ? &*last : nullptr);
    std::lock_guard lock(mu_);
    if (read) {
      classes_[config.name] = Classes{creds, std::move(*read)};
    } else if (reading->queues->priority_classes_known == false) {
      classes_.erase(config.name);  // unknown for good: not kept for a later passing failure
    }
  }
  return reading;
}

Result<inventory::CapacityReading> ReadCapacity(const KubeReply& cluster_queues,
                                                const Result<KubeReply>& local_queues, bool verified,
                                                std::string_view version) {
  const KubeReply& cqs = cluster_queues;
  const std::string said = cqs.error ? cqs.error->message : "";
  if (cqs.status == 401) {
    // /readyz took the token a moment ago; its refusal now is one as any other.
    return RefusalOrOutage(cqs, verified, fmt::format("listing ClusterQueues answered 401: {}", said));
  }
  if (cqs.status == 403 && verified && ApiServerRefusal(cqs)) {
    // /readyz took the token: the credentials work, only this permission is
    // missing (RBAC drift, e.g. after a Kueue upgrade). The cluster stays
    // Ready for the jobs it runs, whose watches need other permissions.
    return inventory::CapacityReading::Unreadable(
        fmt::format("listing ClusterQueues is forbidden (403: {}); grant gantry list on "
                    "clusterqueues.kueue.x-k8s.io",
                    said));
  }
  // /readyz answered 200: the cluster is up, and what the list answers is a
  // capacity problem, never an outage that would make its jobs look lost.
  if (cqs.status == 404) {
    return inventory::CapacityReading::Unreadable(fmt::format(
        "listing ClusterQueues answered 404: Kueue's CRDs at {} are not served (is Kueue installed, at a version "
        "that serves {}? the cluster's kueueAPIVersion says which gantry asks for)",
        version, version));
  }
  if (!cqs.ok()) {
    return inventory::CapacityReading::Unreadable(
        fmt::format("listing ClusterQueues answered {}{}{}: the cluster is up (/readyz), but its API server could "
                    "not list them",
                    cqs.status, said.empty() ? "" : ": ", said));
  }
  if (local_queues.ok() && local_queues->ok()) return ParseClusterQueues(cqs.body, &local_queues->body);
  return ParseClusterQueues(cqs.body, nullptr, ListFailure(local_queues, "LocalQueues", "localqueues"));
}

std::string ListFailure(const Result<KubeReply>& answer, std::string_view what, std::string_view resource) {
  if (!answer.ok()) return fmt::format("listing {} failed: {}", what, answer.status().message());
  const KubeReply& reply = *answer;
  if (reply.ok()) return "";
  const std::string said = reply.error ? reply.error->message : "";
  return reply.status == 403 ? fmt::format("listing {} is forbidden (403: {}); grant gantry list on {}.kueue.x-k8s.io",
                                           what, said, resource)
                             : fmt::format("listing {} answered {}{}{}", what, reply.status, said.empty() ? "" : ": ",
                                           said);
}

}  // namespace gantry::kube
