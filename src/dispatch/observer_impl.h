// ClusterObserver::Impl (see observer.h), private to src/dispatch: shared by
// observer.cc (the clusters' lifecycle and the public methods) and
// observer_watch.cc (what each resource's watch thread does). How the
// observer is built:
//
// Threads. Each watched cluster is a Cluster record with a thread per
// resource (Workloads, Jobs, JobSets, each generic kind), each with its own
// KubeClient running kube::ListWatch until the record's stop signal is set. SetClusters never
// waits: a removed or replaced record is retired at once (hidden from readers,
// on_change muted) and joined by a later SetClusters once its threads have
// ended, or by Stop().
//
// Stop latency. A watch stream waits on the record's StopSignal beside its
// socket, so a quiet stream is woken only by data or by the stop (not every
// 100 ms to ask: 300 streams at 100 clusters made 3,000 wake-ups a second at
// rest); ListWatch's backoff sleeps check the flag every 100 ms. Stop()
// signals every thread before joining any, and returns within about one
// request (a list page or a connect; clients do not retry, ListWatch does)
// plus 100 ms. Our own waits (client creation retries, the JobSet recheck)
// wake at once.
//
// Behind since: stamped with ObserverOptions::clock (the engine's).
//
// Synced. A resource counts as listed from its first successful list since its
// thread started. A failed watch does not unsync it (as with client-go's
// HasSynced): the cluster stays reachable for its owned jobs. But the view may
// miss changes until ListWatch's relist replaces it, so the cluster counts as
// behind meanwhile (JobObservation::behind): an object absent from it may
// have been created since, and its absence proves nothing. Relist() (the
// engine calls it when the prober sees the cluster answer again) marks every
// resource of the cluster behind and has each list again: at once if it is
// waiting out a backoff, else at its watch's next clean end (a stream that
// went silent in a partition is thus replaced too). A JobSet or generic path
// whose relist answers 404 (its CRD uninstalled) is not behind: nothing of
// that kind can be there unseen. A relist of Workloads or Jobs the cluster refuses (403: RBAC drift, a token
// that may no longer read them) does: the view cannot be brought up to date,
// so nothing may be concluded from it, and WatchRefusals says why until a
// list succeeds. (A 401 is the prober's to judge: refused credentials.) A
// JobSet or generic path answering 404 (CRD not installed) counts as listed
// and empty, and is asked again every ObserverOptions::unserved_recheck; one answering 403
// (gantry may not list it there) is refused, for the jobs of that kind only
// (KindRefusals): they cannot be followed there. A 404 for Workloads or Jobs keeps the cluster unsynced:
// Kueue missing or the wrong version is a configuration error, not evidence
// of absence. Such an error (or a 500, say) to the lists of Workloads or
// Jobs, listed before or not, is told as a 403 is (WatchRefused) once it
// has lasted ObserverOptions::list_errors_told_after; until then the view
// is behind (or not listed yet). Any other error to an optional kind's
// lists (a JobSet conversion webhook's 500) is told after the same time,
// but only to the jobs of that kind (KindRefusals).
//
// Per kind. A job's view is synced (and behind) by its Workloads and the
// resource of its own kind only (Cluster::SyncedFor): a cluster whose
// JobSets cannot be listed still follows its Jobs, and the jobs of a kind
// not watched count their Workloads only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/clock.h"
#include "gantry/common/shared_empty.h"
#include "gantry/common/stop_signal.h"
#include "gantry/dispatch/observer.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/kube/list_watch.h"
#include "observer_cache.h"

namespace gantry::dispatch {

namespace observer_internal {

// One watched resource of every cluster. The first is the Workloads, the
// second the Jobs (ResourcesOf; SyncedForJobs relies on it).
struct Resource {
  std::string name;         // for logs
  std::string path;         // all namespaces; "" for the Workloads (their path is the cluster's version's)
  std::string kind;         // ObservedJob::kind ("" for the Workloads)
  std::string api_version;  // ObservedJob::api_version
  bool optional = false;    // a 404 means "not installed here": listed (empty, unless it held objects)
};

// The resources every cluster watches: Workloads, Jobs, JobSets, then the generic kinds.
std::vector<Resource> ResourcesOf(const ObserverOptions& options);

}  // namespace observer_internal

struct ClusterObserver::Impl {
  using Entry = observer_internal::Entry;
  using JobIndex = observer_internal::JobIndex;
  using Resource = observer_internal::Resource;
  using ResourceCache = observer_internal::ResourceCache;

