// ApiMetrics: the daemon's Prometheus metrics and their text exposition.
//
//   gantry_http_requests_total{method,route,code}
//   gantry_http_request_duration_seconds{method,route}      (histogram)
//   gantry_jobs{phase}                                      (gauge, counted off the loop: jobs_gauge.h)
//   gantry_store_commit_duration_seconds                     (histogram)
//   gantry_store_commit_writes                               (histogram: writes per commit)
//   gantry_dispatch_remote_calls_total{cluster,verb,code}    (code 0: no answer)
//   gantry_dispatch_transitions_total{from,to,step}          (dispatches: to=Nominating;
//                                                              leases: to=Admitted; requeues: to=Queued)
//   gantry_dispatch_admission_seconds                        (histogram: submit -> lease)
//   gantry_dispatch_write_conflicts_total                    (guarded writes that lost a race)
//   gantry_dispatch_passes_total{step}                       (reconciler passes by deciding ladder step)
//   gantry_job_records_expired_total                         (finished jobs' records deleted for their age)
//   gantry_cluster_*{cluster}                                (gauges of the fleet, set at scrape;
//                                                              src/api/cluster_metrics.h lists them)
//
// route is the matched route pattern, never the raw path, so label
// cardinality stays bounded.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include "gantry/dispatch/engine_metrics.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gantry/common/job_phase.h"
#include "gantry/inventory/fleet.h"

namespace gantry::api {

class ApiMetrics final : public dispatch::EngineMetrics {
 public:
  ApiMetrics();
  ~ApiMetrics() override;

  void RemoteCall(const std::string& cluster, const char* verb, int code) override;
  void Transition(JobPhase from, JobPhase to, const std::string& step) override;
  void Admitted(double seconds) override;
  void WriteConflict() override;
  void RecordsExpired(int count) override;
  void Lease(const std::string& cluster, bool won) override;
  void Pass(const std::string& step) override;

  void ObserveRequest(const std::string& method, const std::string& route, int code, double seconds);
  // A request the HTTP server answered by itself, before any route (a body
  // over the limit, a malformed or slow request): counted with method and
  // route "-" (no latency: it may not have been read whole).
  void CountServerAnswer(int code);
  void ObserveCommit(double seconds, int writes, bool synced);
  // A store commit that failed as a whole (a full disk, an I/O error): counted
  // (gantry_store_commit_failures_total), and its error kept until the next
  // commit succeeds, for /readyz.
  void ObserveCommitFailure(const std::string& error);
  // The last failed commit's error while no commit has succeeded since, else "".
  std::string StoreFailing() const;
  void SetJobsByPhase(const std::map<JobPhase, int64_t>& counts);
  // The fleet's gauges, in place of the previous scrape's (a removed cluster
  // leaves no series).
  // behind_since: see ClusterMetricFamilies.
  void SetClusters(const std::vector<inventory::ClusterView>& clusters, int64_t now_ms,
                   const std::map<std::string, int64_t>& behind_since = {},
                   const std::map<std::string, int>& connections_limit = {},
                   const std::map<std::string, int64_t>& stalled_for_ms = {});
  // Prometheus text format 0.0.4.
  std::string Serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gantry::api
