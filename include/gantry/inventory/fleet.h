// Fleet: the live cluster registry. It loads clusters.d, keeps each cluster's
// credentials, health and capacity reading, and probes every cluster from a
// few worker threads: a probe (readiness, the ClusterQueues' quota and usage,
// and where each LocalQueue leads) every probe_interval while it answers,
// with capped exponential backoff while it does not (see backoff.h).
//
// The start of a cluster's current outage (first_lost) is written to the
// store when the outage begins and cleared when it ends, and restored at
// Start, so the cluster-lost timeout survives a daemon restart.
//
// Capacity is a hint for nomination, never a promise: a reading older than
// stale_after counts as unknown (placement then ignores usage).
//
// Thread-safety: every public method is safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gantry/common/clock.h"
#include "gantry/inventory/cluster_config.h"
#include "gantry/inventory/cluster_dir.h"
#include "gantry/inventory/cluster_health.h"
#include "gantry/inventory/kubeconfig.h"
#include "gantry/placement/cluster_snapshot.h"
#include "gantry/store/cluster_state_store.h"

namespace gantry::inventory {

// What one probe of a cluster learned.
struct CapacityReading {
  // Summed over every ClusterQueue and flavor: what `gantry clusters`, the
  // cluster API view and the metrics show.
  std::map<std::string, placement::ResourceQuota> quota;
  int32_t pending_workloads = 0;
  std::vector<std::string> cluster_queues;
  // Each ClusterQueue and where each LocalQueue leads, for placement to
  // judge a job against its own ClusterQueue; shared, as every placement
  // copies it into its snapshot. Set with every reading that is not
  // unreadable (its local_queues_known false when the LocalQueues could not
  // be listed); null only from probers that do not describe queues.
  std::shared_ptr<const placement::ClusterQueues> queues;
  // Non-empty: the cluster answers and takes gantry's credentials, but its
  // ClusterQueues cannot be read: they may not list them (RBAC: 403),
  // they are not served (404: no Kueue at that version), the list fails
  // (5xx), or it holds what is not a quantity. There is no reading. It is
  // Ready for the jobs it runs (a capacity problem never changes a
  // cluster's health); the last reading, if any, goes stale.
  std::string unreadable;
  // The uid of the cluster's kube-system Namespace: its identity by custom,
  // which tells two inventory entries that reach one cluster ("" when it
  // cannot be read: RBAC, an API server that has none).
  std::string cluster_id;
  // The HTTP status of that read (0: no answer), for a cluster_id not read,
  // and whether it was the API server's refusal (a Kubernetes Status 401 or
  // 403 over a verified connection, as the probe judges /readyz's).
  int cluster_id_status = 0;
  bool cluster_id_refused = false;
  // How far the cluster's clock is ahead of gantry's (negative: behind), in
  // ms, to within about a second, from the Date of its /readyz answer; unset
  // when that could not be told (no Date header, a slow round trip).
  std::optional<int64_t> clock_offset_ms;

