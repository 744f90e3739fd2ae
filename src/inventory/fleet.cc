#include "gantry/inventory/fleet.h"
#include "gantry/common/clock.h"
#include "gantry/common/thread_name.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string_view>

#include "gantry/inventory/config_changes.h"
#include "gantry/inventory/snapshot.h"

namespace gantry::inventory {
namespace {

// The cluster answered and refused us (ClusterProber::Probe).
bool Refusal(const Status& status) {
  return status.code() == Code::kUnauthenticated || status.code() == Code::kPermissionDenied;
}

// Two failures for the same reason: their texts alike but for numbers of
// four digits or more, counted across the dots and colons that join them
// (a deadline's milliseconds, an address and port, a time of day in an
// exec plugin's message), so that a probe every few seconds does not make a
// log line each; an HTTP status still tells two reasons apart.
std::string WithoutLongNumbers(std::string_view s) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (!digit(s[i])) {
      out.push_back(s[i++]);
      continue;
    }
    // A number: digits, and the dots and colons between them.
    size_t end = i, digits = 0;
    for (; end < s.size(); ++end) {
      const bool joins = (s[end] == '.' || s[end] == ':') && end + 1 < s.size() && digit(s[end + 1]);
      if (!digit(s[end]) && !joins) break;
      digits += digit(s[end]) ? 1 : 0;
    }
    out.append(digits >= 4 ? std::string_view("#") : s.substr(i, end - i));
    i = end;
  }
  return out;
}

bool SameReason(std::string_view a, std::string_view b) { return WithoutLongNumbers(a) == WithoutLongNumbers(b); }

// Why the reading does not say where each LocalQueue leads ("" when it does).
std::string LocalQueuesError(const CapacityReading* reading) {
  return reading && reading->queues ? reading->queues->local_queues_error : "";
}

// Why the reading does not give the WorkloadPriorityClasses ("" when it does).
std::string PriorityClassesError(const CapacityReading* reading) {
  return reading && reading->queues ? reading->queues->priority_classes_error : "";
}

uint64_t QueuesStampOf(const CapacityReading* reading) {
  return reading && reading->queues ? reading->queues->stamp : 0;
}

// A cluster's clock this far from gantry's is told in the log (a warning),
// and told back in step below kClockOffsetBackMs: a reading is good to
// about a second, and one near the mark must not warn at every probe.
constexpr int64_t kClockOffsetToldMs = 30'000;
constexpr int64_t kClockOffsetBackMs = 28'000;

// Keeps the offset of a probe that read one, and says when it crosses
// kClockOffsetToldMs, or falls back below kClockOffsetBackMs.
void NoteClockOffset(const std::string& name, ClusterView& view, int64_t offset_ms) {
  const bool was_far = view.clock_offset_far;
  view.clock_offset_ms = offset_ms;
  if (!was_far && std::abs(offset_ms) >= kClockOffsetToldMs) {
    view.clock_offset_far = true;
    spdlog::warn("cluster {}: its clock is {} {} gantry's (from the Date of its answers): gantry allows for it when "
                 "it judges whether a run's end was seen late, but Kueue and the jobs there run by that clock; check "
                 "the cluster's time sync (NTP)",
                 name, FormatAge(std::abs(offset_ms)), offset_ms > 0 ? "ahead of" : "behind");
  } else if (was_far && std::abs(offset_ms) < kClockOffsetBackMs) {
    view.clock_offset_far = false;
    spdlog::info("cluster {}: its clock is within {} of gantry's again", name, FormatAge(kClockOffsetBackMs));
  }
}

}  // namespace

Fleet::Fleet(ClusterProber& prober, ClusterStateStore& store, const Clock& clock, FleetOptions options)
    : prober_(prober), store_(store), clock_(clock), options_(std::move(options)) {}

Fleet::~Fleet() { Stop(); }

std::vector<ClusterFileError> Fleet::Start() {
  auto outages = store_.LoadOutages();
  if (outages.ok()) {
    restored_outages_ = *outages;
  } else {
    state_status_ = Status(outages.status().code(),
                           fmt::format("reading the clusters' persisted outages: {}", outages.status().message()));
  }
  // Which cluster each entry reached: an entry pointed at another cluster
  // while the daemon was stopped is held at its first probe
  // (HoldIfOtherCluster), as one edited while it runs is.
  if (auto ids = store_.LoadClusterIds(); ids.ok()) {
    restored_ids_ = std::move(*ids);
  } else {
    const std::string also = state_status_.ok() ? "" : state_status_.message() + "; and ";
    state_status_ = Status(ids.status().code(), fmt::format("{}reading the clusters' persisted identities: {}", also,
                                                            ids.status().message()));
  }
  auto errors = Load();
  // The daemon refuses to start (StateStatus): nothing is probed, and no
  // outage forgotten.
  if (!state_status_.ok()) return errors;
  // Restored once, for the clusters the inventory has at start. The outage
  // of one it no longer has is over for gantry: a cluster added later, even
  // under the same name, starts afresh (an outage months old would make it
  // lost at its first failed probe).
  // A directory that cannot be listed tells nothing of which clusters are
  // gone: their outages are kept.
  {
    std::lock_guard lock(mu_);
    if (dir_status_.ok()) {
      for (const auto& [name, outage] : restored_outages_) {
        if (!entries_.count(name)) ForgetOutage(name);
      }
    }
    restored_outages_.clear();
  }
  GrowWorkers();
  return errors;
}

