// ClusterObserver (see the header). How it is built:
//
// Threads. Each watched cluster is a Cluster record with a thread per
// resource (Workloads, Jobs, JobSets, each generic kind), each with its own
// KubeClient running
// kube::ListWatch until the record's stop signal is set. SetClusters never
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
// that kind can be there unseen. A
// relist of Workloads or Jobs the cluster refuses (403: RBAC drift, a token
// that may no longer read them) does: the view cannot be brought up to date,
// so nothing may be concluded from it, and WatchRefused says why until a
// list succeeds. (A 401 is the prober's to judge: refused credentials.) A
// JobSet or generic path answering 404 (CRD not installed) or 403 (gantry
// may not list it there) counts as listed and empty, and is asked again
// every kUnservedRecheck. A 404 for Workloads or Jobs keeps the cluster unsynced:
// Kueue missing or the wrong version is a configuration error, not evidence
// of absence.
#include "gantry/dispatch/observer.h"
#include "gantry/common/json_path.h"
#include "gantry/common/stop_signal.h"
#include "gantry/common/thread_cache.h"
#include "gantry/common/thread_name.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <iterator>
#include <set>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/dispatch/remote_objects.h"
#include "gantry/kube/list_watch.h"
#include "observer_cache.h"

namespace gantry::dispatch {
namespace {

using nlohmann::json;
using observer_internal::Entry;
using observer_internal::JobIndex;
using observer_internal::ResourceCache;

// When a view fell behind, for operators (ClusterObserver::ViewBehind).
int64_t WallMillis() { return SystemClock().NowMillis(); }

// One watched resource of every cluster. The first is the Workloads.
struct Resource {
  std::string name;         // for logs
  std::string path;         // all namespaces; "" for the Workloads (their path is the cluster's version's)
  std::string kind;         // ObservedJob::kind ("" for the Workloads)
  std::string api_version;  // ObservedJob::api_version
  bool optional = false;    // a 404 means "not installed here": listed and empty
};

std::vector<Resource> ResourcesOf(const ObserverOptions& options) {
  std::vector<Resource> out = {
      {"workloads", "", "", "", false},
      {"jobs", "/apis/batch/v1/jobs", "Job", "batch/v1", false},
      {"jobsets", "/apis/jobset.x-k8s.io/v1alpha2/jobsets", "JobSet", "jobset.x-k8s.io/v1alpha2", true},
  };
  for (const GenericKind& g : options.generic_kinds) {
    auto path = KindPath(g.api_version, g.kind, "");
    if (!path.ok()) {  // the daemon's configuration check refuses these first
      spdlog::error("observer: generic kind {} {} not watched: {}", g.api_version, g.kind, path.status().message());
      continue;
    }
    out.push_back({g.kind + "." + g.api_version, *path, g.kind, g.api_version, true});
  }
  return out;
}

// How often a JobSet or generic path that answered 404 is asked again: the CRD may be installed later.
constexpr auto kUnservedRecheck = std::chrono::seconds(60);
// First wait after a failure of our own (client creation, an exception); doubled up to max_backoff.
constexpr auto kFirstBackoff = std::chrono::milliseconds(200);
// A watch stream is declared dead when silent this much longer than the server's own timeout.
constexpr auto kIdleMargin = std::chrono::seconds(30);

std::string PathOf(const Resource& r, inventory::KueueApiVersion version) {
  return r.path.empty() ? AllWorkloadsPath(version) : r.path;
}

std::string KeyOf(const json& o) {
  return JsonStringAt(o, {"metadata", "namespace"}) + "/" + JsonStringAt(o, {"metadata", "name"});
}

// The status members ParseWorkload and ParseJob read (observer_decode.cc;
// keep in step with them): the watch drops the rest before it is parsed.
std::set<std::string> StatusFieldsRead(const Resource& r) {
  if (r.kind.empty()) return {"conditions", "admissionChecks", "preemptionGates"};  // the Workloads
  if (!HasAdapter(r.api_version, r.kind)) return {"conditions"};  // generic kinds
  return {"conditions", "active", "succeeded", "failed", "replicatedJobsStatus", "restarts"};
}

std::optional<Entry> ToEntry(const Resource& r, const json& o) {
  std::string rv = JsonStringAt(o, {"metadata", "resourceVersion"});
  if (r.kind.empty()) {
    auto w = ParseWorkload(o);
    if (!w) return std::nullopt;
    return Entry{w->job_uid, std::move(rv), std::move(*w)};
  }
  auto j = ParseJob(r.kind, o);
  if (!j) return std::nullopt;
  j->api_version = r.api_version;
  return Entry{j->job_uid, std::move(rv), std::move(*j)};
}


// Whether a running watch of `a` also serves `b` (else it is restarted).
bool SameWatch(const ObservedCluster& a, const ObservedCluster& b) {
  return a.kueue_version == b.kueue_version && inventory::SameConnection(a.credentials, b.credentials);
}

}  // namespace

struct ClusterObserver::Impl {
  // One watched cluster: its configuration, its views and its threads.
  struct Cluster {
    Cluster(ObservedCluster c, std::size_t resources, JobIndex* index) : config(std::move(c)), caches(resources) {
      for (std::size_t r = 0; r < caches.size(); ++r) caches[r].Attach(index, &config.name, r);
    }
    const ObservedCluster config;
    std::vector<ResourceCache> caches;  // one per Impl::resources; guarded by Impl::mu
    // Relist() calls: each resource thread sees each one once (relist_now).
    std::atomic<uint64_t> relists{0};
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

