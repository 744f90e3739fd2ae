// Fleet test fixtures: a fake prober, cluster files and the real SQLite
// store in a temporary directory.
#pragma once

#include <catch2/catch.hpp>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gantry/inventory/fleet.h"
#include "gantry/store/sqlite_store.h"
#include "test_support.h"

namespace gantry::inventory {

// cluster -> flag, set by the test thread (`flags = {{"c1", true}}`,
// `flags["c1"] = false`) while the fleet's probe threads read it: every
// access under one lock, and a read never inserts.
class ClusterFlags {
 public:
  class Ref {
   public:
    Ref(ClusterFlags& flags, std::string cluster) : flags_(flags), cluster_(std::move(cluster)) {}
    Ref& operator=(bool value) {
      std::lock_guard lock(flags_.mu_);
      flags_.flags_[cluster_] = value;
      return *this;
    }
    operator bool() const { return flags_.Get(cluster_); }  // NOLINT: reads as the map did

   private:
    ClusterFlags& flags_;
    std::string cluster_;
  };
  ClusterFlags& operator=(std::initializer_list<std::pair<const std::string, bool>> flags) {
    std::lock_guard lock(mu_);
    flags_ = flags;
    return *this;
  }
  Ref operator[](const std::string& cluster) { return Ref(*this, cluster); }
  bool Get(const std::string& cluster) const {
    std::lock_guard lock(mu_);
    auto it = flags_.find(cluster);
    return it != flags_.end() && it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, bool> flags_;
};

class FakeProber final : public ClusterProber {
 public:
  ClusterFlags up;  // cluster -> answers
  ClusterFlags refuses;  // cluster -> answers 401 (when up)
  ClusterFlags forbids_queues;  // cluster -> 403 on listing ClusterQueues (when up)
  ClusterFlags forbids_kube_system;  // cluster -> 403 on its kube-system Namespace: no identity read
  // cluster -> its probe waits, as a connect to a blackholed address waits
  // out its deadline, until Release(); then it fails.
  ClusterFlags blocks;
  // cluster -> once released, its blocked probe answers as an up one does
  // (a probe still in flight when something changes).
  ClusterFlags answers_after_block;
  // cluster -> its probe fails once slow_ms have passed on slow_clock (a
  // deadline waited out with no answer).
  ClusterFlags slow;
  FakeClock* slow_clock = nullptr;
  int64_t slow_ms = 5'000;
  Result<CapacityReading> Probe(const ClusterConfig& config, const ClusterCredentials&) override {
    {
      std::lock_guard lock(probes_mu_);
      ++probes_[config.name];
    }
    // Read as the probe begins: one in flight answers with what it reached.
    const std::string id = ClusterId(config.name);
    if (blocks.Get(config.name)) {
      std::unique_lock lock(probes_mu_);
      ++blocked_;
      released_cv_.wait(lock, [&] { return released_; });
      --blocked_;
      if (!answers_after_block.Get(config.name)) return Status::Unavailable("connect: timed out");
    }
    if (slow.Get(config.name) && slow_clock) {
      slow_clock->Advance(slow_ms);
      return Status::Deadline("GET /readyz: no answer within 5000 ms");
    }
    if (!up.Get(config.name)) return Status::Unavailable("connect: connection refused");
    if (refuses.Get(config.name)) return Status(Code::kUnauthenticated, "/readyz answered 401");
    CapacityReading r;
    if (forbids_queues.Get(config.name)) {
      r.unreadable = "listing ClusterQueues is forbidden (403)";
      return r;
    }
    r.quota["nvidia.com/gpu"] = {32'000, 8'000};
    r.pending_workloads = 2;
    r.cluster_id = id;
    r.cluster_id_status = id.empty() ? 0 : 200;
    if (forbids_kube_system.Get(config.name)) {
      r.cluster_id.clear();
      r.cluster_id_status = 403;
      r.cluster_id_refused = true;
    }
    r.clock_offset_ms = ClockOffset(config.name);
    return r;
  }
  // The clock offset a cluster's probe reads (unset: none told).
  void SetClockOffset(const std::string& cluster, std::optional<int64_t> offset_ms) {
    std::lock_guard lock(probes_mu_);
    offsets_[cluster] = offset_ms;
  }
  std::optional<int64_t> ClockOffset(const std::string& cluster) const {
    std::lock_guard lock(probes_mu_);
    auto it = offsets_.find(cluster);
    return it == offsets_.end() ? std::nullopt : it->second;
  }
  // The identity a cluster's probe reads (its kube-system uid; "" = none).
  void SetClusterId(const std::string& cluster, std::string id) {
    std::lock_guard lock(probes_mu_);
    ids_[cluster] = std::move(id);
  }
  std::string ClusterId(const std::string& cluster) const {
    std::lock_guard lock(probes_mu_);
    auto it = ids_.find(cluster);
    return it == ids_.end() ? "" : it->second;
  }
  // How many times the cluster was probed (from any thread).
  int Probes(const std::string& cluster) const {
    std::lock_guard lock(probes_mu_);
    auto it = probes_.find(cluster);
    return it == probes_.end() ? 0 : it->second;
  }
  // Probes waiting in `blocks` now.
  int Blocked() const {
    std::lock_guard lock(probes_mu_);
    return blocked_;
  }
  // Ends every wait in `blocks`, now and later.
  void Release() {
    std::lock_guard lock(probes_mu_);
    released_ = true;
    released_cv_.notify_all();
  }