void Fleet::GrowWorkers() {
  std::lock_guard workers_lock(workers_mu_);
  int target = 0;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    const int least = std::max(1, options_.probe_workers);
    const int per = std::max(1, options_.clusters_per_probe_worker);
    const int clusters = static_cast<int>(entries_.size());
    target = std::clamp((clusters + per - 1) / per, least, std::max(least, options_.max_probe_workers));
    if (target <= workers_started_) return;
    workers_started_ = target;
  }
  while (static_cast<int>(workers_.size()) < target) {
    workers_.emplace_back([this] {
      SetThreadName("probe");
      Run();
    });
  }
}

void Fleet::BeginStop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    // A plugin stuck on the network holds no request, nor the stop, for its
    // 30 s; a run given up is no refusal (the probes' results are dropped).
    for (auto& [name, e] : entries_) {
      if (e.creds && e.creds->token_source) e.creds->token_source->Stop();
    }
  }
  cv_.notify_all();
  prober_.Stop();  // a cluster that does not answer holds the stop for no probe's deadline
}

void Fleet::Stop() {
  BeginStop();
  std::lock_guard workers_lock(workers_mu_);  // a reload's GrowWorkers has started its threads, or sees stopping_
  for (auto& w : workers_) w.join();
  workers_.clear();
}

