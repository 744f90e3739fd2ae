// DaemonConfig: the settings of `gantry serve`, read from a YAML file
// (config/gantry.example.yaml documents every field at its default) and
// overridden by command-line flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gantry/common/status.h"

namespace gantry {

// A Kubernetes kind by group/version and name.
struct KindRef {
  std::string api_version;  // group/version
  std::string kind;
};

struct DaemonConfig {
  // ADDR:PORT to listen on. Loopback by default: exposing the API is a choice.
  std::string listen = "127.0.0.1:7070";
  // Where gantry.db lives. "" = $STATE_DIRECTORY (systemd) or /var/lib/gantry.
  std::string data_dir;
  // Bearer tokens and their namespaces. "" = loopback clients only.
  std::string tokens_file;
  // Serve the API over TLS when both are set (PEM files).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Largest request body accepted (413 beyond).
  std::size_t max_body_bytes = 1 << 20;
  // Deadline for a whole request once its first byte arrived.
  int read_timeout_seconds = 10;
  // How long an idle keep-alive connection is kept.
  int idle_timeout_seconds = 60;
  // On SIGTERM, how long in-flight requests may take to finish.
  int shutdown_grace_seconds = 10;
  // Threads serving HTTP.
  int http_threads = 1;
  // trace | debug | info | warn | error
  std::string log_level = "info";
  // text | json
  std::string log_format = "text";
  // Cluster inventory directory (clusters.d); used once the inventory lands.
  std::string clusters_dir;
  // Value of the kueue.x-k8s.io/multikueue-origin label on remote objects.
  std::string origin = "gantry";
  // How long an owner cluster may be unreachable before its jobs' onClusterLoss
  // policy applies (measured from the first failed probe, kept across restarts).
  int cluster_lost_timeout_seconds = 900;
  // The same for an owner that answers but refuses gantry's credentials (its
  // jobs most likely run on): 0 = never lost while it refuses.
  int credentials_refused_timeout_seconds = 86400;
  // The same for an owner its inventory entry declares lost (declaredLost):
  // a short grace, so that one failed probe of a cluster being drained does
  // not move or fail every job it runs. 0 = once a probe finds it NotReady
  // (probeFailureThreshold).
  int declared_lost_grace_seconds = 60;
  // How long a job that finished in its cluster keeps its Workload and job
  // there (for kubectl: pods, logs) before gantry deletes them. 0 = at once.
  int finished_retention_seconds = 0;
  // How long gantry keeps a finished job's record (status, events) after
  // the job finished; then, once every object gantry made for it is seen
  // deleted, it is purged, as by `gantry cancel --purge`. 0 = for ever.
  int job_record_retention_seconds = 30 * 86400;
  // Admitted | QuotaReserved: the worker condition that wins the lease.
  std::string lease_on = "Admitted";
  // Reconciler threads, at most. A pass waits on its cluster calls, so with
  // distant clusters the round trips, not the cores, bound how many jobs a
  // second the workers and connections move (config/gantry.example.yaml
  // has the figures).
  int dispatch_workers = 128;
  // dispatchWorkersMin: passes at work at once to begin with, and while
  // the clusters answer late; up to dispatchWorkers while jobs wait for a
  // pass and they answer within twice their own round trip
  // (dispatch::EngineOptions::min_active_passes). Equal to dispatchWorkers
  // (or above it): always that many.
  int dispatch_workers_min = 32;
  // clusterConnections: keep-alive connections to each cluster, at most, and
  // so the requests gantry has in flight there at once
  // (kube::ClientPoolOptions::size). A pass asks a request of every cluster
  // it nominates at once, so with many workers a cluster's connections run
  // out before the workers do.
  int cluster_connections = 64;
  // clusterConnectionsMin: at least this many in flight; between it and
  // clusterConnections, each cluster's limit follows its round trips
  // (kube::ConcurrencyLimit). Equal to clusterConnections (or above it):
  // always that many.
  int cluster_connections_min = 16;
  // clusterStallSeconds: how long a request whose answer is late (its pass
  // went on without it) may stay out before its cluster counts as stalling:
  // one request at a time goes there, and placement leaves it out, until
  // it answers a write (kube::ClientPoolOptions::stall_after).
  int cluster_stall_seconds = 2;
  // Probe interval of a healthy cluster (readiness and quota).
  int probe_interval_seconds = 5;
  // Failed probes in a row that make a Ready cluster NotReady; the second
  // is a second after the first (inventory::FleetOptions::failure_threshold).
  int probe_failure_threshold = 2;
  // How old an epoch whose every copy an admission check rejected (or whose
  // owner rejected it before it ran) must be before the job is dispatched
  // again; doubled with each epoch of the job, up to the max.
  int rejection_backoff_seconds = 10;
  int rejection_backoff_max_seconds = 600;
  // How long a cluster that refused a job's real job (403, 404), or failed
  // every create of it (RemoteIntent::hold), is left out of that job's
  // dispatches (DecideOptions::job_refusal_hold_ms).
  int job_refusal_hold_seconds = 600;
  // preemptionGateSeconds: how long a job's Workload copies wait for an
  // admission that preempts nothing before one cluster may preempt for it
  // (then another a period after each); 0: no gates (DecideOptions::preemption_gate_ms).
  int preemption_gate_seconds = 60;
  // maxCopies: the most Workload copies one job has at once (an AllAtOnce
  // job's feasible clusters, best first; an Incremental job's widening
  // stops there). Each copy queues, and may preempt, in its worker although
  // only one runs the job (PlacementOptions::max_copies).
  int max_copies = 8;
  // listErrorsToldAfterSeconds: how long the lists of a watched resource in
  // a cluster may answer errors (other than 401 and 403; and 404 for
  // JobSets or a generic kind), none succeeding, before it counts as
  // refusing gantry the watch: of Workloads or Jobs, for every job it owns;
  // of another kind, for the jobs of that kind (ObserverOptions::list_errors_told_after).
  int list_errors_told_after_seconds = 60;
  // notFoundConfirmsAfterSeconds: in a cluster that answers but refuses
  // gantry the list of a kind, a withdrawn object read by name and not
  // found counts as deleted once its row has been withdrawn this long
  // (DecideOptions::not_found_confirms_after_ms): longer than any create of
  // it could still be at work in the API server.
  int not_found_confirms_after_seconds = 120;
  // resyncSeconds: how often a job in flight is looked at again while
  // nothing happens to it; resyncPassesPerSecond: past resyncSeconds x this
  // many jobs whose copies wait for admission or whose job runs (the
  // changes they wait for wake them, but for a widening to a cluster whose
  // quota was freed), their backstop stretches so that it
  // takes no more passes a second than this, up to an hour (0: never
  // stretched). DecideOptions::resync_ms and backstop_ms, BackstopMs.
  int resync_seconds = 30;
  int resync_passes_per_second = 100;
  // How often the garbage collector looks for objects of purged jobs left
  // in the clusters (EngineOptions::gc_interval_ms).
  int gc_interval_seconds = 60;
  // jobsMetricSeconds: gantry_jobs{phase} is counted (a COUNT over every
  // job) at most this often, off the server's loop; 0: for every scrape
  // (api::ApiOptions::jobs_count_refresh_ms).
  int jobs_metric_seconds = 15;
  // Kinds run by the generic adapter (spec.suspend, pod sets in the job
  // document) that gantry watches in every cluster, as it does Jobs and
  // JobSets: such jobs go Running, finish, and are withdrawn like a Job.
  // Each needs its CRD in the worker clusters that run it.
  std::vector<KindRef> generic_kinds;
};

// Reads path. Unknown fields, wrong types, bad values and a key with no
// value (YAML null: `origin:`, `dataDir: ~`) are errors naming the file,
// line and field; an empty string is written "".
Result<DaemonConfig> LoadDaemonConfig(const std::string& path);
// Checks values that flags may also have set.
Status ValidateDaemonConfig(const DaemonConfig& config);
// Splits "127.0.0.1:7070" / "[::1]:7070" into address and port.
Status ParseListen(const std::string& listen, std::string* address, uint16_t* port);

}  // namespace gantry
