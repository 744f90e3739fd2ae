// Engine: since when each cluster has kept gantry from listing what it
// watches there (see engine.h, watch_refused_since_), kept in the store
// across restarts so that credentialsRefusedTimeoutSeconds counts from the
// first refusal.
#include <spdlog/spdlog.h>

#include "gantry/dispatch/engine.h"

namespace gantry::dispatch {

// watch_refused_since_'s key for an optional kind's refusal in a cluster.
std::string Engine::RefusalKey(const std::string& cluster, const std::string& resource) {
  return cluster + "/" + resource;
}

// (cluster, resource) of such a key; resource "" for a cluster's own.
std::pair<std::string, std::string> Engine::SplitRefusalKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return {key, ""};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

void Engine::SaveWatchRefusal(const std::string& cluster, std::optional<int64_t> since_ms) {
  if (!cluster_state_) return;
  cluster_state_->SaveWatchRefusal(cluster, since_ms, [cluster, since_ms](Result<bool> saved) {
    if (saved.ok()) return;
    // The engine's own time stands until it restarts; then the clock starts again.
    spdlog::warn("dispatch: cluster {}: watch refusal {} not kept in the store: {}", cluster,
                 since_ms ? "start" : "end", saved.status().ToString());
  });
}

int64_t Engine::NoteWatchRefusalLocked(const std::string& key, bool refused, int64_t now_ms) {
  auto it = watch_refused_since_.find(key);
  if (refused) {
    if (it == watch_refused_since_.end()) {
      it = watch_refused_since_.emplace(key, now_ms).first;
      SaveWatchRefusal(key, now_ms);
    }
    return it->second;
  }
  // Not refused now, and its Workloads and Jobs listed: allowed again. Not
  // listed (starting, or out of reach): not known yet, so a time kept from
  // before a restart stays. (An optional kind's key: RefreshFleetLocked.)
  if (it != watch_refused_since_.end() && observer_->SyncedForJobs(key)) {
    watch_refused_since_.erase(it);
    SaveWatchRefusal(key, std::nullopt);
  }
  return -1;
}

std::string Engine::WatchRefused(const std::string& cluster) {
  const std::shared_ptr<const FleetFacts> facts = Facts(clock_.NowMillis());
  auto it = facts->find(cluster);
  if (it == facts->end()) return "";
  if (!it->second.watch_refused.empty()) return it->second.watch_refused;
  return it->second.kind_refused.empty() ? "" : it->second.kind_refused.begin()->second.why;
}

std::string Engine::KindRefused(const std::string& cluster, const JobKind& kind) {
  const std::string resource = observer_->OptionalResourceOf(kind);
  if (resource.empty()) return "";
  const std::shared_ptr<const FleetFacts> facts = Facts(clock_.NowMillis());
  auto it = facts->find(cluster);
  return it != facts->end() && it->second.kind_refused.count(resource) ? resource : "";
}

int64_t Engine::WatchRefusedSince(const std::string& cluster) {
  std::lock_guard lock(fleet_mu_);
  auto it = watch_refused_since_.find(cluster);
  if (it != watch_refused_since_.end()) return it->second;
  // Else its optional kinds' earliest (WatchRefused tells theirs then).
  int64_t since = 0;
  for (it = watch_refused_since_.lower_bound(cluster + "/"); it != watch_refused_since_.end(); ++it) {
    if (SplitRefusalKey(it->first).first != cluster) break;
    if (since == 0 || it->second < since) since = it->second;
  }
  return since;
}

bool Engine::WatchRefusalsToNote() {
  {
    std::lock_guard lock(fleet_mu_);
    if (!watch_refused_since_.empty()) return true;
  }
  return !observer_->WatchRefusals().empty() || !observer_->KindRefusals().empty();
}

std::map<std::pair<std::string, std::string>, int64_t> Engine::ReadGone(const std::string& uid,
                                                                        const std::vector<RemoteIntent>& intents) {
  std::map<std::pair<std::string, std::string>, int64_t> out;
  if (unseen_.size() == 0) return out;  // rarely any: asked once
  for (const RemoteIntent& i : intents) {
    if (i.present || !i.refusal.empty()) continue;
    if (const int64_t at = unseen_.GoneAt(UnseenAsks::Key(uid, i.cluster, i.kind, i.epoch))) {
      out[{i.cluster, i.kind}] = at;
    }
  }
  return out;
}

std::vector<std::string> Engine::EarlierRunsHolding(const JobRecord& job, std::vector<RemoteIntent> intents) {
  auto parsed = specs_.Get(job);
  if (!parsed.ok()) return {};
  const int64_t now = clock_.NowMillis();
  DecideInput in;
  in.job = &job;
  in.spec = &(*parsed)->spec;
  in.intents = std::move(intents);
  in.read_gone = ReadGone(job.uid, in.intents);
  Observe(in, job.uid, job.epoch, (*parsed)->kind, now, /*settle=*/false);
  in.inventory_confirmed = inventory_confirmed_.load();
  in.started_ms = started_ms_;
  in.since_start_ms = SinceStartMs();
  in.clusters = Facts(now);
  in.now_ms = now;
  in.options = options_.decide;
  return EarlierRunsHoldingCopies(in);
}

}  // namespace gantry::dispatch