std::string InventoryChange::Describe() const {
  std::vector<std::string> parts;
  if (!added.empty()) parts.push_back(fmt::format("added {}", fmt::join(added, ", ")));
  if (!removed.empty()) {
    parts.push_back(fmt::format("removed {} (the jobs each owned are treated as lost to it: their onClusterLoss)",
                                fmt::join(removed, ", ")));
  }
  for (const auto& [gone, now] : same_server) {
    parts.push_back(fmt::format("{} names the API server {} named: if that is a rename, gantry takes it for another "
                                "cluster, and the jobs of {} get their onClusterLoss as for a cluster removed",
                                now, gone, gone));
  }
  std::vector<std::string> each;
  for (const auto& [name, what] : changed) each.push_back(fmt::format("{} ({})", name, what));
  if (!each.empty()) parts.push_back(fmt::format("changed {}", fmt::join(each, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<ClusterFileError> Fleet::Reload(InventoryChange* change) {
  auto errors = Load(change);
  GrowWorkers();
  cv_.notify_all();
  return errors;
}

Status Fleet::DirStatus() const {
  std::lock_guard lock(mu_);
  return dir_status_;
}

Status Fleet::StateStatus() const { return state_status_; }

Fleet::Entry Fleet::Existing(const std::string& name) const {
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(name); it != entries_.end()) return it->second;  // keep health
  }
  Entry entry;  // a new cluster
  if (auto it = restored_outages_.find(name); it != restored_outages_.end()) {
    entry.view.health.RestoreFirstLost(it->second.first_lost_ms, it->second.credentials_refused);
  }
  if (auto it = restored_ids_.find(name); it != restored_ids_.end()) {
    // Its file may have been edited while the daemon was stopped: not read
    // on any server yet (Entry::identity_read_at).
    entry.view.cluster_id = it->second;
  }
  return entry;
}

Fleet::Entry Fleet::Held(const ClusterPlaceholder& placeholder) const {
  Entry held;  // no credentials: never probed (ProbeOne), nor watched
  const Entry existing = Existing(placeholder.name);
  held.view.health = existing.view.health;
  held.view.cluster_id = existing.view.cluster_id;  // the cluster its jobs run in, for when it loads
  held.view.config.name = placeholder.name;
  held.view.config.source_file = placeholder.file;
  const std::string file = std::filesystem::path(placeholder.file).filename().string();
  held.view.config_error =
      fmt::format("cluster file {} refused: {}; its jobs are held until it loads", file,
                  RefusalWithoutFile(placeholder.file, placeholder.status.message()));
  if (existing.view.config_error.empty()) {  // not at every reload while it stays held
    spdlog::error("inventory: cluster {} is held, not removed: its file {} is refused; it is not probed, nothing new "
                  "goes there, and the jobs it owns are left as they are until the file loads",
                  placeholder.name, file);
  }
  return held;
}

std::vector<ClusterFileError> Fleet::Load(InventoryChange* change) {
  InventoryChange changed;
  if (options_.clusters_dir.empty()) return {};
  std::lock_guard load_lock(load_mu_);
  std::vector<ClusterConfig> previous;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, e] : entries_) {
      if (e.view.config_error.empty()) previous.push_back(e.view.config);  // a placeholder was never good
    }
  }
  ClusterDirLoad load = LoadClusterDir(options_.clusters_dir, previous);
  for (const auto& err : load.errors) {
    spdlog::error("inventory: {}{}", err.status.message(), err.kept_last_good ? " (keeping its last good entry)" : "");
  }
  if (!load.dir_status.ok()) spdlog::error("inventory: {}", load.dir_status.message());
  std::map<std::string, std::string> stale;  // file -> why it was refused, its last good entry kept
  for (const auto& err : load.errors) {
    if (err.kept_last_good) stale[err.file] = err.status.message();
  }
  std::map<std::string, Entry> next;
  for (ClusterConfig& config : load.clusters) {
    Entry entry = Existing(config.name);
    entry.view.config_error.clear();  // a placeholder whose file loads now
    auto refused = stale.find(config.source_file);
    entry.view.config_warning = refused == stale.end() ? "" : refused->second;
    auto creds = LoadCredentials(config);
    if (creds.ok()) {
      // A token source that gives the same token as the last one is kept,
      // with what it holds: a reload does not run an exec plugin again, and
      // the engine, the observer and the probes keep sharing one source.
      const auto& kept = entry.creds ? entry.creds->token_source : nullptr;
      if (kept && creds->token_source && kept->SameSource(*creds->token_source)) creds->token_source = kept;
      entry.creds = std::move(*creds);
      if (entry.creds->token_source) entry.creds->token_source->set_owner("inventory: cluster " + config.name);
      entry.view.credentials_error.clear();
      entry.view.credentials_warning.clear();
      if (entry.creds->insecure) {
        spdlog::warn("inventory: cluster {}: TLS verification is OFF (allowInsecure)", config.name);
      }
    } else if (entry.creds && entry.view.config.name == config.name) {
      // A typo in a kubeconfig, or a token file missing a moment, must not
      // cut gantry off a cluster that works: its jobs would look lost.
      entry.view.credentials_warning = creds.status().message();
      spdlog::error("inventory: {} (the last good credentials stay in use until it loads)", creds.status().message());
    } else {
      entry.creds.reset();
      entry.view.credentials_error = creds.status().message();
      spdlog::error("inventory: {}", creds.status().message());
    }
    entry.view.config = std::move(config);
    entry.next_probe_ms = 0;  // probe a (re)loaded cluster at once (but see below)
    std::string name = entry.view.config.name;
    next.emplace(std::move(name), std::move(entry));
  }
  for (const ClusterPlaceholder& placeholder : load.placeholders) next.emplace(placeholder.name, Held(placeholder));
  HoldSameServer(next, load.errors);
  if (!load.dir_status.ok()) {
    // Not listed: `clusters` is the previous good entries, and the clusters
    // held stay held.
    std::lock_guard lock(mu_);
    for (const auto& [name, e] : entries_) {
      if (!e.view.config_error.empty()) next.emplace(name, e);
    }
  }
  // Outages are forgotten under mu_, as a probe saves one (ProbeOne), so
  // that the store writes them in the order they happen: a probe that
  // fails right after this reload saves its outage after the forgetting.
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> removed_servers;  // name -> its API server
  for (const auto& [name, e] : entries_) {
    if (next.count(name)) continue;
    spdlog::info("inventory: cluster {} removed", name);
    ForgetOutage(name);
    SaveClusterId(name, "");  // (whether or not it was read: a row a failed load left goes too)
    changed.removed.push_back(name);
    if (e.creds) removed_servers[name] = e.creds->server;
  }
  // The identities restored at Start: taken by the entries made now. One
  // with no file is kept through the load at Start (its file may be missing
  // a moment: the engine waits for a reload to confirm such an owner gone),
  // and forgotten at a reload without it.
  for (auto it = restored_ids_.begin(); it != restored_ids_.end();) {
    if (next.count(it->first)) {
      it = restored_ids_.erase(it);
    } else if (loaded_ && load.dir_status.ok()) {
      SaveClusterId(it->first, "");
      it = restored_ids_.erase(it);
    } else {
      ++it;
    }
  }
  loaded_ = true;
  for (auto& [name, e] : next) {
    auto old = entries_.find(name);
    const bool held = !e.view.config_error.empty();
    const bool was_held = old != entries_.end() && !old->second.view.config_error.empty();
    const bool was_lost = old != entries_.end() && old->second.view.config.declared_lost;
    // A placeholder's file tells nothing, declaredLost included (Held said why).
    if (!held && e.view.config.declared_lost && !was_lost) {
      spdlog::warn("inventory: cluster {} is declared lost (declaredLost): nothing new goes there, the jobs it owns "
                   "get their onClusterLoss once it has been out of reach for declaredLostGraceSeconds, and what it "
                   "runs is withdrawn if it answers again",
                   name);
    } else if (!held && was_lost && !e.view.config.declared_lost) {
      spdlog::info("inventory: cluster {} is no longer declared lost", name);
    }
    const bool was_cordoned = old != entries_.end() && old->second.view.config.cordoned;
    if (!held && e.view.config.cordoned && !was_cordoned) {
      spdlog::info("inventory: cluster {} is cordoned: no new job goes there, and copies waiting there are withdrawn; "
                   "the jobs it runs carry on",
                   name);
    } else if (!held && was_cordoned && !e.view.config.cordoned) {
      spdlog::info("inventory: cluster {} is no longer cordoned", name);
    }
    if (old == entries_.end()) {
      if (held) continue;  // its file refused: told as such, not as a cluster added
      spdlog::info("inventory: cluster {} added ({})", name, e.view.config.region);
      changed.added.push_back(name);
      for (const auto& [gone, server] : removed_servers) {
        if (!e.creds || e.creds->server != server) continue;
        changed.same_server.emplace_back(gone, name);
        spdlog::warn("inventory: cluster {} added with the API server of cluster {}, removed: a rename is a removal "
                     "and an addition to gantry; the jobs {} owned get their onClusterLoss as for a cluster removed",
                     name, gone, gone);
      }
      continue;
    }
    // A placeholder (Held: a refused file's, or one of two entries for one
    // API server) has no credentials; an entry held by a probe's reading
    // (another cluster's identity, or one another entry reaches) kept its
    // file and credentials.
    if (was_held && !held && !old->second.creds) {
      spdlog::info("inventory: cluster {} is no longer held: its file loads; it is probed and watched", name);
      changed.changed.emplace_back(name, "no longer held: its file loads");
    } else if (!held) {
      std::string what = ConfigChanges(old->second.view.config, e.view.config);
      // The kubeconfig's path the same, its contents rewritten (a token
      // rotated by hand, another API server): said too.
      const ClusterConfig& was_config = old->second.view.config;
      if (old->second.creds && e.creds && was_config.kubeconfig == e.view.config.kubeconfig &&
          was_config.context == e.view.config.context) {
        if (std::string creds = CredentialChanges(*old->second.creds, *e.creds); !creds.empty()) {
          what += (what.empty() ? "" : ", ") + creds;
        }
      }
      if (was_held) {
        // Told in the answer too: put back or not, the hold is read afresh.
        spdlog::info("inventory: cluster {} is probed again: held again if its probe reads what held it", name);
        what += (what.empty() ? "" : ", ") + std::string("probed again after its hold (held again if the probe reads "
                                                          "what held it)");
      }
      if (!what.empty()) changed.changed.emplace_back(name, std::move(what));
    }
    // Reached again: its file loads, or its kubeconfig does (a cluster whose
    // credentials never loaded is not probed either).
    const bool reachable_again = !old->second.view.Usable() && e.view.Usable();
    // A probe of the old entry still in flight keeps its claim, and the new
    // entry is probed right after it ends: two probes of one cluster must
    // not run at once (the later to end would overwrite the newer reading).
    e.probing = old->second.probing;
    e.reprobe = e.probing;
    // What a probe that ended since the copy above read stands (a recovery
    // would otherwise turn back into the outage it ended).
    e.view.health = old->second.view.health;
    e.view.capacity = old->second.view.capacity;
    e.view.capacity_at_ms = old->second.view.capacity_at_ms;
    e.view.capacity_error = old->second.view.capacity_error;
    // (Read by a probe that ended since the copy: not lost to this load;
    // nor a hold's forgetting where it was read.)
    if (e.view.cluster_id.empty()) e.view.cluster_id = old->second.view.cluster_id;
    // Where it was read stands only for the same connection: the same
    // address with another certificate authority or credentials may well be
    // another cluster (one made again there, a DNS name moved), and a probe
    // must read the identity there before the entry is Ready on it.
    const bool same_connection = old->second.creds && e.creds && SameConnection(*old->second.creds, *e.creds);
    e.identity_read_at = same_connection ? old->second.identity_read_at : std::string();
    // Another API server now: nothing known of it yet. Its health is read
    // afresh, so it is not Ready until its first probe. Its identity stays
    // the cluster's it reached: that probe holds the entry if the new
    // server is another cluster's (HoldIfOtherCluster), or one another
    // entry reaches (HoldIfSameCluster).
    const bool moved = old->second.creds && e.creds && ServerKey(*old->second.creds) != ServerKey(*e.creds);
    if (moved) {
      e.view.clock_offset_ms.reset();
      e.view.clock_offset_far = false;
    }
    if (reachable_again || moved) {
      // Nothing was learnt of it while gantry could not reach it: an outage
      // from before (or one restored from the store) would make its jobs
      // lost at the first failed probe, however long it ran fine meanwhile.
      // Its clock starts again, as at a start, from its first failed probe.
      e.view.health = ClusterHealth{};
      ForgetOutage(name);
    } else if (!same_connection && !e.view.cluster_id.empty() && e.view.health.state == HealthState::kReady &&
               !e.view.health.first_lost_ms) {
      // Its address the same, how it is reached not (above): not Ready
      // until a probe reads its identity there, nor used meanwhile (a
      // failed read must not merely leave it Ready, doubted). One doubted
      // already keeps its state and outage (the store's record of it
      // follows the state): its next failed probe makes it NotReady.
      e.view.health.state = HealthState::kUnknown;
    }
  }
  entries_ = std::move(next);
  dir_status_ = load.dir_status;
  generation_.fetch_add(1, std::memory_order_release);
  if (change) *change = std::move(changed);
  return load.errors;
}

