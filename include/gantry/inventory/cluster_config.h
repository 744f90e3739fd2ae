// ClusterConfig: the static description of one worker cluster, read from one
// file in `clusters.d/*.yaml` (one file per cluster).
//
// Parsing is strict: an unknown field, a wrong type or a bad value is an error
// naming the file, the line and the field, e.g.
//   "clusters.d/gpu-eu-1.yaml: line 7: accelerators[0].interconnect: must be nvlink or pcie".
// Required fields: `name` (DNS-1123 label) and `kubeconfig`. Everything else
// is optional with the default written next to its member below.
//
// Thread-safety: plain values. Loading reads the file system and nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gantry/common/status.h"

namespace gantry::inventory {

// The Kueue API group version gantry writes Workloads with on this cluster.
enum class KueueApiVersion { kV1beta2, kV1beta1 };
std::string_view KueueApiVersionName(KueueApiVersion version);  // "v1beta2" | "v1beta1"

enum class AcceleratorInterconnect { kNvlink, kPcie };

// One accelerator pool (`accelerators[i]`).
struct AcceleratorConfig {
  std::string model;          // required, e.g. "H100"
  int64_t memory_gib = 0;     // required, > 0: memory of one accelerator
  int32_t gpus_per_node = 0;  // required, 1..kMaxGpusPerNode
  AcceleratorInterconnect interconnect = AcceleratorInterconnect::kPcie;  // default pcie
  bool rdma = false;

  friend bool operator==(const AcceleratorConfig&, const AcceleratorConfig&) = default;
};

// The largest node shape (`nodes`); unset as a whole when absent. Amounts are
// Kubernetes quantities ("96", "500m", "2Ti") stored in milli-units.
struct NodeShapeConfig {
  int64_t cpu_milli = 0;     // required within `nodes`, > 0
  int64_t memory_milli = 0;  // required within `nodes`, > 0 (bytes x 1000)
  int32_t count = 0;         // optional, >= 0; 0 = unknown

  friend bool operator==(const NodeShapeConfig&, const NodeShapeConfig&) = default;
};

// `pricePerGPUHour`: either a bare number (the on-demand price) or a mapping
// with `onDemand` and/or `spot`. Units are the operator's currency; only
// comparisons between clusters matter.
struct GpuPrice {
  std::optional<double> on_demand;
  std::optional<double> spot;

  friend bool operator==(const GpuPrice&, const GpuPrice&) = default;
};

struct ClusterConfig {
  std::string name;        // unique across clusters.d, DNS-1123 label
  std::string kubeconfig;  // absolute; a relative path is resolved against the file's dir
  std::string context;     // "" = the kubeconfig's current-context
  KueueApiVersion kueue_api_version = KueueApiVersion::kV1beta2;
  std::string region;
  std::string zone;
  std::string provider;
  std::vector<std::string> compliance_zones;
  std::map<std::string, std::string> labels;  // Kubernetes label key/value rules
  std::vector<AcceleratorConfig> accelerators;
  std::optional<NodeShapeConfig> nodes;
  GpuPrice price_per_gpu_hour;
  std::vector<std::string> datasets;
  // The worker Kueue's Configuration `resources.excludeResourcePrefixes`
  // (gantry cannot read it from the cluster): requests of a resource named
  // with one of these prefixes are not counted against its quota there.
  std::vector<std::string> exclude_resource_prefixes;
  // namespace -> LocalQueue name, only where the LocalQueue is not named like
  // the gantry queue; see LocalQueueFor().
  std::map<std::string, std::string> local_queues;
  bool cordoned = false;        // stop new nominations; running jobs unaffected
  // An operator's word that the cluster is gone for good (declaredLost):
  // nothing new goes there, no copy there takes a lease, and a job it owns
  // does not wait out the loss timeout once it stops answering. Unlike a
  // removed entry, it stays watched, so gantry withdraws what it left there
  // if it ever answers again (fencing).
  bool declared_lost = false;
  bool allow_insecure = false;  // permits `insecure-skip-tls-verify` in the kubeconfig

  // The file this entry came from (as given to LoadClusterFile); used by
  // LoadClusterDir to keep a last good entry when the file later breaks.
  std::string source_file;

  friend bool operator==(const ClusterConfig&, const ClusterConfig&) = default;
};

// The LocalQueue to use in `ns` for a gantry queue named `queue`: the mapped
// name if `local_queues` has `ns`, else `queue` itself (placement::LocalQueueIn,
// which placement applies to ClusterSnapshot::local_queues).
std::string LocalQueueFor(const ClusterConfig& config, const std::string& ns,
                          const std::string& queue);

// Parses one cluster file. Errors are kInvalidArgument ("<file>: line N: <field>: ...")
// or kIo when the file cannot be read. `<file>` is shown as
// "<parent dir name>/<file name>" (e.g. "clusters.d/gpu-eu-1.yaml").
Result<ClusterConfig> LoadClusterFile(const std::string& path);

// Why a cluster file was refused, without the file's name that
// LoadClusterFile and LoadClusterDir put first ("line 4: invalid YAML: ..."):
// for a message beside the path, which says it already.
std::string RefusalWithoutFile(const std::string& path, const std::string& message);

// The name of the cluster a refused cluster file most likely describes, for
// LoadClusterDir to hold that cluster in the inventory (ClusterPlaceholder):
// the file's top-level `name` if the file parses as YAML and that is a
// string and a DNS-1123 label, else the file's stem ("c1" for "c1.yaml") if
// that is one, else "". A file that cannot be read goes by its stem.
std::string LenientClusterName(const std::string& path);

// Parses YAML text. `display_name` prefixes every message; `base_dir`
// resolves a relative kubeconfig path. Used by LoadClusterFile and tests.
Result<ClusterConfig> ParseClusterConfig(std::string_view yaml, const std::string& display_name,
                                         const std::string& base_dir);

}  // namespace gantry::inventory
