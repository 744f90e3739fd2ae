// The job document: what users submit (gantry.dev/v1 Job, or a plain
// batch/v1 Job / jobset.x-k8s.io JobSet manifest), parsed, validated and
// normalized into a JobSpec.
//
// Validation covers everything checkable without a cluster and reports every
// problem with its field path, Kubernetes style
// ("spec.template.spec.template.spec.containers[0].resources.requests").
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry {

// One group of identical pods of the job, as Kueue's Workload podSets.
struct PodSet {
  std::string name;   // DNS-1123 label
  int32_t count = 1;  // number of pods
  // Per-pod requests in milli-units, summed over containers (and the max of
  // any single init container, as the kubelet computes it). Keys are resource
  // names: "cpu", "memory", "nvidia.com/gpu", ...
  std::map<std::string, int64_t> requests_milli;
  nlohmann::json pod_template;  // the PodTemplateSpec ({metadata, spec})
};

enum class DispatchMode { kAllAtOnce, kIncremental };
enum class OnClusterLoss { kRequeue, kFail, kWait };

struct AcceleratorConstraint {
  std::string model;                    // "" = any
  std::optional<int64_t> min_memory_gib;
  std::string interconnect;             // "" | "nvlink" | "pcie"
};

struct PlacementConstraints {
  std::vector<std::string> clusters;          // allowlist; empty = any
  std::vector<std::string> regions;
  std::vector<std::string> compliance_zones;
  std::map<std::string, std::string> cluster_match_labels;
  std::optional<AcceleratorConstraint> accelerator;
  std::vector<std::string> datasets;
  std::optional<double> max_price_per_gpu_hour;
};

struct DispatchOptions {
  DispatchMode mode = DispatchMode::kAllAtOnce;
  int32_t step_size = 3;          // Incremental: clusters added per round (1..100)
  int32_t round_seconds = 60;     // Incremental: seconds between rounds (1..86400)
  std::optional<int32_t> timeout_seconds;  // fail if no admission by then
};

struct JobSpec {
  std::string name;
  std::string ns = "default";
  std::map<std::string, std::string> labels;
  std::string queue;
  int32_t priority = 0;
  PlacementConstraints placement;
  DispatchOptions dispatch;
  OnClusterLoss on_cluster_loss = OnClusterLoss::kRequeue;
  // How long the job's Workload and real job stay in its cluster after it
  // finished there (0..kMaxFinishedRetentionSeconds); unset: the daemon's
  // finishedRetentionSeconds.
  std::optional<int32_t> finished_retention_seconds;
  nlohmann::json template_object;  // the Kubernetes object to run (apiVersion, kind, metadata, spec)
  // Where template_object is in the document submitted, for messages:
  // "spec.template" in a gantry.dev/v1 Job, "" when the document is the
  // manifest itself. Not stored.
  std::string template_path = "spec.template";
  std::vector<PodSet> pod_sets;    // derived from the template, or given explicitly
};

// onClusterLoss Fail or Wait: the job promises at-most-once execution (its
// real job carries gantry.dev/at-most-once) and is never dispatched again
// once leased; Requeue lets it run again elsewhere.
inline bool AtMostOnce(const JobSpec& spec) { return spec.on_cluster_loss != OnClusterLoss::kRequeue; }

struct FieldError {
  std::string field;    // path, e.g. "spec.queue"
  std::string message;  // what is wrong, e.g. "Required value"
};

// Why a document was refused. code is 400 for a body that cannot be parsed
// at all (not JSON/YAML, not an object) and 422 for a parsed document that
// breaks a rule; causes lists every offending field (422).
struct DocumentError {
  int code = 422;
  std::string message;
  std::vector<FieldError> causes;
};

enum class DocumentFormat { kJson, kYaml };

// Longest a finished job's objects may stay in its cluster: 7 days (the
// daemon's finishedRetentionSeconds has the same bound).
inline constexpr int32_t kMaxFinishedRetentionSeconds = 7 * 86400;

// What a job's name gains in a worker cluster: "-" and 8 hex of its uid.
inline constexpr std::size_t kRemoteNameSuffixLength = 9;
// Largest name a job may have: its worker name is a DNS-1123 label (63).
inline constexpr std::size_t kMaxJobNameLength = 63 - kRemoteNameSuffixLength;

// Parses and validates a submitted document. path_namespace, when set, is the
// namespace from the URL: a document naming another namespace is refused (422
// on metadata.namespace); a document without one takes it.
std::variant<JobSpec, DocumentError> ParseJobDocument(std::string_view body, DocumentFormat format,
                                                      std::optional<std::string_view> path_namespace);

// Same, from an already parsed JSON value (tests use it).
std::variant<JobSpec, DocumentError> ParseJobJson(const nlohmann::json& doc,
                                                  std::optional<std::string_view> path_namespace);

// Converts YAML text to JSON, typing plain scalars (int, float, bool, null)
// as kubectl reads them: integers by YAML 1.1 (a leading 0 is octal; see
// yaml_json.cc); quoted scalars stay strings. Returns a DocumentError (code
// 400) with the line and column of a syntax error or an ambiguous number.
std::variant<nlohmann::json, DocumentError> YamlToJson(std::string_view yaml);

// Same for a stream of documents separated by "---" (a file of several
// jobs, as kubectl takes): each converted as above, in order; empty ones
// skipped. A DocumentError for the first error (its line is the stream's),
// for none, or for more than max_documents.
std::variant<std::vector<nlohmann::json>, DocumentError> YamlStreamToJson(std::string_view yaml,
                                                                         std::size_t max_documents);

// The normalized spec as JSON text: defaults filled in, pod sets included,
// keys in a fixed order. Two documents that mean the same job give the same
// text, but for how a pod template spells a quantity (SameJobSpec); this is
// what the store keeps and compares for idempotent submission.
std::string SpecToJsonText(const JobSpec& spec);
// The same as a tree: SpecToJson(spec).dump() == SpecToJsonText(spec) (the
// tests hold the text to it).
nlohmann::json SpecToJson(const JobSpec& spec);
// Pod sets as SpecToJson writes them (its "podSets").
nlohmann::json PodSetsToJson(const std::vector<PodSet>& pod_sets);
// Whether a spec text (SpecToJsonText) is the stored one again: the same
// text, or the same but for how the pod templates spell a quantity of their
// requests, limits or overhead ("1" and "1000m", "1Gi" and "1073741824"),
// which Kubernetes takes as one. A re-submission is compared by this, not by
// the text alone, so that what the store already holds keeps its identity.
bool SameJobSpec(std::string_view stored_spec_json, std::string_view spec_json);

// Inverse of SpecToJson for records read back from the store.
std::variant<JobSpec, DocumentError> SpecFromJson(const nlohmann::json& spec_json,
                                                  const std::string& name, const std::string& ns,
                                                  const std::map<std::string, std::string>& labels);

std::string_view DispatchModeName(DispatchMode mode);
std::string_view OnClusterLossName(OnClusterLoss policy);

}  // namespace gantry
