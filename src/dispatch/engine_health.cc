// Engine::RunHealthWatch: turns changes of cluster readiness into wake-ups.
// Watches report object changes, but a partition changes no object: without
// this, a job whose owner went away would wait for its next resync before
// its cluster-lost clock was looked at.
#include <spdlog/spdlog.h>

#include "gantry/dispatch/engine.h"
#include "gantry/store/job_scan.h"

namespace gantry::dispatch {

// A cluster's readiness as the health watch compares it: Ready since when
// (a NotReady blip between two looks changes the time), or not ready.
struct Readiness {
  bool ready = false;
  int64_t since_ms = 0;
  friend bool operator==(const Readiness&, const Readiness&) = default;
};

void Engine::RunHealthWatch() {
  std::map<std::string, Readiness> last;  // cluster -> at the previous look
  // cluster -> the health Ready time at which its view, behind, was kicked to relist
  std::map<std::string, int64_t> relisted;
  std::unique_lock lock(gc_mu_);
  while (!stopping_) {
    gc_cv_.wait_for(lock, std::chrono::milliseconds(options_.health_poll_ms));
    if (stopping_) return;
    lock.unlock();
    // While a cluster refuses a watch, keeps the fleet view, and with it the
    // refusal's clock and its row in the store, current when no pass runs.
    if (WatchRefusalsToNote()) (void)Facts(clock_.NowMillis());
    std::map<std::string, Readiness> now;
    std::map<std::string, int64_t> still_behind;
    for (const inventory::ClusterView& view : fleet_.Clusters()) {
      const std::string& name = view.config.name;
      const bool answers = view.health.state == inventory::HealthState::kReady;
      const bool ready = answers && observer_->Synced(name);
      now[name] = {ready, ready ? view.health.since_ms : 0};
      // Answering again while its view is behind: relisted now, once per
      // Ready period, rather than after the rest of its watches' backoff
      // (up to 30 s, during which absence there proves nothing).
      if (!answers || !observer_->Behind(name)) continue;
      still_behind[name] = view.health.since_ms;
      auto kicked = relisted.find(name);
      if (kicked != relisted.end() && kicked->second == view.health.since_ms) continue;
      spdlog::info("dispatch: cluster {} answers again while its watches wait to relist: relisting now", name);
      observer_->Relist(name);
    }
    relisted = std::move(still_behind);
    bool became_ready = false;
    for (const auto& [cluster, readiness] : now) {
      const bool ready = readiness.ready;
      auto before = last.find(cluster);
      if (before != last.end() && before->second == readiness) continue;
      if (before == last.end() && !ready) continue;  // never seen ready: nothing of ours depends on it yet
      became_ready |= ready;
      {
        // The passes woken below must see this change: the cached view may
        // predate it by up to fleet_refresh_ms, and a job whose only
        // business is with this cluster is not woken again (declared lost).
        std::lock_guard fleet_lock(fleet_mu_);
        fleet_read_ms_ = -1;
      }
      size_t woken = 0;
      Status scanned = ForEachUidWithIntents(store_, &cluster, [&](const std::string& uid) {
        reconciler_->WakeUrgent(uid);
        ++woken;
      });
      if (!scanned.ok()) spdlog::warn("dispatch: jobs in {}: {}", cluster, scanned.ToString());
      if (woken > 0) {
        spdlog::info("dispatch: cluster {} is {}: looking again at {} job(s) with objects there", cluster,
                     ready ? "reachable" : "unreachable", woken);
      }
    }
    // A cluster that became Ready may be the first candidate of a job that
    // had none: queued jobs are looked at again (behind the jobs in flight).
    if (became_ready) {
      if (auto woken = reconciler_->WakeQueued(); !woken.ok()) {
        spdlog::warn("dispatch: queued jobs: {}", woken.status().ToString());
      }
    }
    last = std::move(now);
    lock.lock();
  }
}

}  // namespace gantry::dispatch