  Impl(ObserverOptions o, OnChange cb)
      : options(std::move(o)), on_change(std::move(cb)), resources(ResourcesOf(options)) {}

  std::unique_ptr<Cluster> Start(const ObservedCluster& config) {
    auto c = std::make_unique<Cluster>(config, resources.size(), &index);
    c->running = static_cast<int>(resources.size());
    for (std::size_t r = 0; r < resources.size(); ++r) {
      c->threads.emplace_back([this, p = c.get(), r] {
        SetThreadName("watch-" + p->config.name);
        ForgoThreadCache();  // asleep most of the time: see thread_cache.h
        Run(p, r);
        --p->running;
      });
    }
    return c;
  }

  void Run(Cluster* c, std::size_t r) {
    kube::KubeClientOptions client_options;
    client_options.timeout = options.request_timeout;
    client_options.max_attempts = 1;  // ListWatch retries; one try keeps a request within the bound
    const std::string path = PathOf(resources[r], c->config.kueue_version);
    kube::ListWatchOptions lw;
    lw.label_selector = Selector();
    lw.watch_timeout_seconds = options.watch_timeout_seconds;
    auto watch_length = std::chrono::seconds(options.watch_timeout_seconds);
    lw.idle_timeout =
        std::max<std::chrono::milliseconds>(lw.idle_timeout, watch_length + kIdleMargin);
    lw.max_backoff = options.max_backoff;
    lw.stop_fd = c->stop_signal.fd();
    // An optional kind the cluster refuses (403) goes back to WaitUntilServed,
    // which counts it as empty there, as one it does not serve.
    bool optional_refused = false;
    lw.on_watch_failed = [this, c, r](const std::string&) { SetBehind(c, r, true); };
    uint64_t relists_seen = c->relists.load();
    lw.relist_now = [c, &relists_seen] {
      const uint64_t now = c->relists.load();
      if (now == relists_seen) return false;
      relists_seen = now;
      return true;
    };
    lw.on_list_failed = [this, c, r, &optional_refused](int status, const std::string& message) {
      if (resources[r].optional && status == 404) {
        // Its CRD uninstalled (or unserved for a moment, in an upgrade): no
        // object of the kind can be there unseen, so the view is not behind;
        // what it held stays (a JobSet briefly unserved still runs), and the
        // relist goes on with its backoff.
        SetBehind(c, r, false);
        return;
      }
      if (resources[r].optional && status == 403) {
        optional_refused = true;  // back to WaitUntilServed: empty there
        return;
      }
      SetBehind(c, r, true);
      // A 401 is the prober's to judge (CredentialsRefused): the token, not a permission.
      if (status != 403) return;
      bool first = false;
      {
        std::lock_guard lock(mu);
        if (c->stopping()) return;
        first = c->caches[r].refused.empty();
        c->caches[r].refused = fmt::format("listing {} answered {}: {}", resources[r].name, status, message);
        if (c->caches[r].listed) {
          c->caches[r].listed = false;
          PublishSyncedLocked();
        }
      }
      if (first) {
        spdlog::warn("observer: cluster {} refuses gantry the {} ({} {}): what its jobs do there is not followed "
                     "until it allows them again",
                     c->config.name, resources[r].name, status, message);
      }
    };
    // ToEntry reads metadata and a few spec and status fields: the pod
    // templates and admission details need not be parsed on every event.
    lw.only_fields = {{"spec", {"suspend", "active", "preemptionGates"}}, {"status", StatusFieldsRead(resources[r])}};
    auto backoff = std::chrono::milliseconds(kFirstBackoff);
    while (!c->stopping()) {
      try {
        auto client = kube::KubeClient::Create(c->config.credentials, client_options);
        if (!client.ok()) {
          spdlog::warn("observer: cluster {}: {}", c->config.name, client.status().message());
        } else if (!resources[r].optional || WaitUntilServed(c, **client, r, path)) {
          kube::ListWatch(
              **client, path, lw, [&](const std::vector<json>& items) { ApplyList(c, r, items); },
              [&](const kube::WatchEvent& e) { ApplyEvent(c, r, e); },
              [c, &optional_refused] { return c->stopping() || optional_refused; });
          optional_refused = false;
        }
      } catch (const std::exception& e) {
        // A malformed answer (or a throwing on_change): the view may be incomplete until relisted.
        spdlog::error("observer: cluster {} {}: {}", c->config.name, resources[r].name, e.what());
        std::lock_guard lock(mu);
        c->caches[r].listed = false;
        PublishSyncedLocked();
      }
      if (!c->Wait(backoff)) return;
      backoff = std::min(backoff * 2, options.max_backoff);
    }
  }

