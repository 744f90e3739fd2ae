// The fleet as Prometheus gauges, built afresh at each scrape from the
// inventory's views, so that a cluster removed from clusters.d leaves no
// series behind:
//
//   gantry_cluster_ready{cluster}                 1 Ready, else 0
//   gantry_cluster_credentials_refused{cluster}   1 when it answers but refuses gantry (its outage has
//                                                 the longer credentialsRefusedTimeoutSeconds)
//   gantry_cluster_outage_seconds{cluster}        length of the current outage (clusterLostTimeout,
//                                                 or credentialsRefusedTimeout, applies past it), 0 when none
//   gantry_cluster_cordoned{cluster}              1 when cordoned in its entry
//   gantry_cluster_quota{cluster,resource}        nominal quota of its ClusterQueues (cores, bytes, GPUs)
//   gantry_cluster_quota_reserved{cluster,resource}
//   gantry_cluster_pending_workloads{cluster}
//   gantry_cluster_capacity_age_seconds{cluster}  since its quota was last read
//   gantry_cluster_connections_limit{cluster}     requests the engine allows in flight there now
//   gantry_cluster_requests_stalled_seconds{cluster}  how long its requests have gone unanswered (0: answered)
//                                                 (clusterConnectionsMin..clusterConnections, by its round trips)
//
// The quota series exist once a probe has read it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "gantry/inventory/fleet.h"

namespace gantry::api {

// behind_since: when each cluster's view fell behind (ApiOptions::view_behind),
// for gantry_cluster_view_behind_seconds; a cluster not in it is current.
// connections_limit: the requests the dispatch engine allows in flight to
// each cluster now, for gantry_cluster_connections_limit (a cluster not in
// it has no series).
// stalled_for_ms: for how long the engine's requests to each cluster have
// gone unanswered (ApiOptions::requests_stalled_for_ms), for
// gantry_cluster_requests_stalled_seconds; a cluster not in it answers.
std::vector<prometheus::MetricFamily> ClusterMetricFamilies(const std::vector<inventory::ClusterView>& clusters,
                                                            int64_t now_ms,
                                                            const std::map<std::string, int64_t>& behind_since = {},
                                                            const std::map<std::string, int>& connections_limit = {},
                                                            const std::map<std::string, int64_t>& stalled_for_ms = {});

}  // namespace gantry::api