  // A reading of nothing, for that reason.
  static CapacityReading Unreadable(std::string why) {
    CapacityReading none;
    none.unreadable = std::move(why);
    return none;
  }
};

// The seam to the clusters: the real one speaks HTTPS (kube/), tests fake it.
class ClusterProber {
 public:
  virtual ~ClusterProber() = default;
  // Blocking, with its own deadline. Errors are free of secrets. Code
  // kUnauthenticated or kPermissionDenied means the cluster answered but
  // refused the credentials (or none could be had): it is up, and the
  // outage gets the longer refused_timeout_ms (ClusterHealth::OnProbeRefused).
  // A reading with `unreadable` set: Ready, with no new quota figures.
  virtual Result<CapacityReading> Probe(const ClusterConfig& config, const ClusterCredentials& creds) = 0;
  // The daemon stops (Fleet::Stop): a probe in flight ends at once, and so
  // does any later one, with an error the fleet then drops.
  virtual void Stop() {}
};

struct FleetOptions {
  std::string clusters_dir;                // "" = no clusters
  int64_t probe_interval_ms = 5'000;       // between probes of a healthy cluster
  int64_t stale_after_ms = 30'000;         // a capacity reading older than this is unknown
  int64_t lost_timeout_ms = 15 * 60'000;   // NotReady this long = Lost (clusterLostTimeout)
  // The same while it refuses the credentials (credentialsRefusedTimeout;
  // 0 = never lost while it refuses).
  int64_t refused_timeout_ms = 24 * 3600'000;
  BackoffPolicy backoff;                   // while a cluster does not answer
  // probeFailureThreshold: failed probes in a row that make a Ready cluster
  // NotReady (ClusterHealth::failure_threshold), and the delay before the
  // probe that confirms a first failure, rather than the backoff's 2.5-5 s:
  // a cluster that went away is out of placement a second later than with
  // a threshold of 1, while one that fails a probe in five stays in.
  int failure_threshold = 2;
  int64_t doubt_probe_ms = 1'000;
  // How long each request of a probe waits for an answer (the prober's
  // deadline). A probe that waited one out (DeadlineExceeded: no answer to
  // a connect or a request in time) is no flake: the cluster is NotReady at
  // once, rather than a second deadline later (a silent partition is out of
  // placement ~6 s after it began, not ~12 s), and the probe shows it
  // silent for this long at most before its end, whatever its earlier
  // requests took.
  int64_t probe_deadline_ms = 5'000;
  // Threads probing in parallel, so a cluster that stalls until its probe's
  // deadline does not hold up the probes of the others: at least
  // probe_workers, one more for each clusters_per_probe_worker clusters
  // beyond, at most max_probe_workers (grown at a reload, never shrunk).
  // Clusters out of reach (NotReady: each probe may wait out its deadline,
  // a zone's worth at once) may take all of them but one, which keeps the
  // Ready clusters' readings fresh meanwhile.
  int probe_workers = 4;
  int clusters_per_probe_worker = 8;
  int max_probe_workers = 64;
};

struct ClusterView {
  ClusterConfig config;
  ClusterHealth health;
  std::optional<CapacityReading> capacity;
  int64_t capacity_at_ms = 0;   // when capacity was read
  std::string credentials_error;  // kubeconfig problems (the cluster is not probed)
  // The kubeconfig failed to load at a reload, and the last good
  // credentials are kept in use: the error, for the operator to fix.
  std::string credentials_warning;
  // The cluster's file was refused at a reload, and its last good entry is
  // kept in use: the error (file, line, field), for the operator to fix.
  std::string config_warning;
  std::string capacity_error;     // CapacityReading::unreadable of the last probe
  // CapacityReading::cluster_id of its last probe that read one (kept when
  // its kubeconfig moves to another server: HoldIfOtherCluster), while the
  // entry is not held for it (config_error): the cluster it reaches.
  std::string cluster_id;
  // CapacityReading::clock_offset_ms of its last probe that told one (kept
  // while later ones cannot): times the cluster writes, on gantry's clock.
  std::optional<int64_t> clock_offset_ms;
  bool clock_offset_far = false;  // a warning told it far off gantry's, and no reading since told it back
  // Set on a placeholder (ClusterPlaceholder): the cluster's file is refused
  // with no last good entry kept, so only its name is known (config holds
  // just name and source_file, and there are no credentials). Which file,
  // and why, for the operator to fix. It is not removed: a removed owner's
  // jobs are lost at once, and this cluster most likely runs them on.
  std::string config_error;

  // Whether gantry can reach the cluster: not without credentials
  // (credentials_error) nor as a placeholder (config_error). An entry that
  // is not usable is never probed or watched and takes no new job; its
  // health stays what it was (Unknown after a start, with any outage
  // restored from the store), so no clusterLostTimeout runs and the jobs it
  // owns wait, as they are, until it is usable.
  bool Usable() const { return credentials_error.empty() && config_error.empty(); }
};

// What a reload changed in the inventory: the clusters it added and
// removed (by name), and each removed one whose API server an added one
// names too: most likely an entry renamed, which gantry cannot tell from a
// cluster removed and another added (the jobs the old name owns get their
// onClusterLoss, as for any cluster removed).
struct InventoryChange {
  std::vector<std::string> added, removed;
  std::vector<std::pair<std::string, std::string>> same_server;  // (removed, added)
  // Clusters whose file changed, and what in it: (name, "cordoned, region
  // eu-west-1 -> us-east-1, labels").
  std::vector<std::pair<std::string, std::string>> changed;
  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
  // "added c3b; removed c3 (c3b names the same API server: ...); changed c1
  // (cordoned)"; "" when nothing was added, removed or changed.
  std::string Describe() const;
};

class Fleet {
 public:
  Fleet(ClusterProber& prober, ClusterStateStore& store, const Clock& clock, FleetOptions options);
  ~Fleet();  // Stop()s

