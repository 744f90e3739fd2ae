#include "gantry/daemon/daemon_config.h"

#include <fmt/format.h>

#include "gantry/common/names.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry {

Status ParseListen(const std::string& listen, std::string* address, uint16_t* port) {
  std::string host, port_text;
  if (!listen.empty() && listen.front() == '[') {
    auto close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return Status::Invalid("listen '" + listen + "' must look like [::1]:7070");
    }
    host = listen.substr(1, close - 1);
    port_text = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return Status::Invalid("listen '" + listen + "' must be ADDR:PORT");
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
  }
  if (host.empty() || port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos || std::stoi(port_text) > 65535) {
    return Status::Invalid("listen '" + listen + "' must be ADDR:PORT with a port from 0 to 65535");
  }
  *address = host;
  *port = static_cast<uint16_t>(std::stoi(port_text));
  return Status::Ok();
}

Status ValidateDaemonConfig(const DaemonConfig& c) {
  std::string address;
  uint16_t port;
  GANTRY_RETURN_IF_ERROR(ParseListen(c.listen, &address, &port));
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return Status::Invalid("tls.certFile and tls.keyFile must be set together");
  }
  if (c.max_body_bytes < 1024 || c.max_body_bytes > (64u << 20)) {
    return Status::Invalid("maxBodyBytes must be from 1024 to 67108864");
  }
  auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  if (!in(c.read_timeout_seconds, 1, 3600)) return Status::Invalid("readTimeoutSeconds must be 1..3600");
  if (!in(c.idle_timeout_seconds, 1, 3600)) return Status::Invalid("idleTimeoutSeconds must be 1..3600");
  if (!in(c.shutdown_grace_seconds, 0, 600)) return Status::Invalid("shutdownGraceSeconds must be 0..600");
  // Several HTTP threads need a strand per connection, and that path is not
  // yet memory-safe on this toolchain (see http/server.cc): one thread only.
  if (c.http_threads != 1) return Status::Invalid("httpThreads must be 1 (more are not supported yet)");
  if (c.log_format != "text" && c.log_format != "json") return Status::Invalid("logFormat must be text or json");
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
  bool level_ok = false;
  for (const char* l : kLevels) level_ok |= c.log_level == l;
  if (!level_ok) return Status::Invalid("logLevel must be trace, debug, info, warn or error");
  if (!in(c.cluster_lost_timeout_seconds, 1, 7 * 86400)) {
    return Status::Invalid("clusterLostTimeoutSeconds must be 1..604800");
  }
  if (!in(c.credentials_refused_timeout_seconds, 0, 30 * 86400)) {
    return Status::Invalid("credentialsRefusedTimeoutSeconds must be 0..2592000 (0: never)");
  }
  if (!in(c.declared_lost_grace_seconds, 0, 86400)) {
    return Status::Invalid("declaredLostGraceSeconds must be 0..86400");
  }
  if (!in(c.finished_retention_seconds, 0, 7 * 86400)) {
    return Status::Invalid("finishedRetentionSeconds must be 0..604800");
  }
  if (!in(c.job_record_retention_seconds, 0, 3650 * 86400)) {
    return Status::Invalid("jobRecordRetentionSeconds must be 0..315360000 (0: for ever)");
  }
  if (c.lease_on != "Admitted" && c.lease_on != "QuotaReserved") {
    return Status::Invalid("leaseOn must be Admitted or QuotaReserved");
  }
  if (!in(c.dispatch_workers, 1, 256)) return Status::Invalid("dispatchWorkers must be 1..256");
  if (!in(c.dispatch_workers_min, 1, 256)) return Status::Invalid("dispatchWorkersMin must be 1..256");
  if (!in(c.cluster_connections, 1, 256)) return Status::Invalid("clusterConnections must be 1..256");
  if (!in(c.cluster_connections_min, 1, 256)) return Status::Invalid("clusterConnectionsMin must be 1..256");
  if (!in(c.cluster_stall_seconds, 1, 600)) return Status::Invalid("clusterStallSeconds must be 1..600");
  if (!in(c.probe_interval_seconds, 1, 3600)) return Status::Invalid("probeIntervalSeconds must be 1..3600");
  if (!in(c.probe_failure_threshold, 1, 10)) return Status::Invalid("probeFailureThreshold must be 1..10");
  if (!in(c.rejection_backoff_seconds, 1, 3600)) return Status::Invalid("rejectionBackoffSeconds must be 1..3600");
  if (!in(c.job_refusal_hold_seconds, 1, 86400)) return Status::Invalid("jobRefusalHoldSeconds must be 1..86400");
  if (!in(c.rejection_backoff_max_seconds, 1, 86400)) {
    return Status::Invalid("rejectionBackoffMaxSeconds must be 1..86400");
  }
  if (c.rejection_backoff_max_seconds < c.rejection_backoff_seconds) {
    return Status::Invalid(fmt::format("rejectionBackoffMaxSeconds ({}) must be at least rejectionBackoffSeconds ({})",
                                       c.rejection_backoff_max_seconds, c.rejection_backoff_seconds));
  }
  if (!in(c.list_errors_told_after_seconds, 1, 86400)) {
    return Status::Invalid("listErrorsToldAfterSeconds must be 1..86400");
  }
  if (!in(c.not_found_confirms_after_seconds, 1, 86400)) {
    return Status::Invalid("notFoundConfirmsAfterSeconds must be 1..86400");
  }
  if (!in(c.resync_seconds, 1, 3600)) return Status::Invalid("resyncSeconds must be 1..3600");
  if (!in(c.gc_interval_seconds, 1, 3600)) return Status::Invalid("gcIntervalSeconds must be 1..3600");
  if (!in(c.jobs_metric_seconds, 0, 3600)) {
    return Status::Invalid("jobsMetricSeconds must be 0..3600 (0: counted at each scrape)");
  }
  if (!in(c.resync_passes_per_second, 0, 100000)) {
    return Status::Invalid("resyncPassesPerSecond must be 0..100000 (0: the backstop never stretches)");
  }
  if (!in(c.preemption_gate_seconds, 0, 86400)) {
    return Status::Invalid("preemptionGateSeconds must be 0..86400 (0: no gates, every copy may preempt at once)");
  }
  if (!in(c.max_copies, 1, 1000)) return Status::Invalid("maxCopies must be 1..1000");
  if (c.origin.empty() || c.origin.size() > 63) return Status::Invalid("origin must be a label value of 1..63 characters");
  // It is the value of the label gantry finds its objects by: one the API
  // server refuses would fail every create.
  if (std::string e = CheckLabelValue(c.origin); !e.empty()) {
    return Status::Invalid(
        fmt::format("origin \"{}\" {} (it is the value of the label {})", c.origin, e, dispatch::kOriginLabel));
  }
  auto group_of = [](const KindRef& k) { return k.api_version.substr(0, k.api_version.find('/')); };
  for (std::size_t i = 0; i < c.generic_kinds.size(); ++i) {
    const KindRef& k = c.generic_kinds[i];
    const std::string at = fmt::format("genericKinds[{}]", i);
    if (k.api_version.find('/') == std::string::npos) {
      return Status::Invalid(at + ".apiVersion must be group/version (a custom resource's)");
    }
    if (auto path = dispatch::KindPath(k.api_version, k.kind, ""); !path.ok()) {
      return Status::Invalid(at + ": " + path.status().message());
    }
    if (dispatch::HasAdapter(k.api_version, k.kind)) {
      return Status::Invalid(at + ": " + k.kind + " has its own adapter and is always watched");
    }
    const std::string group = group_of(k);
    if (group == "kueue.x-k8s.io") return Status::Invalid(at + ": Kueue's own kinds are not jobs");
    for (std::size_t j = 0; j < i; ++j) {
      const KindRef& o = c.generic_kinds[j];
      if (o.kind == k.kind && group_of(o) == group) {
        return Status::Invalid(fmt::format("{}: {} of {} is listed already (genericKinds[{}]); list one version",
                                           at, k.kind, group, j));
      }
    }
  }
  return Status::Ok();
}

}  // namespace gantry
