// ClusterStateStore: what the store keeps about worker clusters, as opposed
// to jobs: when each cluster's current outage began (first_lost), and since
// when it refuses gantry a watch, so that the timeouts measured from them
// survive a daemon restart; and which cluster each entry reaches.
//
// Thread-safety: as JobStore (writes are group-committed; callbacks run on
// the writer thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "gantry/store/job_store.h"

namespace gantry {

// A cluster's current outage: when it began, and whether its latest failure
// was a refusal of gantry's credentials (inventory::ClusterHealth).
struct ClusterOutage {
  int64_t first_lost_ms = 0;
  bool credentials_refused = false;
  bool operator==(const ClusterOutage&) const = default;
};

class ClusterStateStore {
 public:
  virtual ~ClusterStateStore() = default;
  // cluster -> its outage, for every cluster in one.
  virtual Result<std::map<std::string, ClusterOutage>> LoadOutages() = 0;
  // Records (replacing any row) or clears (nullopt) a cluster's outage.
  virtual void SaveOutage(std::string cluster, std::optional<ClusterOutage> outage,
                          std::string last_error, StoreCallback<bool> done) = 0;
  // key -> since_ms for every watch refusal: the key is a cluster's name
  // (its Workloads or Jobs), or "<cluster>/<resource>" for one optional
  // kind there (the engine's; names have no slash).
  virtual Result<std::map<std::string, int64_t>> LoadWatchRefusals() = 0;
  // Records (since_ms set, replacing any row) or clears (nullopt) a watch
  // refusal, by key (above).
  virtual void SaveWatchRefusal(std::string cluster, std::optional<int64_t> since_ms, StoreCallback<bool> done) = 0;
  // cluster -> the identity its entry reached (the uid of its kube-system
  // Namespace), for every entry whose identity was read.
  virtual Result<std::map<std::string, std::string>> LoadClusterIds() = 0;
  // Records (replacing any row) or clears (nullopt) an entry's identity.
  virtual void SaveClusterId(std::string cluster, std::optional<std::string> cluster_id,
                             StoreCallback<bool> done) = 0;
};

}  // namespace gantry