 private:
  mutable std::mutex probes_mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
  int blocked_ = 0;
  std::map<std::string, int> probes_;
  std::map<std::string, std::string> ids_;
  std::map<std::string, std::optional<int64_t>> offsets_;
};

// The API server a cluster named so has in WriteCluster: one of its own
// (two entries reaching one server are held, Fleet::HoldSameServer).
inline std::string ServerOf(const std::string& name) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return "https://127.0.0.1:" + std::to_string(20000 + h % 40000);
}

inline void WriteCluster(const std::string& dir, const std::string& name, const std::string& server = "",
                         const std::string& token = "not-a-real-token-123") {
  std::ofstream(dir + "/" + name + ".kubeconfig") << R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: ")" << (server.empty() ? ServerOf(name) : server) << R"("}}]
users: [{name: u, user: {token: )" << token << R"(}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)";
  std::ofstream(dir + "/clusters.d/" + name + ".yaml")
      << "name: " << name << "\nkubeconfig: ../" << name << ".kubeconfig\nregion: eu-central-1\n";
}

// The real store in dir (fails the test when it cannot be opened).
inline std::unique_ptr<SqliteStore> OpenStore(const testing::TempDir& dir) {
  SqliteStoreOptions options;
  options.path = dir.File("gantry.db");
  auto store = OpenSqliteStore(options);
  REQUIRE(store.ok());
  return std::move(store.value());
}

// A clusters.d with the named clusters, the real store beside it, and fleet
// options that read that directory.
struct FleetDir {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store;
  FleetOptions options;
  explicit FleetDir(std::initializer_list<const char*> clusters) {
    std::filesystem::create_directories(dir.File("clusters.d"));
    for (const char* name : clusters) WriteCluster(dir.path(), name);
    store = OpenStore(dir);
    options.clusters_dir = dir.File("clusters.d");
  }
};

// The daemon's run before the test's: every cluster probed once (`check`
// looks at that fleet before it stops), until the store holds the outage
// of `down`, which did not answer.
inline void RunBefore(FleetDir& fleet_dir, FakeProber& prober, const Clock& clock, const std::string& down,
                      const std::function<void(Fleet&)>& check = {}) {
  {
    Fleet fleet(prober, *fleet_dir.store, clock, fleet_dir.options);
    fleet.Start();
    fleet.ProbeAllNow();
    if (check) check(fleet);
    fleet.Stop();
  }
  REQUIRE(testing::WaitFor([&] { return fleet_dir.store->LoadOutages()->count(down) == 1; }));
}

}  // namespace gantry::inventory
