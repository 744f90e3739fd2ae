// ClusterObserver::Impl's watch threads (see observer_impl.h): each lists
// and watches one resource of one cluster and keeps its view current.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/common/json_path.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/kube/kube_client.h"
#include "observer_impl.h"

namespace gantry::dispatch {
namespace {

using nlohmann::json;
using observer_internal::Entry;
using observer_internal::Resource;

// First wait after a failure of our own (client creation, an exception); doubled up to max_backoff.
constexpr auto kFirstBackoff = std::chrono::milliseconds(200);

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

// The metadata members a watch event's object is read for: ParseWorkload
// and ParseJob (observer_decode.cc), KeyOf and ToEntry here, and the
// resume point and bookmarks (KubeClient::Watch); keep in step with them.
// A real API server sends managedFields with every object, often larger
// than the rest of it: the watch drops it, and what else goes unread
// (ownerReferences, finalizers), before it is parsed.
std::set<std::string> MetadataFieldsRead() {
  return {"name", "namespace", "uid", "labels", "annotations", "resourceVersion", "deletionTimestamp",
          "creationTimestamp"};
}

std::optional<Entry> ToEntry(const Resource& r, const json& o) {
  if (r.kind.empty()) {
    auto w = ParseWorkload(o);
    if (!w) return std::nullopt;
    std::string rv = w->resource_version;  // ParseWorkload read it
    return Entry{w->job_uid, std::move(rv), std::move(*w)};
  }
  auto j = ParseJob(r.kind, o);
  if (!j) return std::nullopt;
  j->api_version = r.api_version;
  return Entry{j->job_uid, JsonStringAt(o, {"metadata", "resourceVersion"}), std::move(*j)};
}

}  // namespace

void ClusterObserver::Impl::Run(Cluster* c, std::size_t r) {
  kube::KubeClientOptions client_options;
  client_options.timeout = options.request_timeout;
  client_options.max_attempts = 1;  // ListWatch retries; one try keeps a request within the bound
  client_options.stop_fd = c->stop_signal.fd();  // a list in flight does not hold the cluster's retirement
  const std::string path = PathOf(resources[r], c->config.kueue_version);
  kube::ListWatchOptions lw;
  lw.log_name = "observer: cluster " + c->config.name;  // as the observer's other lines begin
  lw.label_selector = Selector();
  lw.watch_timeout_seconds = options.watch_timeout_seconds;
  // Not at least ListWatchOptions' default (120 s): a stream that died
  // without a reset (a control-plane node gone) must not leave the view
  // quietly stale, and not behind, for two minutes.
  lw.idle_timeout = options.SilentWatchFoundAfter();
  lw.max_backoff = options.max_backoff;
  lw.stop_fd = c->stop_signal.fd();
  lw.on_watch_failed = [this, c, r](const std::string&) { SetBehind(c, r, true); };
  uint64_t relists_seen = c->relists[r].load();
  lw.relist_now = [c, r, &relists_seen] {
    const uint64_t now = c->relists[r].load();
    if (now == relists_seen) return false;
    relists_seen = now;
    return true;
  };
  // When this view's lists began to answer errors, none succeeding since
  // (ObserverOptions::clock; 0: they do not): a view that keeps failing for
  // list_errors_told_after is told to the jobs as a 403 is, and a blip (a
  // 429, an etcd election) is not.
  int64_t lists_failing_since = 0;
  // An optional kind the cluster refuses (403), told at once: its list is
  // asked again every unserved_recheck, not at ListWatch's backoff (a
  // cluster that does not grant gantry JobSets may never do).
  bool optional_refused = false;
  // When an optional kind's lists began to answer 404, none succeeding
  // since (0: they do not).
  int64_t unserved_since = 0;
  lw.on_list_failed = [this, c, r, &lists_failing_since, &optional_refused, &unserved_since](
                          int status, const std::string& message) {
    if (resources[r].optional && status == 404) {
      // Its CRD uninstalled (or unserved for a moment, in an upgrade): no
      // object of the kind can be there unseen, so the view is not behind;
      // what it held stays (a JobSet briefly unserved still runs), and the
      // relist goes on with its backoff. Not an error: a view not listed
      // yet counts as listed and empty, and a refusal told is over. Once
      // it has lasted list_errors_told_after, the CRD is taken to be gone,
      // and every object of the kind with it: what the view held goes (its
      // jobs see their objects gone), rather than showing them running.
      lists_failing_since = 0;
      const int64_t now = NowMillis();
      if (unserved_since == 0) unserved_since = now;
      SetServedNot(c, r);
      if (now - unserved_since >= options.list_errors_told_after.count()) ForgetUnserved(c, r, now - unserved_since);
      return;
    }
    unserved_since = 0;
    // Refused, not behind: an optional kind's 403 is told as such (below),
    // and leaves the view's age alone.
    optional_refused = resources[r].optional && status == 403;
    if (!optional_refused) SetBehind(c, r, true);
    // A 401 is the prober's to judge (CredentialsRefused): the token, not a
    // permission; so is no answer at all (status 0: out of reach).
    if (status == 401 || status <= 0) return;
    const int64_t now = NowMillis();
    bool first = false;
    {
      std::lock_guard lock(mu);
      if (c->stopping()) return;
      // A 403 unsyncs the view at once (gantry may no longer read it; an
      // optional kind's, for the jobs of that kind only). Another error (a
      // 500 from a broken conversion webhook, a 404 for a Kueue version
      // the cluster no longer serves) leaves the view as it
      // was, behind or not listed yet, until it has lasted
      // list_errors_told_after; then it unsyncs it too, and is told as a
      // 403 is, whether the view had listed before or not. An optional
      // kind's (its 404s went above) is told, and unsyncs the view, for the
      // jobs of that kind only (KindRefusals, JobObservation).
      if (status != 403) {
        if (lists_failing_since == 0) lists_failing_since = now;
        if (now - lists_failing_since < options.list_errors_told_after.count()) return;
      }
      first = c->caches[r].refused.empty();
      // (A 200 is a malformed list: the message says so.)
      c->caches[r].refused = status == 200 ? fmt::format("listing {}: {}", resources[r].name, message)
                                           : fmt::format("listing {} answered {}: {}", resources[r].name, status,
                                                         message);
      if (c->caches[r].listed) {
        c->caches[r].listed = false;
        PublishSyncedLocked();
      } else if (first) {
        // Never listed, and now told: the jobs with objects there see it
        // (KindRefused) once woken, and the health watch wakes them when
        // this stamp moves, as it does for a view that had listed.
        c->listed_changes = ++listed_seq;
      }
    }
    if (first) {
      spdlog::warn("observer: cluster {} {} the {} ({}{}): what its jobs do there is not followed until a list "
                   "succeeds",
                   c->config.name, status == 403 ? "refuses gantry" : "fails gantry's list of", resources[r].name,
                   status == 200 ? "" : std::to_string(status) + " ", message);
    }
  };
  // ToEntry reads a few metadata, spec and status fields: managedFields,
  // the pod templates and admission details need not be parsed on every
  // event.
  lw.only_fields = {{"metadata", MetadataFieldsRead()},
                    {"spec", {"suspend", "active", "preemptionGates"}},
                    {"status", StatusFieldsRead(resources[r])}};
  auto backoff = std::chrono::milliseconds(kFirstBackoff);
  while (!c->stopping()) {
    try {
      auto client = kube::KubeClient::Create(c->config.credentials, client_options);
      if (!client.ok()) {
        spdlog::warn("observer: cluster {}: {}", c->config.name, client.status().message());
      } else if (!resources[r].optional || WaitUntilServed(c, **client, r, path, unserved_since)) {
        kube::ListWatch(
            **client, path, lw,
            [&](const std::vector<json>& items) {
              lists_failing_since = 0;
              unserved_since = 0;
              ApplyList(c, r, items);
            },
            [&](const kube::WatchEvent& e) { ApplyEvent(c, r, e); },
            [c, &optional_refused] { return c->stopping() || optional_refused; });
        if (optional_refused) {
          optional_refused = false;
          SetUnserved(c, r, true);  // Relist() leaves it alone meanwhile: refused, not behind
          if (!c->Wait(options.unserved_recheck)) return;
          backoff = kFirstBackoff;
          continue;
        }
      }
    } catch (const std::exception& e) {
      // A malformed answer (or a throwing on_change): the view may be incomplete until relisted.
      spdlog::error("observer: cluster {} {}: {}", c->config.name, resources[r].name, e.what());
      {
        std::lock_guard lock(mu);
        c->caches[r].listed = false;
        PublishSyncedLocked();
      }
      // Told as a list that keeps failing is: refused once it has lasted.
      lw.on_list_failed(200, std::string("a malformed answer: ") + e.what());
    }
    if (!c->Wait(backoff)) return;
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

// Whether the view of resource r in c may miss changes (until its next list).
void ClusterObserver::Impl::SetBehind(Cluster* c, std::size_t r, bool behind) {
  std::lock_guard lock(mu);
  if (c->stopping() || c->caches[r].behind == behind) return;
  c->caches[r].SetBehind(behind, NowMillis());
  PublishSyncedLocked();
}

// While the path answers 404 (its CRD is not installed there), the
// resource counts as listed; what its view held goes once the 404s have
// lasted list_errors_told_after (from unserved_since), as when a relist
// meets them, not at the first (a CRD unserved for a moment, in an
// upgrade, after a 403 or an error restarted the thread). True once it
// answers anything else (ListWatch handles failures: a 403, gantry not
// allowed to list the kind there, is a refusal for the jobs of that kind),
// false when stopping.
bool ClusterObserver::Impl::WaitUntilServed(Cluster* c, kube::KubeClient& client, std::size_t r, const std::string& path,
                                            int64_t& unserved_since) {
  kube::ListOptions probe;
  probe.label_selector = Selector();
  probe.limit = 1;
  for (bool logged = false; !c->stopping(); logged = true) {
    auto reply = client.List(path, probe);
    if (!reply.ok() || reply->status != 404) {
      SetUnserved(c, r, false);  // ListWatch's from here
      return true;
    }
    if (!logged) {
      spdlog::info("observer: cluster {} does not serve {} (404): empty, asked again every {}s",
                   c->config.name, resources[r].name,
                   std::chrono::duration_cast<std::chrono::seconds>(options.unserved_recheck).count());
    }
    const int64_t now = NowMillis();
    if (unserved_since == 0) unserved_since = now;
    SetServedNot(c, r);
    if (now - unserved_since >= options.list_errors_told_after.count()) ForgetUnserved(c, r, now - unserved_since);
    SetUnserved(c, r, true);
    if (!c->Wait(options.unserved_recheck)) return false;
  }
  return false;
}

// An optional kind whose list answered 404 (not served there): not behind,
// listed (and empty, if it was not listed yet), and no longer refused.
void ClusterObserver::Impl::SetServedNot(Cluster* c, std::size_t r) {
  bool was_refused = false;
  {
    std::lock_guard lock(mu);
    if (c->stopping()) return;
    ResourceCache& cache = c->caches[r];
    was_refused = !cache.refused.empty();
    cache.refused.clear();
    if (cache.behind || !cache.listed) {
      cache.listed = true;
      cache.SetBehind(false, 0);
      PublishSyncedLocked();
    }
  }
  if (was_refused) {
    spdlog::info("observer: cluster {} answers 404 for {}: not served there, the refusal is over", c->config.name,
                 resources[r].name);
  }
}

// An optional kind unserved (404) for list_errors_told_after: what its view
// still held is gone with its CRD.
void ClusterObserver::Impl::ForgetUnserved(Cluster* c, std::size_t r, int64_t for_ms) {
  std::size_t held = 0;
  {
    std::lock_guard lock(mu);
    if (c->stopping()) return;
    held = c->caches[r].size();
  }
  if (held == 0) return;
  spdlog::warn("observer: cluster {} has not served {} for {} s (404): its {} object(s) of gantry's there are taken "
               "to be gone with the kind",
               c->config.name, resources[r].name, for_ms / 1000, held);
  ApplyList(c, r, {});
}

// While unserved, a resource's thread waits in WaitUntilServed (or after a
// 403 to an optional kind), not in ListWatch: Relist() leaves it alone (it
// is listed and empty, or refused, already).
void ClusterObserver::Impl::SetUnserved(Cluster* c, std::size_t r, bool unserved) {
  std::lock_guard lock(mu);
  if (c->stopping()) return;
  c->caches[r].unserved = unserved;
  if (unserved && c->caches[r].behind) {  // a Relist() since the empty list
    c->caches[r].SetBehind(false, 0);
    PublishSyncedLocked();
  }
}

void ClusterObserver::Impl::ApplyList(Cluster* c, std::size_t r, const std::vector<json>& items) {
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
    c->caches[r].listed_ms = MonotonicMillis();
    was_refused = !c->caches[r].refused.empty();
    c->caches[r].refused.clear();
    if (!c->caches[r].listed || c->caches[r].behind) {
      c->caches[r].listed = true;
      c->caches[r].SetBehind(false, 0);
      PublishSyncedLocked();
    }
  }
  if (was_refused) spdlog::info("observer: cluster {} lets gantry list the {} again", c->config.name, resources[r].name);
  Notify(c, r, changed, ClusterObserver::Observed{});
}

void ClusterObserver::Impl::ApplyEvent(Cluster* c, std::size_t r, const kube::WatchEvent& e) {
  // BOOKMARK and ERROR change nothing. An object that lost its job-uid label is
  // no longer tracked: erased like a deleted one.
  if (e.type != "ADDED" && e.type != "MODIFIED" && e.type != "DELETED") return;
  std::optional<Entry> entry = e.type == "DELETED" ? std::nullopt : ToEntry(resources[r], e.object);
  std::optional<ObservedWorkload> last_state;
  if (e.type == "DELETED" && r == 0) {  // a finished Workload's last state: FinishedGone
    if (std::optional<Entry> last = ToEntry(resources[r], e.object)) {
      if (auto* w = std::get_if<ObservedWorkload>(&last->object); w && w->finished) last_state = std::move(*w);
    }
  }
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
      c->caches[r].Put(KeyOf(e.object), std::move(*entry), &changed,
                       what.change == Change::kChanged ? &what.status_only : nullptr);
    } else {
      c->caches[r].Erase(KeyOf(e.object), &changed);
      if (last_state) finished_gone.Remember(c->config.name, *last_state, NowMillis());
    }
  }
  Notify(c, r, changed, what);
}

void ClusterObserver::Impl::Notify(Cluster* c, std::size_t r, const std::set<std::string>& job_uids, ClusterObserver::Observed what) {
  what.cluster = c->config.name;
  what.kind = resources[r].kind.empty() ? kWorkload : kJob;
  for (const std::string& uid : job_uids) {
    if (c->stopping()) return;  // retired: its view is gone, and Stop() may be waiting
    what.job_uid = uid;
    on_change(what);
  }
}

}  // namespace gantry::dispatch