void Fleet::SaveClusterId(const std::string& name, const std::string& cluster_id) {
  std::optional<std::string> id;
  if (!cluster_id.empty()) id = cluster_id;
  store_.SaveClusterId(name, std::move(id), [name](Result<bool> r) {
    if (!r.ok()) spdlog::error("inventory: saving the identity of {}: {}", name, r.status().ToString());
  });
}

void Fleet::ForgetOutage(const std::string& name) {
  store_.SaveOutage(name, std::nullopt, "", [name](Result<bool> r) {
    if (!r.ok()) spdlog::error("inventory: clearing the outage of {}: {}", name, r.status().ToString());
  });
}

void Fleet::ProbeOne(const std::string& name) {
  ClusterConfig config;
  std::optional<ClusterCredentials> creds;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return;
    config = it->second.view.config;
    // Held (a refused file, or an entry that reaches another's cluster):
    // not probed, as one without credentials is not.
    if (it->second.view.config_error.empty()) creds = it->second.creds;
  }
  int64_t now = clock_.NowMillis();
  // When probes fall due is on the monotonic clock: a step of the wall
  // clock (NTP, a resumed VM) must neither stop them for as long as it went
  // back nor bring them all due at once. What they find is dated on the wall.
  int64_t mono = clock_.MonotonicMillis();
  if (!creds) {
    // A local configuration error, not an outage: its health stays as it
    // was (Unknown at a start), so no clusterLostTimeout runs and no job it
    // owns moves while the operator fixes the kubeconfig (credentials_error)
    // or the cluster's file (a placeholder: config_error). Looked at again
    // each probe_interval, at no cost: a reload gives it credentials.
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return;
    it->second.next_probe_ms = it->second.reprobe ? mono : mono + options_.probe_interval_ms;
    it->second.reprobe = false;
    return;
  }
  // A cluster's answer that some reader did not expect must not end the
  // daemon (every cluster's jobs with it, at every restart): a failed probe.
  Result<CapacityReading> reading = Status::Unavailable("not probed");
  // A failure is dated when the probe went out (a silent one: from its last
  // deadline, below). Dated at its end, a silent cluster's outage (and
  // clusterLostTimeout) began a deadline late.
  const int64_t sent = now;
  const int64_t mono_sent = mono;
  try {
    reading = prober_.Probe(config, *creds);
  } catch (const std::exception& e) {
    reading = Status::Unavailable(fmt::format("its answer could not be read: {}", e.what()));
  }
  now = clock_.NowMillis();
  mono = clock_.MonotonicMillis();
  std::optional<std::optional<ClusterOutage>> persist;  // set when the outage's start or kind changed
  std::string error;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return;
    // Ended by the daemon's stop (ClusterProber::Stop): what it read tells
    // nothing of the cluster, and an outage saved now would outlive the
    // restart. (An answer read whole is kept: it may end an outage.)
    if (stopping_ && !reading.ok()) return;
    Entry& e = it->second;
    if (!e.view.config_error.empty()) {
      // Held since the probe began (its file refused at a reload): what the
      // old entry's probe saw is not this entry's to keep (an outage
      // recorded now would run on while nothing can end it).
      e.reprobe = false;
      e.next_probe_ms = mono + options_.probe_interval_ms;
      return;
    }
    if (!e.creds || !SameConnection(*creds, *e.creds)) {
      // Begun before a reload that changed how the cluster is reached (or
      // removed the entry and a later one added it back): what it read is
      // of another connection, perhaps another cluster (whose identity the
      // entry must not take, nor its health). Probed again now.
      e.reprobe = false;
      e.next_probe_ms = mono;
      return;
    }
    // An identity known but not read on this server (a start, a kubeconfig
    // moved, a refused file that loads again): a probe that cannot read it
    // does not make the entry Ready on what may be another cluster. A
    // refused read (RBAC) is a refusal, a failed one a failure.
    const std::string server = ServerKey(*e.creds);
    if (reading.ok() && reading->cluster_id.empty() && !e.view.cluster_id.empty() && e.identity_read_at != server) {
      const int status = reading->cluster_id_status;
      const std::string why = fmt::format(
          "its kube-system Namespace could not be read ({}), to confirm that {} is still the cluster its jobs run "
          "in (uid {}), after a change of its kubeconfig or a restart of gantry",
          status == 0 ? "no answer" : fmt::format("HTTP {}", status), e.creds->server, e.view.cluster_id);
      reading = reading->cluster_id_refused ? Status(Code::kPermissionDenied, why) : Status::Unavailable(why);
    }
    if (reading.ok() && !reading->cluster_id.empty()) {
      if (HoldIfOtherCluster(name, e, reading->cluster_id)) return;
      e.identity_read_at = server;
      if (HoldIfSameCluster(name, e, reading->cluster_id)) return;
      if (e.view.cluster_id != reading->cluster_id) SaveClusterId(name, reading->cluster_id);
      e.view.cluster_id = reading->cluster_id;
    }
    if (reading.ok() && reading->clock_offset_ms) NoteClockOffset(name, e.view, *reading->clock_offset_ms);
    // The outage as the store keeps it: none while Ready, doubted or not (a
    // doubt persisted would come back after a restart as an outage, whose
    // first failed probe then finds the cluster lost at once).
    auto kept = [](const ClusterHealth& h) {
      return h.state == HealthState::kReady ? std::nullopt : h.first_lost_ms;
    };
    const std::optional<int64_t> before = kept(e.view.health);
    HealthState old_state = e.view.health.state;
    const bool old_refused = e.view.health.credentials_refused;
    const bool old_refusing = e.view.health.Refusing();
    if (reading.ok()) {
      if (e.view.health.Doubted()) {
        spdlog::info("cluster {} answers its probe again, after {} failed; it stayed Ready", name,
                     e.view.health.consecutive_failures);
      }
      const bool was_ready = old_state == HealthState::kReady;  // doubted or not
      e.view.health.OnProbeOk(now);
      e.silent_wait_ms = 0;
      // While the daemon stops, the answer tells the cluster's health (an
      // outage it ends is saved); its quota and queues, perhaps cut short
      // by the stop (a list abandoned after the first), are not taken.
      if (!stopping_) TakeReading(name, e, std::move(*reading), now, mono, was_ready);
    } else {
      error = reading.status().message();
      e.view.health.failure_threshold = options_.failure_threshold;
      e.silent_wait_ms = 0;
      if (Refusal(reading.status())) {
        e.view.health.OnProbeRefused(sent, error, mono);
      } else {
        // No answer within a deadline (connect or request): no flake, and
        // no answer for that long, up to the probe's end: the failure spans
        // its last deadline. Measured on the monotonic clock (a step of the
        // wall clock is no silence of the cluster's), and one deadline at
        // most: a probe's earlier requests may have been answered, and the
        // daemon's host may have been stopped meanwhile.
        int64_t failed_at = sent;
        std::optional<int64_t> silent_until;
        if (reading.status().code() == Code::kDeadlineExceeded) {
          const int64_t span = std::max<int64_t>(0, mono - mono_sent);
          e.silent_wait_ms = std::min(span, options_.probe_deadline_ms);
          failed_at = sent + span - e.silent_wait_ms;
          silent_until = sent + span;
        }
        e.view.health.OnProbeFailed(failed_at, error, mono, silent_until);
      }
      // Out of reach: the outage tells more (while doubted, what it read stands).
      if (e.view.health.state == HealthState::kNotReady) e.view.capacity_error.clear();
      int64_t delay = options_.doubt_probe_ms;
      if (e.view.health.Doubted()) {
        spdlog::info("cluster {}: a probe failed ({} in a row, NotReady after {}); probing again in {} ms: {}", name,
                     e.view.health.consecutive_failures, options_.failure_threshold, delay, error);
      } else {
        delay = e.view.health.NextRetryDelayMs(rng_, options_.backoff);
      }
      // At least five probes within the outage's timeout: a cluster that
      // keeps coming back for a moment must have a probe land while it
      // answers, or a short clusterLostTimeout would find it lost (with the
      // default 15 min the backoff's 30 s is far below this).
      const int64_t timeout = e.view.health.LostTimeoutMs(options_.lost_timeout_ms, options_.refused_timeout_ms);
      delay = std::min(delay, std::max(options_.doubt_probe_ms, timeout / 5));
      // A cluster is judged lost on a probe that failed (ShownLostForMs):
      // while the outage it shows falls short of clusterLostTimeout, one
      // falls due so that it ends when the outage reaches it, and a backoff
      // of up to 30 s does not put the verdict off by as much. A silent
      // cluster's probe shows the outage to the end of its wait: it goes as
      // long before as the last one waited (and 100 ms later, for its own
      // start); one that failed at once, at the timeout. (The outage is
      // dated on the wall clock, as the store keeps it; the delay is a span.)
      if (const auto& lost = e.view.health.first_lost_ms; lost && timeout < std::numeric_limits<int64_t>::max() / 2) {
        const int64_t at = *lost + timeout;
        // (silent_wait_ms is the failure's just recorded: 0 unless silent.)
        const int64_t lead = std::max<int64_t>(0, e.silent_wait_ms - 100);
        if (at > e.view.health.last_failure_ms && at - lead < now + delay) {
          delay = std::max<int64_t>(0, at - lead - now);
        }
      }
      e.next_probe_ms = mono + delay;
    }
    if (e.reprobe) {  // reloaded while this probe ran: probe the new entry now
      e.next_probe_ms = mono;
      e.reprobe = false;
    }
    const ClusterHealth& h = e.view.health;
    if (const std::optional<int64_t> after = kept(h);
        after != before || (after && h.credentials_refused != old_refused)) {
      persist = after ? std::optional<ClusterOutage>({*after, h.credentials_refused}) : std::nullopt;
    }
    if (old_state != e.view.health.state || old_refusing != e.view.health.Refusing()) {
      generation_.fetch_add(1, std::memory_order_release);
      if (reading.ok()) {
        spdlog::info("cluster {} is Ready", name);
      } else if (e.view.health.credentials_refused) {
        spdlog::warn("cluster {} is NotReady: it answers but refuses gantry's credentials: {}; nothing new goes "
                     "there, and its jobs are left as they are until the credentials work again, or for at most "
                     "credentialsRefusedTimeoutSeconds",
                     name, error);
      } else {
        spdlog::warn("cluster {} is NotReady: {}", name, error);
      }
      e.told_reason = reading.ok() ? std::string() : error;
    } else if (!reading.ok() && e.view.health.state == HealthState::kNotReady && !SameReason(error, e.told_reason)) {
      spdlog::warn("cluster {} is still NotReady, for another reason now: {}", name, error);
      e.told_reason = error;
    }
    // Queued under mu_ (the store only enqueues), so that the store writes
    // it in the order the health changed: a reload's forgetting of the
    // outage (Load) comes before or after it, never across.
    if (persist) {
      store_.SaveOutage(name, *persist, error, [name](Result<bool> r) {
        if (!r.ok()) spdlog::error("inventory: saving outage of {}: {}", name, r.status().ToString());
      });
    }
  }
}

