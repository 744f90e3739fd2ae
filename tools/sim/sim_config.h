// The simulator's configuration: the clusters to start and how each behaves.
// Read from YAML (--config) or made by MakeVariedClusters (--clusters N).
//
// sim.yaml:
//   clusters:
//   - name: c1                        # DNS-1123 label, required
//     region: us-east-1               # zone, labels: optional
//     accelerator: {model: H100-80GB, memoryGiB: 80, gpusPerNode: 8, interconnect: nvlink}
//     nodes: 4                        # nodes of that shape
//     cpuPerNode: "96"                # quantity
//     memoryPerNode: 1Ti
//     flavor: h100                    # ResourceFlavor name
//     clusterQueue: cluster-queue
//     quota: {cpu: "384", memory: 4Ti, nvidia.com/gpu: "32"}  # default: nodes x shape
//     localQueues: [team-a/team-a, default/user-queue]        # namespace/name
//     pricePerGPUHour: 2.5
//     datasets: ["s3://corpus/v3"]
//     excludeResourcePrefixes: [ephemeral-storage]  # as Kueue's Configuration: not counted
//     complianceZones: [us]
//     kueueAPIVersion: v1beta2
//     admissionDelay: 100ms           # durations: 250ms, 30s, 5m, 1h
//     admissionChecks:                # the ClusterQueue's; none by default
//     - {name: provisioning, outcome: Ready, delay: 2s}
//     preemption:                     # default: Never, victims stop at once
//       withinClusterQueue: LowerPriority
//       victimStopDelay: 3s           # a victim's quota held this long after its eviction
//     jobDuration: 10s
//     terminationGrace: 0s            # a deleted job's pods run on this long (see ClusterConfig)
//     apiLatency: 0ms
//     watchTimeout: [30m, 60m]        # randomized per watch within [min, max]
//     historyLimit: 1000              # watch events kept for resume
//     bookmarkInterval: 10s
//     port: 0
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gantry/common/status.h"
#include "quota.h"

namespace gantry::sim {

struct AcceleratorConfig {
  std::string model;        // "" = CPU-only cluster
  int64_t memory_gib = 0;
  int64_t gpus_per_node = 0;
  std::string interconnect;
};

// The states of a Workload's admission check (Workload status.admissionChecks[].state).
enum class CheckState { kPending, kReady, kRetry, kRejected };

// One admission check of the cluster's ClusterQueue (a Kueue AdmissionCheck,
// e.g. a ProvisioningRequest). Once a Workload has quota, the check is
// Pending; `delay_ms` of simulated time later it takes `outcome`. An outcome
// of Pending holds it there until it is set by hand (gantry-sim ctl
// admission-check).
struct AdmissionCheckConfig {
  std::string name;
  CheckState outcome = CheckState::kReady;
  int64_t delay_ms = 0;
};

// The ClusterQueue's spec.preemption.withinClusterQueue: whether a pending
// Workload that does not fit may evict lower-priority ones (admission.h).
// Kueue's LowerOrNewerEqualPriority is not simulated.
enum class PreemptionPolicy { kNever, kLowerPriority };

struct ClusterConfig {
  std::string name;
  std::string region = "local";
  std::string zone;
  std::map<std::string, std::string> labels;
  AcceleratorConfig accelerator;
  int64_t nodes = 4;
  int64_t cpu_per_node_milli = 96'000;
  int64_t memory_per_node_milli = (int64_t{1} << 40) * 1000;  // 1 Ti
  std::string flavor = "default-flavor";
  std::string cluster_queue = "cluster-queue";
  ResourceList quota;  // nominal quota; empty = nodes x shape
  std::vector<std::pair<std::string, std::string>> local_queues;  // (namespace, name)
  double price_per_gpu_hour = 0;
  std::vector<std::string> datasets;
  // Kueue's Configuration resources.excludeResourcePrefixes: requests of
  // these resources are left out of a Workload's demand (and written to
  // gantry's clusters.d file, as an operator would).
  std::vector<std::string> exclude_resource_prefixes;
  std::vector<std::string> compliance_zones;
  std::string kueue_api_version = "v1beta2";
  int64_t admission_delay_ms = 0;
  // None: admission is one status write, QuotaReserved and Admitted together.
  std::vector<AdmissionCheckConfig> admission_checks;
  // Never (Kueue's default): a Workload that does not fit waits.
  PreemptionPolicy within_cluster_queue = PreemptionPolicy::kNever;
  // How long a Workload evicted to make room for a preemptor keeps its quota
  // (as Kueue counts it until the victim's pods are gone); the preemptor
  // waits until then (admission.h). 0: released at once, the preemptor
  // admitted in the pass that evicts its victims.
  int64_t victim_stop_delay_ms = 0;
  int64_t job_duration_ms = 10'000;
  // How long a deleted job's pods take to stop (their grace period). With
  // propagationPolicy Background (or Orphan) the job's object goes at once
  // and its run ends this much later; with Foreground the object stays,
  // marked for deletion (deletionTimestamp, finalizer foregroundDeletion),
  // until its run ends. 0: the run ends with the delete.
  int64_t termination_grace_ms = 0;
  int64_t api_latency_ms = 0;
  int64_t watch_timeout_min_ms = 30 * 60'000;
  int64_t watch_timeout_max_ms = 60 * 60'000;
  std::size_t history_limit = 1000;
  int64_t bookmark_interval_ms = 10'000;
  uint16_t port = 0;
};

struct SimConfig {
  std::vector<ClusterConfig> clusters;
};

// Fills the defaults that depend on other fields (quota from the node
// shape, default LocalQueues). Idempotent.
void FinishClusterConfig(ClusterConfig* c);

Result<SimConfig> LoadSimConfig(const std::string& path);
Result<SimConfig> ParseSimConfig(const std::string& yaml_text);
// c1..cN with different regions, GPU models, sizes and prices.
SimConfig MakeVariedClusters(int n);
// "250ms", "30s", "5m", "1h" -> milliseconds.
Result<int64_t> ParseDurationMs(const std::string& text);
// Kueue's names of the check states: "Pending", "Ready", "Retry", "Rejected".
const char* CheckStateName(CheckState state);
Result<CheckState> ParseCheckState(const std::string& name);
// Kueue's names of the policies: "Never", "LowerPriority".
const char* PreemptionPolicyName(PreemptionPolicy policy);
Result<PreemptionPolicy> ParsePreemptionPolicy(const std::string& name);

}  // namespace gantry::sim
