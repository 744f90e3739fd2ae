// ClusterObserver (see observer.h and, for how it is built, observer_impl.h):
// the clusters' lifecycle and the public methods. The watch threads are in
// observer_watch.cc.
#include "gantry/dispatch/observer.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string_view>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/common/thread_cache.h"
#include "gantry/common/thread_name.h"
#include "gantry/dispatch/remote_objects.h"
#include "observer_impl.h"

namespace gantry::dispatch {

namespace observer_internal {

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

}  // namespace observer_internal

namespace {

using observer_internal::Entry;
using observer_internal::ResourceCache;

// Whether a running watch of `a` also serves `b` (else it is restarted).
bool SameWatch(const ObservedCluster& a, const ObservedCluster& b) {
  return a.kueue_version == b.kueue_version && inventory::SameConnection(a.credentials, b.credentials);
}

// The stamps of a view's falling behind when the options name no clock.
const SystemClock kSystemClock;

}  // namespace

std::string ClusterObserver::Impl::Selector() const { return fmt::format("{}={}", kOriginLabel, options.origin); }

ClusterObserver::Impl::Impl(ObserverOptions o, OnChange cb)
    : options(std::move(o)),
      on_change(std::move(cb)),
      resources(observer_internal::ResourcesOf(options)),
      clock(options.clock ? options.clock : &kSystemClock),
      synced_for(resources.size(), SharedEmpty<std::set<std::string>>()),
      behind_for(resources.size(), SharedEmpty<std::set<std::string>>()) {}

std::unique_ptr<ClusterObserver::Impl::Cluster> ClusterObserver::Impl::Start(const ObservedCluster& config) {
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

namespace {

// "batch" of "batch/v1"; "" for the core group ("v1").
std::string_view GroupOf(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view{} : api_version.substr(0, slash);
}

}  // namespace

std::size_t ClusterObserver::Impl::ResourceOf(const JobKind& kind) const {
  for (std::size_t r = 1; r < resources.size(); ++r) {
    if (resources[r].kind == kind.kind && GroupOf(resources[r].api_version) == GroupOf(kind.api_version)) return r;
  }
  return 0;
}

std::size_t ClusterObserver::Impl::ResourceNamed(const std::string& name) const {
  for (std::size_t r = 0; r < resources.size(); ++r) {
    if (resources[r].name == name) return r;
  }
  return resources.size();
}

// Replaces `synced_for` and `behind_for` after a cluster's sync state may have changed.
void ClusterObserver::Impl::PublishSyncedLocked() {
  for (const auto& [name, c] : clusters) {
    std::vector<bool> listed(c->caches.size());
    for (std::size_t r = 0; r < c->caches.size(); ++r) listed[r] = c->caches[r].listed;
    if (listed != c->listed_seen) {
      c->listed_seen = std::move(listed);
      c->listed_changes = ++listed_seq;
    }
  }
  for (std::size_t r = 0; r < resources.size(); ++r) {
    auto now = std::make_shared<std::set<std::string>>();
    auto late = std::make_shared<std::set<std::string>>();
    for (const auto& [name, c] : clusters) {
      if (c->SyncedFor(r)) now->insert(name);
      if (c->BehindFor(r)) late->insert(name);
    }
    if (*now != *synced_for[r]) synced_for[r] = std::move(now);
    if (*late != *behind_for[r]) behind_for[r] = std::move(late);
  }
}
// Takes a cluster out of the view: its watches may still deliver, but
// nothing they bring is read again (ApplyList and ApplyEvent skip it).
void ClusterObserver::Impl::RetireLocked(std::unique_ptr<Cluster> c) {
  c->SignalStop();
  for (ResourceCache& cache : c->caches) cache.Detach();
  retired.push_back(std::move(c));
}

std::size_t ClusterObserver::WatchedKinds(const ObserverOptions& options) {
  return observer_internal::ResourcesOf(options).size();
}

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

std::string ClusterObserver::OptionalResourceOf(const JobKind& kind) const {
  const std::size_t r = impl_->ResourceOf(kind);
  return r > 0 && impl_->resources[r].optional ? impl_->resources[r].name : std::string();
}

JobObservation ClusterObserver::ForJob(const std::string& job_uid, const JobKind& kind) const {
  JobObservation out;
  const std::size_t r = impl_->ResourceOf(kind);
  if (r > 0) out.resource = impl_->resources[r].name;
  std::lock_guard lock(impl_->mu);
  out.synced = impl_->synced_for[r];
  out.behind = impl_->behind_for[r];
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
  impl_->finished_gone.ForJob(job_uid, &out.finished_gone);
  return out;
}

namespace {

// The first refusal among a cluster's resource caches of Workloads and
// Jobs ("" when none); an optional kind's are KindRefusals'.
const std::string& FirstRefusal(const std::vector<ResourceCache>& caches,
                                const std::vector<observer_internal::Resource>& resources) {
  static const std::string kNone;
  for (std::size_t r = 0; r < caches.size(); ++r) {
    if (!resources[r].optional && !caches[r].refused.empty()) return caches[r].refused;
  }
  return kNone;
}

}  // namespace

std::map<std::string, std::string> ClusterObserver::WatchRefusals() const {
  std::map<std::string, std::string> out;
  std::lock_guard lock(impl_->mu);
  for (const auto& [name, c] : impl_->clusters) {
    if (const std::string& why = FirstRefusal(c->caches, impl_->resources); !why.empty()) {
      out.emplace(name, why);
    }
  }
  return out;
}

std::map<std::string, std::map<std::string, std::string>> ClusterObserver::KindRefusals() const {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::lock_guard lock(impl_->mu);
  for (const auto& [name, c] : impl_->clusters) {
    for (std::size_t r = 0; r < c->caches.size(); ++r) {
      if (impl_->resources[r].optional && !c->caches[r].refused.empty()) {
        out[name].emplace(impl_->resources[r].name, c->caches[r].refused);
      }
    }
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

std::size_t ClusterObserver::Relist(const std::string& cluster, int64_t listed_since_ms) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  if (it == impl_->clusters.end()) return 0;
  // Until each resource has listed again, its view may miss changes.
  const int64_t now = impl_->NowMillis();
  std::size_t asked = 0;
  for (std::size_t r = 0; r < it->second->caches.size(); ++r) {
    ResourceCache& cache = it->second->caches[r];
    const bool unserved = cache.unserved && cache.refused.empty();  // nothing of it there to miss
    const bool fresh = cache.listed && !cache.behind && cache.refused.empty() && cache.listed_ms >= listed_since_ms;
    if (listed_since_ms > 0 && (unserved || fresh)) continue;
    if (!cache.unserved) cache.SetBehind(true, now);
    ++it->second->relists[r];
    ++asked;
  }
  impl_->PublishSyncedLocked();
  return asked;
}

bool ClusterObserver::Synced(const std::string& cluster) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  return it != impl_->clusters.end() && it->second->Synced();
}

std::set<std::string> ClusterObserver::Unlisted(const std::string& cluster) const {
  std::set<std::string> unlisted;
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  if (it == impl_->clusters.end()) return unlisted;
  for (std::size_t r = 0; r < impl_->resources.size(); ++r) {
    if (!it->second->caches[r].listed) unlisted.insert(impl_->resources[r].name);
  }
  return unlisted;
}

uint64_t ClusterObserver::ListedChanges(const std::string& cluster) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  return it == impl_->clusters.end() ? 0 : it->second->listed_changes;
}

bool ClusterObserver::SyncedForJobs(const std::string& cluster) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  return it != impl_->clusters.end() && it->second->SyncedFor(1);  // resource 1: the Jobs (ResourcesOf)
}

bool ClusterObserver::Listed(const std::string& cluster, const std::string& resource) const {
  const std::size_t r = impl_->ResourceNamed(resource);
  if (r == impl_->resources.size()) return true;  // not watched (any more): nothing to list
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clusters.find(cluster);
  return it != impl_->clusters.end() && it->second->caches[r].listed;
}

std::vector<std::string> ClusterObserver::JobUidsIn(const std::string& cluster) const {
  std::vector<std::string> uids;
  {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->clusters.find(cluster);
    if (it == impl_->clusters.end()) return uids;
    for (const ResourceCache& cache : it->second->caches) {
      cache.ForEachUid([&](const std::string& uid) { uids.push_back(uid); });
    }
  }
  // A job's Workload and its real job are in two caches.
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  return uids;
}

std::vector<std::string> ClusterObserver::AllJobUids() const {
  std::lock_guard lock(impl_->mu);
  return impl_->index.Uids();
}

}  // namespace gantry::dispatch