  // Loads the directory, restores persisted outages, starts probing.
  // Returns the per-file errors (the other clusters work).
  std::vector<ClusterFileError> Start();
  // The daemon stops: no probe starts from now on, one in flight ends at
  // once and its failure is dropped, and every cluster's credential plugin
  // run in progress is killed (none starts after). Does not wait.
  void BeginStop();
  // BeginStop, then waits for the probe threads.
  void Stop();
  // Re-reads the directory (SIGHUP, POST /api/v1/clusters:reload). A file
  // that breaks keeps its cluster's last good entry. At Start and here, a
  // refused file with none keeps its cluster as a placeholder
  // (ClusterView::config_error) until it loads.
  // change, when given, says which clusters the reload added and removed.
  std::vector<ClusterFileError> Reload(InventoryChange* change = nullptr);
  // Whether the last Start or Reload could list the directory. A reload that
  // cannot keeps every entry as it was; a daemon whose start cannot must not
  // run on an empty inventory (every job the store gives a cluster would
  // count as lost), so it refuses to start.
  Status DirStatus() const;
  // Whether Start could read what the store kept of the clusters (their
  // outages, their identities). A daemon must not run without it: each
  // outage would start over, and a cluster rebuilt at an entry's address
  // would be taken for the one its jobs ran in (their runs there taken for
  // vanished, and started again beside the old ones).
  Status StateStatus() const;

  std::vector<ClusterView> Clusters() const;  // by name
  // The clusters NotReady at their last probe (and usable: credentials and
  // file load), each with its outage's start and whether it refuses
  // gantry's credentials: cheaper than Clusters() for a reader of that alone.
  struct Outage {
    int64_t since_ms = 0;
    bool credentials_refused = false;
  };
  std::map<std::string, Outage> Outages() const;
  std::optional<ClusterView> Cluster(const std::string& name) const;
  // The cluster's credentials; nullopt when unknown or its kubeconfig failed.
  // Tokens are shared (TokenSource), so rotation reaches every copy.
  std::optional<ClusterCredentials> Credentials(const std::string& name) const;
  // The placement view of every cluster at now_ms.
  std::vector<placement::ClusterSnapshot> Snapshot(int64_t now_ms) const;

