// ClusterState: everything one simulated cluster knows, behind one mutex:
// the object store, the watch hub and the simulated Kueue. The HTTP layer
// (KubeApi) and the admin API call it; a ticker calls Tick() to let time
// pass (admission delay, job run time, watch deadlines, bookmarks).
//
// Thread-safety: every public method is safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/clock.h"
#include "gantry/common/status.h"
#include "gantry/http/message.h"
#include "journal.h"
#include "kueue_controller.h"
#include "label_selector.h"
#include "object_store.h"
#include "resources.h"
#include "sim_config.h"
#include "watch_hub.h"

namespace gantry::sim {

struct WatchRequest {
  const ResourceInfo* resource = nullptr;
  std::string api_version;  // "kueue.x-k8s.io/v1beta1"
  std::string ns;           // "" = all namespaces
  LabelSelector selector;
  std::string resource_version;  // "" or "0": current state first, then changes
  bool bookmarks = false;
  int64_t timeout_ms = 0;        // 0 = the cluster's randomized default
  std::shared_ptr<http::ResponseStream> stream;
};

class ClusterState {
 public:
  // journal and clock must outlive this.
  ClusterState(ClusterConfig config, Journal* journal, const Clock* clock);

  const ClusterConfig& config() const { return config_; }
  // The uid of its kube-system Namespace, the cluster's identity by custom
  // (made at start: two entries of gantry's inventory that reach one
  // cluster read the same).
  const std::string& system_uid() const { return system_uid_; }

  // Create and Delete answer with the object as stored (as deleted), as
  // text: the text its watch event already serialized, with the storage
  // apiVersion (WithApiVersion sets another). `version` is the API version
  // the client writes through ("v1beta1"; "" = the storage version): what
  // validation checks may differ by version (validation.h).
  Result<std::string> Create(const ResourceInfo& res, const std::string& ns, nlohmann::json object,
                             const std::string& version = "");
  Result<nlohmann::json> Get(const ResourceInfo& res, const std::string& ns, const std::string& name);
  // Returns a List object ({"kind":"WorkloadList","metadata":{resourceVersion,continue},...}).
  Result<nlohmann::json> List(const ResourceInfo& res, const std::string& api_version, const std::string& ns,
                              const LabelSelector& selector, std::size_t limit, const std::string& continue_token);
  // patch_type: "merge" (merge-patch and strategic-merge-patch) or "json"
  // (RFC 6902). status=true patches only .status (the /status subresource);
  // status=false leaves .status as it was (as the API server does for a
  // kind with a status subresource). version: as for Create.
  Result<nlohmann::json> Patch(const ResourceInfo& res, const std::string& ns, const std::string& name,
                               const std::string& patch_type, const nlohmann::json& patch, bool status,
                               const std::string& version = "");
  // preconditions: DeleteOptions.preconditions; an object whose uid or
  // resourceVersion differs is not deleted (409 Conflict), as the API server.
  // (A patch's own metadata.resourceVersion is a precondition too: Patch.)
  Result<std::string> Delete(const ResourceInfo& res, const std::string& ns, const std::string& name,
                             const std::string& propagation_policy, const nlohmann::json& preconditions = {});
  // Writes the initial events (or a 410 ERROR event) and registers the stream.
  void Watch(WatchRequest request);

  void Tick();

  // Admin operations.
  Status Evict(const std::string& ns, const std::string& name);
  // KueueController::SetCheckState.
  Status SetCheckState(const std::string& ns, const std::string& name, const std::string& check, CheckState state);
  void SetQuota(const ResourceList& quota);
  // KueueController::AddLocalQueue.
  Status AddLocalQueue(const std::string& ns, const std::string& name);
  void KillWatches();
  // WatchHub::Hold / Release.
  void HoldWatches(bool hold);
  nlohmann::json Summary();
  // For tests: quota reserved now.
  ResourceList Reserved();

 private:
  int64_t WatchTimeout(int64_t requested_ms);
  static Status CheckDeletePreconditions(const ResourceInfo& res, const nlohmann::json& cur,
                                         const nlohmann::json& want);
  static Status CheckPatchedMetadata(const ResourceInfo& res, const nlohmann::json& cur, const nlohmann::json& patched,
                                     bool status);

  const ClusterConfig config_;
  const std::string system_uid_;
  Journal* journal_;
  const Clock* clock_;
  std::mutex mu_;
  WatchHub hub_;
  ObjectStore store_;
  KueueController kueue_;
  std::mt19937_64 rng_;
  // A list in pages is served from one snapshot, as an API server serves
  // it: the first page takes the whole result at its resourceVersion, and
  // the continue token names it ("ID|OFFSET"). The last kListSnapshots are
  // kept; an older token is answered 410 Expired, and the client lists anew.
  struct ListSnapshot {
    int64_t resource_version = 0;
    std::vector<nlohmann::json> items;
  };
  static constexpr std::size_t kListSnapshots = 16;
  std::map<uint64_t, ListSnapshot> list_snapshots_;  // by id; guarded by mu_
  uint64_t next_list_snapshot_ = 1;                   // guarded by mu_
};

}  // namespace gantry::sim