  // One watched cluster: its configuration, its views and its threads.
  struct Cluster {
    Cluster(ObservedCluster c, std::size_t resources, JobIndex* index)
        : config(std::move(c)), caches(resources), relists(std::make_unique<std::atomic<uint64_t>[]>(resources)) {
      for (std::size_t r = 0; r < caches.size(); ++r) caches[r].Attach(index, &config.name, r);
    }
    const ObservedCluster config;
    std::vector<ResourceCache> caches;  // one per Impl::resources; guarded by Impl::mu
    // Which resources have listed (caches[r].listed) as last published,
    // and the stamp of its last change (Impl::listed_seq, shared by every
    // cluster, so a cluster added again never repeats an old value:
    // ListedChanges); guarded by Impl::mu.
    std::vector<bool> listed_seen;
    uint64_t listed_changes = 0;
    // Relist() calls that asked resource r to list again: its thread sees
    // each one once (relist_now).
    std::unique_ptr<std::atomic<uint64_t>[]> relists;
    // Set once: ends the watches (their waits watch its fd) and the loops.
    StopSignal stop_signal;
    std::atomic<int> running{0};  // threads not yet ended
    std::mutex wait_mu;
    std::condition_variable wait_cv;
    std::vector<std::thread> threads;

    bool Synced() const {  // REQUIRES: Impl::mu held
      return std::all_of(caches.begin(), caches.end(), [](const auto& c) { return c.listed; });
    }
    bool Behind() const {  // REQUIRES: Impl::mu held
      return std::any_of(caches.begin(), caches.end(), [](const auto& c) { return c.behind; });
    }
    // For a job of resource r's kind: its Workloads and r (r 0: the Workloads only).
    bool SyncedFor(std::size_t r) const {  // REQUIRES: Impl::mu held
      return caches[0].listed && caches[r].listed;
    }
    bool BehindFor(std::size_t r) const {  // REQUIRES: Impl::mu held
      return caches[0].behind || caches[r].behind;
    }
    bool stopping() const { return stop_signal.is_set(); }
    void SignalStop() {
      std::lock_guard lock(wait_mu);
      stop_signal.Set();
      wait_cv.notify_all();
    }
    // Waits for d unless stopped first; false when stopping.
    bool Wait(std::chrono::milliseconds d) {
      std::unique_lock lock(wait_mu);
      return !wait_cv.wait_for(lock, d, [&] { return stopping(); });
    }
    void Join() {
      for (std::thread& t : threads) t.join();
    }
  };

  Impl(ObserverOptions o, OnChange cb);

  // observer.cc: starts a cluster's threads.
  std::unique_ptr<Cluster> Start(const ObservedCluster& config);
  // observer_watch.cc: the watch thread of resource r in c, until c stops.
  void Run(Cluster* c, std::size_t r);
  // Whether the view of resource r in c may miss changes (until its next list).
  void SetBehind(Cluster* c, std::size_t r, bool behind);
  bool WaitUntilServed(Cluster* c, kube::KubeClient& client, std::size_t r, const std::string& path,
                       int64_t& unserved_since);
  void SetUnserved(Cluster* c, std::size_t r, bool unserved);
  void SetServedNot(Cluster* c, std::size_t r);
  void ForgetUnserved(Cluster* c, std::size_t r, int64_t for_ms);
  void ApplyList(Cluster* c, std::size_t r, const std::vector<nlohmann::json>& items);
  void ApplyEvent(Cluster* c, std::size_t r, const kube::WatchEvent& e);
  void Notify(Cluster* c, std::size_t r, const std::set<std::string>& job_uids, ClusterObserver::Observed what);
  // The label selector of gantry's objects: the origin label.
  std::string Selector() const;
  // The resource of a job's kind (matched by API group and kind), or 0 (the
  // Workloads) when the kind is not watched.
  std::size_t ResourceOf(const JobKind& kind) const;
  // The index of the named resource, or resources.size() when none is.
  std::size_t ResourceNamed(const std::string& name) const;
  // Replaces `synced_for` and `behind_for` after a cluster's sync state may have changed.
  void PublishSyncedLocked();
  // Takes a cluster out of the view: its watches may still deliver, but
  // nothing they bring is read again (ApplyList and ApplyEvent skip it).
  void RetireLocked(std::unique_ptr<Cluster> c);
  // When a view fell behind, for operators (ClusterObserver::ViewBehind).
  int64_t NowMillis() const { return clock->NowMillis(); }
  int64_t MonotonicMillis() const { return clock->MonotonicMillis(); }

  const ObserverOptions options;
  const OnChange on_change;
  const std::vector<Resource> resources;
  const Clock* const clock;  // options.clock, or the system clock
  mutable std::mutex mu;
  bool stopped = false;                                      // guarded by mu
  std::map<std::string, std::unique_ptr<Cluster>> clusters;  // guarded by mu
  std::vector<std::unique_ptr<Cluster>> retired;  // stopping, not yet joined; guarded by mu
  JobIndex index;                                            // guarded by mu
  observer_internal::FinishedGone finished_gone;             // guarded by mu
  // Per resource r, the live clusters synced for a job of r's kind
  // (Cluster::SyncedFor); replaced, never changed in place. Guarded by mu.
  std::vector<std::shared_ptr<const std::set<std::string>>> synced_for;
  uint64_t listed_seq = 0;  // stamps Cluster::listed_changes; guarded by mu
  // Per resource r, the live clusters whose view may miss changes for a job
  // of r's kind (Cluster::BehindFor); likewise.
  std::vector<std::shared_ptr<const std::set<std::string>>> behind_for;
};

}  // namespace gantry::dispatch