  // Whether the view of resource r in c may miss changes (until its next list).
  void SetBehind(Cluster* c, std::size_t r, bool behind) {
    std::lock_guard lock(mu);
    if (c->stopping() || c->caches[r].behind == behind) return;
    c->caches[r].SetBehind(behind, WallMillis());
    PublishSyncedLocked();
  }

  // While the path answers 404, the resource counts as listed and empty; so
  // it does while it answers 403 (gantry may not list it there: a kind it
  // does not use there should not hold every job of the cluster). True once
  // it answers anything else (ListWatch handles failures), false when stopping.
  bool WaitUntilServed(Cluster* c, kube::KubeClient& client, std::size_t r, const std::string& path) {
    kube::ListOptions probe;
    probe.label_selector = Selector();
    probe.limit = 1;
    for (int logged = 0; !c->stopping();) {
      auto reply = client.List(path, probe);
      if (!reply.ok() || (reply->status != 404 && reply->status != 403)) {
        SetUnserved(c, r, false);  // ListWatch's from here
        return true;
      }
      if (logged != reply->status && reply->status == 404) {
        spdlog::info("observer: cluster {} does not serve {} (404): empty, asked again every {}s",
                     c->config.name, resources[r].name, kUnservedRecheck.count());
      } else if (logged != reply->status) {
        spdlog::warn("observer: cluster {} refuses gantry a list of {} (403): counted as empty, asked again every "
                     "{}s; jobs of that kind cannot be followed there",
                     c->config.name, resources[r].name, kUnservedRecheck.count());
      }
      logged = reply->status;
      ApplyList(c, r, {});
      SetUnserved(c, r, true);
      if (!c->Wait(kUnservedRecheck)) return false;
    }
    return false;
  }

  // While unserved, a resource's thread waits in WaitUntilServed, not in
  // ListWatch: Relist() leaves it alone (it is listed, and empty, already).
  void SetUnserved(Cluster* c, std::size_t r, bool unserved) {
    std::lock_guard lock(mu);
    if (c->stopping()) return;
    c->caches[r].unserved = unserved;
    if (unserved && c->caches[r].behind) {  // a Relist() since the empty list
      c->caches[r].SetBehind(false, 0);
      PublishSyncedLocked();
    }
  }

  void ApplyList(Cluster* c, std::size_t r, const std::vector<json>& items) {
    std::map<std::string, Entry> fresh;
    for (const json& o : items) {
      if (auto e = ToEntry(resources[r], o)) fresh.emplace(KeyOf(o), std::move(*e));
    }
    std::set<std::string> changed;
    bool was_refused = false;
    {
      std::lock_guard lock(mu);
      if (c->stopping()) return;  // retired: out of the index for good
      c->caches[r].Replace(std::move(fresh), &changed);
      was_refused = !c->caches[r].refused.empty();
      c->caches[r].refused.clear();
      if (!c->caches[r].listed || c->caches[r].behind) {
        c->caches[r].listed = true;
        c->caches[r].SetBehind(false, 0);
        PublishSyncedLocked();
      }
    }
    if (was_refused) spdlog::info("observer: cluster {} allows gantry the {} again", c->config.name, resources[r].name);
    Notify(c, r, changed, ClusterObserver::Observed{});
  }