// What a probe that was answered read. A reading worse than the last good
// one (its quota, LocalQueues or WorkloadPriorityClasses unreadable where
// they read before) is taken on the word of the next probe, a second later,
// as a failed probe is (probeFailureThreshold): one list failing among many
// must not send placement's view of the cluster to stale and back, with a
// warning and a rescan of the waiting jobs each time. Not after an outage
// (was_ready false): its first reading is taken as it is. `now` dates the
// reading (wall clock); `mono` schedules the next probe. REQUIRES: mu_ held.
void Fleet::TakeReading(const std::string& name, Entry& e, CapacityReading reading, int64_t now, int64_t mono,
                        bool was_ready) {
  const CapacityReading* last = e.view.capacity ? &*e.view.capacity : nullptr;
  std::string worse;
  if (was_ready && last && e.view.capacity_error.empty()) {
    if (!reading.unreadable.empty()) {
      worse = reading.unreadable;
    } else if (LocalQueuesError(last).empty() && !LocalQueuesError(&reading).empty()) {
      worse = LocalQueuesError(&reading);
    } else if (PriorityClassesError(last).empty() && !PriorityClassesError(&reading).empty()) {
      worse = PriorityClassesError(&reading);
    }
  }
  if (!worse.empty() && e.read_doubts + 1 < options_.failure_threshold) {
    ++e.read_doubts;
    spdlog::info("cluster {}: its probe's reading failed ({}); probing again in {} ms before taking it", name, worse,
                 options_.doubt_probe_ms);
    e.next_probe_ms = mono + options_.doubt_probe_ms;
    return;
  }
  e.read_doubts = 0;
  const std::string old_capacity_error = e.view.capacity_error;
  e.view.capacity_error = reading.unreadable;
  if (reading.unreadable.empty()) {
    // A list that fails now where it read before (a warning, with what it
    // costs placement), or reads again.
    auto tell = [&](const std::string& was, const std::string& now_error, const char* cost, const char* what) {
      if (now_error == was) return;
      if (!now_error.empty()) {
        spdlog::warn("cluster {}: {}; {}", name, now_error, cost);
      } else {
        spdlog::info("cluster {}: its {} can be read again", name, what);
      }
    };
    tell(LocalQueuesError(last), LocalQueuesError(&reading),
         "placement cannot tell which ClusterQueue a job lands in there, so it judges jobs by the sums over all of "
         "them and never finds one unschedulable there",
         "LocalQueues");
    tell(PriorityClassesError(last), PriorityClassesError(&reading),
         "jobs that name a WorkloadPriorityClass (kueue.x-k8s.io/priority-class) get no copy there",
         "WorkloadPriorityClasses");
    // A LocalQueue or ClusterQueue appeared, went, or turned Active or
    // not: placement must not wait for the next fleet refresh to see it.
    if (QueuesStampOf(last) != QueuesStampOf(&reading)) {
      generation_.fetch_add(1, std::memory_order_release);
    }
    e.view.capacity = std::move(reading);
    e.view.capacity_at_ms = now;
  }
  e.next_probe_ms = mono + options_.probe_interval_ms;
  if (e.view.capacity_error != old_capacity_error) {
    generation_.fetch_add(1, std::memory_order_release);  // placement reads it as stale, or fresh again
    if (!e.view.capacity_error.empty()) {
      spdlog::warn("cluster {} answers, but its capacity cannot be read: {}; its jobs are followed as usual, and "
                   "placement uses its last reading, if any, as stale",
                   name, e.view.capacity_error);
    } else {
      spdlog::info("cluster {}: its capacity can be read again", name);
    }
  }
}

