// Remote objects: what gantry writes to a worker cluster for one job, and
// where. Pure functions (no I/O): the engine decides when, these decide what.
//
// Names are deterministic: <job-name>-<first 8 hex of the job uid>, the same
// in every cluster and every epoch, so a repeated create answers 409
// AlreadyExists instead of making a second copy. Every object carries the
// origin label (the garbage collector and the watches select on it), the
// job-uid label and the epoch annotation (fencing).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"
#include "gantry/inventory/cluster_config.h"
#include "gantry/job/job_document.h"

namespace gantry::dispatch {

inline constexpr const char* kOriginLabel = "kueue.x-k8s.io/multikueue-origin";
inline constexpr const char* kJobUidLabel = "gantry.dev/job-uid";
inline constexpr const char* kEpochAnnotation = "gantry.dev/epoch";
inline constexpr const char* kAtMostOnceAnnotation = "gantry.dev/at-most-once";
inline constexpr const char* kPrebuiltWorkloadAnnotation = "kueue.x-k8s.io/prebuilt-workload-name";
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kEpochEnv = "GANTRY_EPOCH";
// The preemption gate of gantry's Workload copies (Kueue v1beta2
// spec.preemptionGates): closed, Kueue admits the copy only where it fits
// without preempting; the engine opens it in one cluster at a time.
inline constexpr const char* kPreemptionGate = "gantry.dev/preemption";
// The kinds of remote object a job has, as intents, actions and observations
// name them: its Workload copies, and its real job (a Job or a JobSet).
inline constexpr const char* kWorkload = "Workload";
inline constexpr const char* kJob = "Job";

// <job-name>-<8 hex of the uid>; at most 63 characters. The 8 hex are the
// last 8 of a version-7 uid (its random end), else the first 8 without dashes.
std::string RemoteName(const std::string& job_name, const std::string& job_uid);

// "v1beta2" | "v1beta1".
std::string KueueVersionString(inventory::KueueApiVersion version);

// /apis/kueue.x-k8s.io/<v>/namespaces/<ns>/workloads[/<name>]; name "" = the collection.
std::string WorkloadPath(inventory::KueueApiVersion version, const std::string& ns,
                         const std::string& name = "");
// All namespaces, for the watches: /apis/kueue.x-k8s.io/<v>/workloads
std::string AllWorkloadsPath(inventory::KueueApiVersion version);

// Whether a job template is of a kind with its own adapter (batch/v1 Job,
// jobset.x-k8s.io JobSet); any other kind runs through the generic adapter.
bool HasAdapter(const nlohmann::json& template_object);
bool HasAdapter(const std::string& api_version, const std::string& kind);

// A Job's or JobSet's own spec.ttlSecondsAfterFinished (a whole number of
// seconds, 0 or more), else nullopt. gantry never sends it to a worker:
// there the job, and with it the Workload Kueue made it own, would be
// deleted as soon as that long after it finished, before gantry may have seen
// it finish (a restart, a partition, a busy watch), and a job whose objects
// vanished is taken to have lost its Workload and is dispatched again. The
// engine keeps the finished job's objects that long instead, as its
// finishedRetentionSeconds would (the job's own retention, where set, wins).
std::optional<int64_t> TemplateTtlSeconds(const nlohmann::json& template_object);

// The REST collection path of a kind in ns, or in all namespaces when ns is
// "": /apis/<group>/<version>[/namespaces/<ns>]/<resource> (core "v1" ->
// /api/v1), the resource guessed from the kind as Kubernetes does
// (lowercase, plural). InvalidArgument when they cannot name a resource.
Result<std::string> KindPath(const std::string& api_version, const std::string& kind, const std::string& ns);
// The REST path of the template's kind in ns: batch/v1 Job -> /apis/batch/v1/namespaces/ns/jobs[/name],
// jobset.x-k8s.io/<v> JobSet -> .../jobsets, any other group/version kind K -> lowercase(K)+"s"
// under /apis/<group>/<version> (core "v1" -> /api/v1). InvalidArgument when apiVersion/kind are missing.
Result<std::string> JobPath(const nlohmann::json& template_object, const std::string& ns,
                            const std::string& name = "");

// Whether a 404's body says that the object `name` is not there: the API
// server's NotFound for an object names it in its Status details. A path it
// does not serve (a kind's version no longer served, say) answers a 404
// that names nothing, which says nothing of the object under another
// version (Verb::kDeleteUnseen: only the former confirms a deletion).
bool NotFoundNames(const nlohmann::json& body, const std::string& name);

// The epoch of a remote object read back (its kEpochAnnotation), if it is
// job_uid's made by gantry under `origin` (its kOriginLabel and
// kJobUidLabel) at a positive epoch no newer than max_epoch, and has a uid
// to delete it by; nullopt when it is not the job's to delete by name
// (someone else's, or a newer epoch's: Verb::kDeleteUnseen).
std::optional<int64_t> DeletableEpoch(const nlohmann::json& object, const std::string& job_uid,
                                      const std::string& origin, int64_t max_epoch);

struct WorkloadParams {
  const JobSpec* spec = nullptr;  // the stored job spec (pod sets, priority, queue, namespace)
  std::string job_uid;
  int64_t epoch = 1;
  std::string origin = "gantry";  // value of the origin label
  std::string local_queue;        // the cluster's LocalQueue for the job's queue (LocalQueueFor)
  inventory::KueueApiVersion version = inventory::KueueApiVersion::kV1beta2;
  // spec.preemptionGates [{name: kPreemptionGate}]; only in v1beta2 (v1beta1
  // has no gates, so such a copy may preempt at once).
  bool preemption_gate = false;
  // The value of the job's WorkloadPriorityClass (WorkloadPriorityClass())
  // in this cluster: set, the copy names the class and carries this value
  // as its priority instead of the job's.
  std::optional<int32_t> priority_class_value;
};

// The Kueue Workload copy for one candidate cluster: metadata {name, namespace,
// labels {origin, job-uid}, annotations {epoch}}, spec {queueName, priority,
// podSets [{name, count, template}], preemptionGates, and the job's
// WorkloadPriorityClass when it names one: v1beta2 priorityClassRef, v1beta1
// priorityClassName and priorityClassSource}. Valid against the
// Workload CRD schema of the chosen version (reference/kueue-crds/).
nlohmann::json BuildWorkload(const WorkloadParams& params);

// The merge patch of a Workload's status subresource that opens
// kPreemptionGate: {"metadata": {"resourceVersion"}, "status":
// {"preemptionGates": [..., {name, position: Open, lastTransitionTime}]}}.
// A merge patch replaces the whole list, so it carries the entries of other
// gates the copy showed (other_states: an array, or null for none), and the
// resourceVersion they were read at, which the API server takes as a
// precondition: a copy changed or re-created since answers 409 Conflict, and
// the next pass patches what it shows then. (A uid would not do: the status
// subresource keeps the stored metadata and ignores it.) Ladder::Gates sends
// none without a resourceVersion.
nlohmann::json OpenGatePatch(int64_t now_ms, const std::string& resource_version,
                             const nlohmann::json& other_states);

struct RemoteJobParams {
  const JobSpec* spec = nullptr;
  std::string job_uid;
  int64_t epoch = 1;
  std::string origin = "gantry";
  std::string local_queue;
  std::string workload_name;  // = RemoteName(...): the prebuilt Workload to adopt
};

// The real job for the lease owner, from spec->template_object: name
// RemoteName, namespace spec->ns, spec.suspend true; labels: the template's,
// origin, job-uid, kueue.x-k8s.io/queue-name; annotations: the template's,
// epoch, prebuilt-workload-name, and at-most-once "true" when
// spec->on_cluster_loss is Fail or Wait; env GANTRY_EPOCH=<epoch> in every
// container and initContainer of every pod template (Job: spec.template;
// JobSet: every replicatedJobs[].template.spec.template; other kinds: the
// pod templates of spec->pod_sets are not reachable, so only labels,
// annotations and suspend are set). resourceVersion/uid/status dropped.
nlohmann::json BuildRemoteJob(const RemoteJobParams& params);

}  // namespace gantry::dispatch