  void ApplyEvent(Cluster* c, std::size_t r, const kube::WatchEvent& e) {
    // BOOKMARK and ERROR change nothing. An object that lost its job-uid label is
    // no longer tracked: erased like a deleted one.
    if (e.type != "ADDED" && e.type != "MODIFIED" && e.type != "DELETED") return;
    std::optional<Entry> entry = e.type == "DELETED" ? std::nullopt : ToEntry(resources[r], e.object);
    ClusterObserver::Observed what;
    what.change = !entry ? Change::kGone : e.type == "ADDED" ? Change::kAppeared : Change::kChanged;
    if (entry && what.change == Change::kAppeared) {
      if (const auto* w = std::get_if<ObservedWorkload>(&entry->object)) {
        what.epoch = w->epoch;
        what.as_created = !w->quota_reserved && !w->admitted && !w->evicted && !w->finished;
      } else {
        const auto& j = std::get<ObservedJob>(entry->object);
        what.epoch = j.epoch;
        what.as_created = j.state == RemoteJobState::kSuspended;
      }
    }
    std::set<std::string> changed;
    {
      std::lock_guard lock(mu);
      if (c->stopping()) return;  // retired: out of the index for good
      if (entry) {
        c->caches[r].Put(KeyOf(e.object), std::move(*entry), &changed);
      } else {
        c->caches[r].Erase(KeyOf(e.object), &changed);
      }
    }
    Notify(c, r, changed, what);
  }

  void Notify(Cluster* c, std::size_t r, const std::set<std::string>& job_uids, ClusterObserver::Observed what) {
    what.cluster = c->config.name;
    what.kind = resources[r].kind.empty() ? kWorkload : kJob;
    for (const std::string& uid : job_uids) {
      if (c->stopping()) return;  // retired: its view is gone, and Stop() may be waiting
      what.job_uid = uid;
      on_change(what);
    }
  }

  std::string Selector() const { return std::string(kOriginLabel) + "=" + options.origin; }

  // Replaces `synced` and `behind` after a cluster's sync state may have changed.
  void PublishSyncedLocked() {
    auto now = std::make_shared<std::set<std::string>>();
    auto late = std::make_shared<std::set<std::string>>();
    for (const auto& [name, c] : clusters) {
      if (c->Synced()) now->insert(name);
      if (c->Behind()) late->insert(name);
    }
    if (*now != *synced) synced = std::move(now);
    if (*late != *behind) behind = std::move(late);
  }
  // Takes a cluster out of the view: its watches may still deliver, but
  // nothing they bring is read again (ApplyList and ApplyEvent skip it).
  void RetireLocked(std::unique_ptr<Cluster> c) {
    c->SignalStop();
    for (ResourceCache& cache : c->caches) cache.Detach();
    retired.push_back(std::move(c));
  }

  const ObserverOptions options;
  const OnChange on_change;
  const std::vector<Resource> resources;
  mutable std::mutex mu;
  bool stopped = false;                                      // guarded by mu
  std::map<std::string, std::unique_ptr<Cluster>> clusters;  // guarded by mu
  std::vector<std::unique_ptr<Cluster>> retired;  // stopping, not yet joined; guarded by mu
  JobIndex index;                                            // guarded by mu
  // The live clusters that are synced; replaced, never changed in place.
  std::shared_ptr<const std::set<std::string>> synced = SharedEmpty<std::set<std::string>>();  // guarded by mu
  // The live clusters whose view may miss changes (Cluster::Behind); likewise.
  std::shared_ptr<const std::set<std::string>> behind = SharedEmpty<std::set<std::string>>();  // guarded by mu
};

ClusterObserver::ClusterObserver(ObserverOptions options, OnChange on_change)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(on_change))) {}

ClusterObserver::~ClusterObserver() { Stop(); }