void Fleet::ProbeAllNow() {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, e] : entries_) names.push_back(name);
  }
  for (const auto& name : names) {
    // Claimed like a worker claims it: a background probe still in flight
    // would otherwise land after this one and overwrite its result.
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        auto it = entries_.find(name);
        return stopping_ || it == entries_.end() || !it->second.probing;
      });
      auto it = entries_.find(name);
      if (stopping_ || it == entries_.end()) continue;
      it->second.probing = true;
    }
    ProbeOne(name);
    std::lock_guard lock(mu_);
    ReleaseLocked(name);
  }
}

bool Fleet::ProbeSoon(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end() || !it->second.creds) return false;
  Entry& e = it->second;
  if (e.view.health.state != HealthState::kNotReady) return false;
  if (e.probing) {
    // One in flight (waiting out a deadline, maybe, begun before the
    // cluster answered again): another right after it.
    e.reprobe = true;
    return true;
  }
  const int64_t now = clock_.MonotonicMillis();
  if (e.next_probe_ms <= now) return false;  // due already
  e.next_probe_ms = now;
  cv_.notify_all();
  return true;
}

void Fleet::ReleaseLocked(const std::string& name) {
  if (auto it = entries_.find(name); it != entries_.end()) {
    it->second.probing = false;
    // Asked for again (ProbeSoon, a reload) after the probe's verdict was
    // recorded, but before it let go: due now, or the ask would be lost
    // until the backed-off probe.
    if (it->second.reprobe) {
      it->second.next_probe_ms = clock_.MonotonicMillis();
      it->second.reprobe = false;
    }
  }
  cv_.notify_all();  // ProbeAllNow may wait for this cluster, a worker for any
}