  // Probes every cluster once, now, on the calling thread (tests).
  void ProbeAllNow();
  // Brings the next probe of a cluster whose last probe failed forward to
  // now: something else (its watches list again) says it may answer, and
  // its probes may be backed off for up to 30 s; one being probed is
  // probed again once that probe ends. Returns whether a probe was brought
  // forward (false: not NotReady, no credentials, not in the inventory, or
  // due already).
  bool ProbeSoon(const std::string& name);
  // Changes each time a cluster's health changes (Ready, NotReady, refused),
  // its quota becomes unreadable or readable again (capacity_error), where
  // its LocalQueues lead changes (ClusterQueues::stamp), or the
  // inventory is (re)loaded: a cached view of Clusters() older than
  // a change is known to be stale. A change seen in Clusters() has already
  // changed this.
  uint64_t Generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    ClusterView view;
    std::optional<ClusterCredentials> creds;
    int64_t next_probe_ms = 0;  // when its next probe falls due (Clock::MonotonicMillis)
    bool probing = false;  // a worker has it in hand
    bool reprobe = false;  // reloaded (or ProbeSoon) while probing: probe again once this probe ends
    int read_doubts = 0;   // readings in a row worse than the last good one, not taken yet (TakeReading)
    // How long its latest failed probe waited for an answer that never came
    // (0: it failed at once): the probe that may find it lost goes that much
    // before clusterLostTimeout, so that it ends there.
    int64_t silent_wait_ms = 0;
    // The API server (ServerKey) on which a probe last read the entry's
    // identity (view.cluster_id); "" when none has since the start (it was
    // restored from the store) or since a refused file held the entry. On
    // any other server, a probe that cannot read the identity is a failed
    // one, not a Ready answer from what may be another cluster.
    std::string identity_read_at;
    // Why the log last said it is NotReady: a later failure for another
    // reason (a refused connection becoming a certificate error, say) is
    // told too, not only the change of state.
    std::string told_reason;
  };
  void TakeReading(const std::string& name, Entry& e, CapacityReading reading, int64_t now, int64_t mono,
                   bool was_ready);
  static ClusterView ViewOf(const Entry& e);  // REQUIRES: mu_ held
  std::vector<ClusterFileError> Load(InventoryChange* change = nullptr);
  // The entry `name` has, or a new one with the outage restored for it at
  // Start. REQUIRES: load_mu_ held, mu_ not.
  Entry Existing(const std::string& name) const;
  // The entry a refused file's cluster is held as (ClusterView::config_error).
  Entry Held(const ClusterPlaceholder& placeholder) const;
  // Holds the entries of next that reach an API server another entry
  // reaches too, but the one that reached it before (same_server.cc), and
  // adds to errors why. REQUIRES: load_mu_ held, mu_ not.
  void HoldSameServer(std::map<std::string, Entry>& next, std::vector<ClusterFileError>& errors) const;
  // The API server creds reach, whatever its URL's spelling (same_server.cc).
  static std::string ServerKey(const ClusterCredentials& creds);
  // A probe of `name` (entry e) read cluster_id, which another usable entry
  // read before: e reaches that cluster too, by another address. Holds e
  // (ClusterView::config_error) and says so; false when no other entry has
  // it (same_server.cc). REQUIRES: mu_ held.
  bool HoldIfSameCluster(const std::string& name, Entry& e, const std::string& cluster_id);
  // Holds e when cluster_id, read by its probe, is not the identity it had
  // (same_server.cc). REQUIRES: mu_ held.
  bool HoldIfOtherCluster(const std::string& name, Entry& e, const std::string& cluster_id);
  void Run();
  // Starts probe workers up to what the inventory's size asks for
  // (FleetOptions::probe_workers).
  void GrowWorkers();
  void ProbeOne(const std::string& name);
  // Deletes a cluster's persisted outage (it left the inventory, or is
  // reached again). Only queues the write. REQUIRES: mu_ held, so that the
  // store keeps the order of a forgetting and a probe's save (ProbeOne).
  void ForgetOutage(const std::string& name);
  // Saves (or, with "", clears) the identity an entry reaches in the store.
  void SaveClusterId(const std::string& name, const std::string& cluster_id);
  // Ends the claim (Entry::probing) on a cluster probed. REQUIRES: mu_ held.
  void ReleaseLocked(const std::string& name);

  ClusterProber& prober_;
  ClusterStateStore& store_;
  const Clock& clock_;
  FleetOptions options_;
  std::mutex load_mu_;  // one Load at a time (a SIGHUP and an API reload); taken before mu_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;
  std::map<std::string, ClusterOutage> restored_outages_;
  // The identities the store kept (ClusterStateStore::LoadClusterIds), for
  // the entries loads make: one is dropped once its entry is made, or once
  // a reload (not the load at Start) finds no file for it. Guarded by
  // load_mu_.
  std::map<std::string, std::string> restored_ids_;
  bool loaded_ = false;  // a Load has run (the one at Start); guarded by load_mu_
  Status dir_status_;  // guarded by mu_; see DirStatus()
  Status state_status_;  // set by Start; see StateStatus()
  std::mt19937 rng_{std::random_device{}()};
  bool stopping_ = false;
  int workers_started_ = 0;  // guarded by mu_
  int probing_out_ = 0;      // workers probing a NotReady cluster; guarded by mu_
  std::mutex workers_mu_;    // guards workers_; taken before mu_
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};  // see Generation(); bumped under mu_
};

}  // namespace gantry::inventory