void ClusterObserver::SetClusters(const std::vector<ObservedCluster>& clusters) {
  std::vector<std::unique_ptr<Impl::Cluster>> ended;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped) return;
    std::map<std::string, const ObservedCluster*> wanted;
    for (const ObservedCluster& c : clusters) wanted[c.name] = &c;
    auto& live = impl_->clusters;
    for (auto it = live.begin(); it != live.end();) {
      auto w = wanted.find(it->first);
      if (w != wanted.end() && SameWatch(it->second->config, *w->second)) {
        ++it;
        continue;
      }
      impl_->RetireLocked(std::move(it->second));
      it = live.erase(it);
    }
    for (const auto& [name, config] : wanted) {
      if (!live.count(name)) live[name] = impl_->Start(*config);
    }
    impl_->PublishSyncedLocked();
    auto& retired = impl_->retired;
    auto ended_at = std::stable_partition(retired.begin(), retired.end(),
                                          [](const auto& c) { return c->running > 0; });
    std::move(ended_at, retired.end(), std::back_inserter(ended));
    retired.erase(ended_at, retired.end());
  }
  for (auto& c : ended) c->Join();  // their threads have ended: no wait
}

void ClusterObserver::Stop() {
  std::vector<std::unique_ptr<Impl::Cluster>> all;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopped = true;
    // Under mu, as on every retirement: a watch's next update sees the stop
    // and leaves the index alone.
    for (auto& [name, c] : impl_->clusters) impl_->RetireLocked(std::move(c));
    impl_->clusters.clear();
    impl_->PublishSyncedLocked();
    all.swap(impl_->retired);
  }
  for (auto& c : all) c->Join();  // every one signalled first: the waits overlap
}

JobObservation ClusterObserver::ForJob(const std::string& job_uid) const {
  JobObservation out;
  std::lock_guard lock(impl_->mu);
  out.synced = impl_->synced;
  out.behind = impl_->behind;
  for (const ResourceCache* cache : impl_->index.Of(job_uid)) {
    ClusterObservation& o = out.clusters[cache->cluster()];
    cache->ForJob(job_uid, [&](const Entry& e) {
      if (const auto* w = std::get_if<ObservedWorkload>(&e.object)) {
        o.workloads.push_back(*w);
      } else {
        o.jobs.push_back(std::get<ObservedJob>(e.object));
      }
    });
  }
  return out;
}

namespace {

// The first refusal among a cluster's resource caches ("" when none).
template <class Caches>
const std::string& FirstRefusal(const Caches& caches) {
  static const std::string kNone;
  for (const ResourceCache& cache : caches) {
    if (!cache.refused.empty()) return cache.refused;
  }
  return kNone;
}

}  // namespace

std::string ClusterObserver::WatchRefused(const std::string& cluster) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  return it == impl_->clusters.end() ? "" : FirstRefusal(it->second->caches);
}

std::map<std::string, std::string> ClusterObserver::WatchRefusals() const {
  std::map<std::string, std::string> out;
  std::lock_guard lock(impl_->mu);
  for (const auto& [name, c] : impl_->clusters) {
    if (const std::string& why = FirstRefusal(c->caches); !why.empty()) out.emplace(name, why);
  }
  return out;
}

bool ClusterObserver::Behind(const std::string& cluster) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  return it != impl_->clusters.end() && it->second->Behind();
}

ClusterObserver::BehindView ClusterObserver::ViewBehind(const std::string& cluster) const {
  BehindView out;
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  if (it == impl_->clusters.end()) return out;
  for (std::size_t r = 0; r < it->second->caches.size(); ++r) {
    const ResourceCache& cache = it->second->caches[r];
    if (!cache.behind) continue;
    out.resources.push_back(impl_->resources[r].name);
    if (out.since_ms == 0 || cache.behind_since_ms < out.since_ms) out.since_ms = cache.behind_since_ms;
  }
  return out;
}

void ClusterObserver::Relist(const std::string& cluster) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  if (it == impl_->clusters.end()) return;
  // Until each resource has listed again, its view may miss changes.
  const int64_t now = WallMillis();
  for (ResourceCache& cache : it->second->caches) {
    if (!cache.unserved) cache.SetBehind(true, now);
  }
  ++it->second->relists;
  impl_->PublishSyncedLocked();
}

bool ClusterObserver::Synced(const std::string& cluster) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  return it != impl_->clusters.end() && it->second->Synced();
}

std::vector<std::string> ClusterObserver::AllJobUids() const {
  std::lock_guard lock(impl_->mu);
  return impl_->index.Uids();
}

}  // namespace gantry::dispatch