void Fleet::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    int64_t now = clock_.MonotonicMillis();
    // The cluster due longest, among those this worker may take: one out
    // of reach only while another worker is left for the Ready ones.
    const bool may_take_out = workers_started_ <= 1 || probing_out_ < workers_started_ - 1;
    std::string due;
    int64_t due_at = 0;
    bool due_out = false;
    int64_t next = now + options_.probe_interval_ms;
    for (auto& [name, e] : entries_) {
      if (e.probing) continue;
      const bool out = e.view.health.state == HealthState::kNotReady;
      if (out && !may_take_out) continue;  // a release wakes this worker (ReleaseLocked)
      if (e.next_probe_ms <= now) {
        if (due.empty() || e.next_probe_ms < due_at) {
          due = name;
          due_at = e.next_probe_ms;
          due_out = out;
        }
        continue;
      }
      next = std::min(next, e.next_probe_ms);
    }
    if (due.empty()) {
      // Bounded so a clock jump (or a fake clock in tests) is noticed soon.
      cv_.wait_for(lock, std::chrono::milliseconds(std::clamp<int64_t>(next - now, 1, 500)));
      continue;
    }
    entries_[due].probing = true;
    if (due_out) ++probing_out_;
    lock.unlock();
    ProbeOne(due);
    lock.lock();
    if (due_out) --probing_out_;
    ReleaseLocked(due);
  }
}

