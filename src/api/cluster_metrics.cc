#include "cluster_metrics.h"

#include <algorithm>
#include <string>

namespace gantry::api {
namespace {

prometheus::MetricFamily Gauge(std::string name, std::string help) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = prometheus::MetricType::Gauge;
  return f;
}

void Add(prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

}  // namespace

std::vector<prometheus::MetricFamily> ClusterMetricFamilies(const std::vector<inventory::ClusterView>& clusters,
                                                            int64_t now_ms,
                                                            const std::map<std::string, int64_t>& behind_since,
                                                            const std::map<std::string, int>& connections_limit,
                                                            const std::map<std::string, int64_t>& stalled_for_ms) {
  auto ready = Gauge("gantry_cluster_ready", "1 when the worker cluster is Ready (probed, answering), else 0");
  auto refused = Gauge("gantry_cluster_credentials_refused",
                       "1 when the cluster answers but refuses gantry's credentials: NotReady, and lost only after "
                       "credentialsRefusedTimeoutSeconds");
  auto outage = Gauge("gantry_cluster_outage_seconds",
                      "Length of the cluster's current outage, 0 when none; clusterLostTimeout applies past it");
  auto cordoned = Gauge("gantry_cluster_cordoned", "1 when the cluster is cordoned in its inventory entry");
  auto declared_lost = Gauge("gantry_cluster_declared_lost",
                            "1 when an operator declared the cluster lost in its inventory entry (declaredLost)");
  auto unreadable = Gauge("gantry_cluster_capacity_unreadable",
                          "1 when the cluster answers but gantry may not list its ClusterQueues (RBAC): no quota "
                          "figures");
  auto behind = Gauge("gantry_cluster_view_behind_seconds",
                      "How long gantry's view of the cluster's objects has been behind (a watch broke and its relist "
                      "has not succeeded), 0 when current; meanwhile nothing there is taken as gone");
  auto quota = Gauge("gantry_cluster_quota",
                     "Nominal quota of the cluster's Kueue ClusterQueues by resource (cores, bytes, devices)");
  auto reserved = Gauge("gantry_cluster_quota_reserved", "Quota reserved by admitted workloads, by resource");
  auto pending = Gauge("gantry_cluster_pending_workloads", "Workloads pending in the cluster's ClusterQueues");
  auto age = Gauge("gantry_cluster_capacity_age_seconds", "Time since the cluster's quota was last read");
  auto connections = Gauge("gantry_cluster_connections_limit",
                           "Requests the dispatch engine allows in flight to the cluster now: from "
                           "clusterConnectionsMin up to clusterConnections, following its round trips");
  auto stalled = Gauge("gantry_cluster_requests_stalled_seconds",
                       "How long the dispatch engine's requests to the cluster have gone unanswered while it "
                       "answers its probes (writes that hang), 0 when answered; meanwhile it takes no new copy");
  for (const inventory::ClusterView& view : clusters) {
    const prometheus::ClientMetric::Label cluster{"cluster", view.config.name};
    auto st = stalled_for_ms.find(view.config.name);
    Add(stalled, {cluster}, st == stalled_for_ms.end() ? 0.0 : static_cast<double>(st->second) / 1000.0);
    const inventory::ClusterHealth& h = view.health;
    Add(ready, {cluster}, h.state == inventory::HealthState::kReady && view.Usable() ? 1 : 0);
    Add(refused, {cluster}, h.Refusing() ? 1 : 0);
    Add(outage, {cluster}, static_cast<double>(h.LostForMs(now_ms)) / 1000.0);
    Add(cordoned, {cluster}, view.config.cordoned ? 1 : 0);
    Add(declared_lost, {cluster}, view.config.declared_lost ? 1 : 0);
    Add(unreadable, {cluster}, view.capacity_error.empty() ? 0 : 1);
    auto b = behind_since.find(view.config.name);
    const int64_t behind_ms = b == behind_since.end() ? 0 : std::max<int64_t>(0, now_ms - b->second);
    Add(behind, {cluster}, static_cast<double>(behind_ms) / 1000.0);
    if (auto c = connections_limit.find(view.config.name); c != connections_limit.end() && c->second > 0) {
      Add(connections, {cluster}, c->second);
    }
    if (!view.capacity) continue;
    for (const auto& [resource, q] : view.capacity->quota) {
      const prometheus::ClientMetric::Label res{"resource", resource};
      Add(quota, {cluster, res}, static_cast<double>(q.nominal_milli) / 1000.0);
      Add(reserved, {cluster, res}, static_cast<double>(q.reserved_milli) / 1000.0);
    }
    Add(pending, {cluster}, view.capacity->pending_workloads);
    Add(age, {cluster}, static_cast<double>(std::max<int64_t>(0, now_ms - view.capacity_at_ms)) / 1000.0);
  }
  return {std::move(ready),      std::move(refused),    std::move(outage),   std::move(cordoned),
          std::move(declared_lost), std::move(unreadable), std::move(behind), std::move(quota), std::move(reserved),
          std::move(pending),    std::move(age),        std::move(connections), std::move(stalled)};
}

}  // namespace gantry::api