std::map<std::string, Fleet::Outage> Fleet::Outages() const {
  std::lock_guard lock(mu_);
  std::map<std::string, Outage> out;
  for (const auto& [name, e] : entries_) {
    const ClusterHealth& h = e.view.health;
    if (!e.view.Usable() || h.state != HealthState::kNotReady) continue;
    out[name] = {h.first_lost_ms.value_or(h.since_ms), h.credentials_refused};
  }
  return out;
}

// The entry's view, with what its token file's rotation went wrong as a
// credentials warning (its token read before is sent meanwhile).
ClusterView Fleet::ViewOf(const Entry& e) {
  ClusterView view = e.view;
  if (view.credentials_warning.empty() && e.creds && e.creds->token_source) {
    view.credentials_warning = e.creds->token_source->problem();
  }
  return view;
}

std::vector<ClusterView> Fleet::Clusters() const {
  std::lock_guard lock(mu_);
  std::vector<ClusterView> out;
  for (const auto& [name, e] : entries_) out.push_back(ViewOf(e));
  return out;
}

std::optional<ClusterView> Fleet::Cluster(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  return ViewOf(it->second);
}

std::optional<ClusterCredentials> Fleet::Credentials(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  return it->second.creds;
}

std::vector<placement::ClusterSnapshot> Fleet::Snapshot(int64_t now_ms) const {
  std::lock_guard lock(mu_);
  std::vector<placement::ClusterSnapshot> out;
  for (const auto& [name, e] : entries_) {
    placement::ClusterSnapshot s = ToClusterSnapshot(e.view.config);
    s.health = ToPlacementHealth(e.view.health, now_ms,
                                 e.view.health.LostTimeoutMs(options_.lost_timeout_ms, options_.refused_timeout_ms));
    // Not probed: whatever its health last said, gantry knows nothing now.
    if (!e.view.Usable()) s.health = placement::ClusterHealth::kUnknown;
    s.config_refused = !e.view.config_error.empty();
    s.credentials_unloadable = !e.view.credentials_error.empty();
    if (e.view.capacity) {
      s.capacity.quota = e.view.capacity->quota;
      s.capacity.queues = e.view.capacity->queues;  // shared, not copied
      s.capacity.pending_workloads = e.view.capacity->pending_workloads;
      s.capacity.age_ms = now_ms - e.view.capacity_at_ms;
      // Unreadable now (a 403, a bad quantity): the last reading is no
      // better than a stale one.
      s.capacity.stale = s.capacity.age_ms > options_.stale_after_ms || !e.view.capacity_error.empty();
    } else {
      s.capacity.stale = true;
      s.capacity_unread = true;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gantry::inventory
