// What gantry writes to a worker cluster; see remote_objects.h for the
// naming and labelling contract.
#include "gantry/dispatch/remote_objects.h"

#include <cassert>
#include <cctype>
#include <charconv>
#include <initializer_list>

#include "gantry/common/clock.h"
#include "gantry/common/json_path.h"
#include "gantry/common/names.h"
#include "gantry/job/kueue_labels.h"
#include "gantry/job/pod_lists.h"
#include "gantry/job/pod_templates.h"
#include "gantry/job/quantity.h"

namespace gantry::dispatch {
namespace {

using nlohmann::json;

// A Job's name becomes the value of the job-name label on its pods, so it
// must fit a label value (63), not only an object name (253).
constexpr std::size_t kMaxRemoteNameLength = 63;
constexpr std::size_t kUidHexChars = 8;
static_assert(kMaxJobNameLength + 1 + kUidHexChars == kMaxRemoteNameLength,
              "submission checks the names a worker derives from this length");
constexpr const char* kKueueGroup = "kueue.x-k8s.io";

// Metadata the API server sets. A create carrying resourceVersion is refused;
// ownerReferences would name objects of the management cluster, which the
// worker's garbage collector would find missing and delete the job for.
constexpr const char* kServerSetMetadata[] = {
    "uid",           "resourceVersion",   "creationTimestamp",          "generation",
    "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences",
    "selfLink",      "generateName"};

// The only pod template metadata fields the Workload CRD schema knows
// (podSets[].template.metadata); anything else would be pruned, or refused
// under strict field validation.
constexpr const char* kWorkloadTemplateMetadata[] = {"labels", "annotations", "finalizers", "name",
                                                     "namespace"};

std::string StringAt(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

bool HasAdapter(const std::string& api_version, const std::string& kind) {
  return ClassifyTemplate(api_version, kind) != TemplateKind::kOther;
}

bool HasAdapter(const json& template_object) { return ClassifyTemplate(template_object) != TemplateKind::kOther; }

std::optional<int64_t> TemplateTtlSeconds(const json& template_object) {
  if (ClassifyTemplate(template_object) == TemplateKind::kOther) return std::nullopt;
  auto spec = template_object.find("spec");
  if (spec == template_object.end() || !spec->is_object()) return std::nullopt;
  auto ttl = spec->find("ttlSecondsAfterFinished");
  if (ttl == spec->end() || !ttl->is_number_integer() || ttl->get<int64_t>() < 0) return std::nullopt;
  return ttl->get<int64_t>();
}

namespace {

// obj[key], made an object if it is missing or anything else.
json& ObjectAt(json& obj, const char* key) {
  json& child = obj[key];
  if (!child.is_object()) child = json::object();
  return child;
}

// The object at path under obj, or nullptr; never creates anything.
json* Find(json& obj, std::initializer_list<const char*> path) {
  json* at = &obj;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at->is_object() ? at : nullptr;
}

// One entry named name in the container's env: an existing one is replaced
// (a stale epoch copied from a previous run must not win), duplicates dropped.
void SetEnv(json& container, const std::string& name, const std::string& value) {
  json& env = container["env"];
  if (!env.is_array()) env = json::array();
  json entry = json::object();
  entry["name"] = name;
  entry["value"] = value;
  bool set = false;
  for (auto it = env.begin(); it != env.end();) {
    if (StringAt(*it, "name") != name) {
      ++it;
    } else if (set) {
      it = env.erase(it);
    } else {
      *it = entry;
      set = true;
      ++it;
    }
  }
  if (!set) env.push_back(std::move(entry));
}

void SetEpochEnv(json& pod_template, const std::string& epoch) {
  json* pod_spec = Find(pod_template, {"spec"});
  if (pod_spec == nullptr) return;
  for (const char* list : {"containers", "initContainers"}) {
    auto it = pod_spec->find(list);
    if (it == pod_spec->end() || !it->is_array()) continue;
    for (json& container : *it) {
      if (container.is_object()) SetEnv(container, kEpochEnv, epoch);
    }
  }
}

// A Workload pod template, or a pod template of the real job, as gantry
// writes both, so that the worker's Kueue finds them equal: every keyed list
// with each key once (gantry/job/pod_lists.h), and, for a Job or a JobSet
// (kind), the epoch env. Kueue marks a prebuilt Workload OutOfSync (Finished)
// when its pod sets differ from its job's; older releases compare whole
// containers.
// A finalizer that nothing in the worker removes would hold gantry's delete
// of the job (a cancel's, a requeue's, a fence's; a foreground one waits for
// the job's pods and a JobSet's Jobs) for good. The worker's controllers
// add their own; one copied with the template is dropped (and warned of at
// submission, UnknownTemplateFields).
void DropFinalizers(json& object) {
  if (json* meta = Find(object, {"metadata"})) meta->erase("finalizers");
}

void PreparePodTemplate(json& pod_template, TemplateKind kind, const std::string& epoch) {
  DropFinalizers(pod_template);
  DropRepeatedListKeys(pod_template);
  if (kind != TemplateKind::kOther) SetEpochEnv(pod_template, epoch);
}

void ClearCopiedJobFields(json& job, TemplateKind kind) {
  json* spec = Find(job, {"spec"});
  if (spec == nullptr || kind == TemplateKind::kOther) return;
  spec->erase("managedBy");
  spec->erase("ttlSecondsAfterFinished");  // kept by the engine instead (TemplateTtlSeconds)
  if (kind == TemplateKind::kJobSet) {
    auto jobs = spec->find("replicatedJobs");
    if (jobs == spec->end() || !jobs->is_array()) return;
    for (json& rj : *jobs) {
      if (json* job_template = Find(rj, {"template"})) DropFinalizers(*job_template);
    }
    return;
  }
  if (kind != TemplateKind::kBatchJob) return;
  auto manual = spec->find("manualSelector");
  if (manual != spec->end() && manual->is_boolean() && manual->get<bool>()) return;
  spec->erase("selector");
  if (json* labels = Find(*spec, {"template", "metadata", "labels"})) {
    labels->erase("controller-uid");
    labels->erase("batch.kubernetes.io/controller-uid");
  }
}

json WorkloadPodTemplate(const json& pod_template) {
  json out = pod_template.is_object() ? pod_template : json::object();
  if (json* meta = Find(out, {"metadata"})) {
    json kept = json::object();
    for (const char* key : kWorkloadTemplateMetadata) {
      if (auto it = meta->find(key); it != meta->end()) kept[key] = *it;
    }
    *meta = std::move(kept);
  }
  // Submission does this since it began to; a job stored before keeps 0.5.
  QuantityNumbersToStrings(out);
  return out;
}

// LocalQueueFor() when the caller resolved it; the gantry queue name is what
// LocalQueueFor answers without a mapping.
const std::string& QueueName(const std::string& local_queue, const JobSpec& spec) {
  return local_queue.empty() ? spec.queue : local_queue;
}

// Kubernetes' own guess from a kind to its resource (UnsafeGuessKindToResource).
std::string ResourceForKind(const std::string& kind) {
  std::string lower;
  for (char c : kind) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.ends_with('s')) return lower + "es";
  if (lower.ends_with('y')) return lower.substr(0, lower.size() - 1) + "ies";
  return lower + "s";
}

bool IsAlnumKind(const std::string& kind) {
  for (char c : kind) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::optional<int64_t> DeletableEpoch(const nlohmann::json& object, const std::string& job_uid,
                                      const std::string& origin, int64_t max_epoch) {
  if (JsonStringAt(object, {"metadata", "labels", kOriginLabel}) != origin ||
      JsonStringAt(object, {"metadata", "labels", kJobUidLabel}) != job_uid ||
      JsonStringAt(object, {"metadata", "uid"}).empty()) {
    return std::nullopt;
  }
  const std::string text = JsonStringAt(object, {"metadata", "annotations", kEpochAnnotation});
  int64_t epoch = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), epoch);
  if (ec != std::errc() || end != text.data() + text.size() || epoch <= 0 || epoch > max_epoch) return std::nullopt;
  return epoch;
}

std::string RemoteName(const std::string& job_name, const std::string& job_uid) {
  // A version-7 uid (its 15th character is '7') begins with its time, which
  // two jobs made a minute apart share: its last 8 hex digits are random.
  // Any other uid, and every uid gantry made before version 7, gives its
  // first 8, as it always did, so a running job's remote names never change.
  const bool time_first = job_uid.size() == 36 && job_uid[14] == '7';
  std::string hex;
  if (time_first) {
    for (char c : std::string_view(job_uid).substr(36 - kUidHexChars)) {
      hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  } else {
    for (char c : job_uid) {
      if (hex.size() == kUidHexChars) break;
      if (c != '-') hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  // Job names are at most kMaxJobNameLength; cutting here only guards the 63.
  std::size_t keep = kMaxRemoteNameLength - 1 - hex.size();
  return job_name.substr(0, keep) + "-" + hex;
}

std::string KueueVersionString(inventory::KueueApiVersion version) {
  return std::string(inventory::KueueApiVersionName(version));
}

std::string WorkloadPath(inventory::KueueApiVersion version, const std::string& ns,
                         const std::string& name) {
  std::string path = "/apis/" + std::string(kKueueGroup) + "/" + KueueVersionString(version) +
                     "/namespaces/" + ns + "/workloads";
  return name.empty() ? path : path + "/" + name;
}

std::string AllWorkloadsPath(inventory::KueueApiVersion version) {
  return "/apis/" + std::string(kKueueGroup) + "/" + KueueVersionString(version) + "/workloads";
}

Result<std::string> KindPath(const std::string& api_version, const std::string& kind, const std::string& ns) {
  if (api_version.empty() || kind.empty()) return Status::Invalid("a non-empty apiVersion and kind are needed");
  // An adapter-less kind comes from user input (a template, the daemon's
  // configuration) and ends up in a URL.
  std::size_t slash = api_version.find('/');
  std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  if ((slash != std::string::npos && !CheckDns1123Subdomain(group).empty()) ||
      !CheckDns1123Label(version).empty() || !IsAlnumKind(kind)) {
    return Status::Invalid("apiVersion \"" + api_version + "\" and kind \"" + kind + "\" cannot name a resource");
  }
  return (group.empty() ? "/api/" + version : "/apis/" + group + "/" + version) +
         (ns.empty() ? "" : "/namespaces/" + ns) + "/" + ResourceForKind(kind);
}

Result<std::string> JobPath(const nlohmann::json& template_object, const std::string& ns,
                            const std::string& name) {
  if (ns.empty()) return Status::Invalid("a job path needs a namespace");
  auto path = KindPath(StringAt(template_object, "apiVersion"), StringAt(template_object, "kind"), ns);
  if (!path.ok()) return Status::Invalid("the template: " + path.status().message());
  return name.empty() ? *path : *path + "/" + name;
}

json BuildWorkload(const WorkloadParams& params) {
  assert(params.spec != nullptr);
  const JobSpec& spec = *params.spec;
  const std::string epoch = std::to_string(params.epoch);
  // The same pod templates as BuildRemoteJob writes (PreparePodTemplate).
  const TemplateKind kind = ClassifyTemplate(spec.template_object);

  json pod_sets = json::array();
  for (const PodSet& set : spec.pod_sets) {
    json entry = json::object();
    entry["name"] = set.name;
    entry["count"] = set.count;
    entry["template"] = WorkloadPodTemplate(set.pod_template);
    PreparePodTemplate(entry["template"], kind, epoch);
    pod_sets.push_back(std::move(entry));
  }

  json wl = json::object();
  wl["apiVersion"] = std::string(kKueueGroup) + "/" + KueueVersionString(params.version);
  wl["kind"] = "Workload";
  json& meta = wl["metadata"];
  meta["name"] = RemoteName(spec.name, params.job_uid);
  meta["namespace"] = spec.ns;
  meta["labels"][kOriginLabel] = params.origin;
  meta["labels"][kJobUidLabel] = params.job_uid;
  meta["annotations"][kEpochAnnotation] = epoch;
  json& wl_spec = wl["spec"];
  wl_spec["queueName"] = QueueName(params.local_queue, spec);
  wl_spec["priority"] = spec.priority;
  // As Kueue fills them in for a Workload it builds from a job with the
  // class's label: the class, and its value in this cluster as the priority.
  const std::string priority_class = WorkloadPriorityClass(spec.template_object);
  if (!priority_class.empty() && params.priority_class_value) {
    wl_spec["priority"] = *params.priority_class_value;
    if (params.version == inventory::KueueApiVersion::kV1beta2) {
      wl_spec["priorityClassRef"] = {
          {"group", kKueueGroup}, {"kind", "WorkloadPriorityClass"}, {"name", priority_class}};
    } else {
      wl_spec["priorityClassName"] = priority_class;
      wl_spec["priorityClassSource"] = std::string(kKueueGroup) + "/workloadpriorityclass";
    }
  }
  wl_spec["podSets"] = std::move(pod_sets);
  // Kueue compares it with the job's label (kueue_labels.h), in both versions.
  if (auto seconds = MaxExecutionTimeSeconds(spec.template_object)) {
    wl_spec["maximumExecutionTimeSeconds"] = *seconds;
  }
  if (params.preemption_gate && params.version == inventory::KueueApiVersion::kV1beta2) {
    wl_spec["preemptionGates"] = json::array({{{"name", kPreemptionGate}}});
  }
  return wl;
}

json OpenGatePatch(int64_t now_ms, const std::string& resource_version, const json& other_states) {
  json states = json::array();
  if (other_states.is_array()) {
    for (const json& g : other_states) {
      if (!g.is_object() || JsonStringAt(g, {"name"}) != kPreemptionGate) states.push_back(g);
    }
  }
  states.push_back({{"name", kPreemptionGate}, {"position", "Open"}, {"lastTransitionTime", FormatRfc3339(now_ms)}});
  return {{"metadata", {{"resourceVersion", resource_version}}},
          {"status", {{"preemptionGates", std::move(states)}}}};
}

json BuildRemoteJob(const RemoteJobParams& params) {
  assert(params.spec != nullptr);
  const JobSpec& spec = *params.spec;
  const std::string epoch = std::to_string(params.epoch);
  const std::string workload =
      params.workload_name.empty() ? RemoteName(spec.name, params.job_uid) : params.workload_name;

  json job = spec.template_object.is_object() ? spec.template_object : json::object();
  job.erase("status");
  json& meta = ObjectAt(job, "metadata");
  for (const char* key : kServerSetMetadata) meta.erase(key);
  DropFinalizers(job);
  meta["name"] = RemoteName(spec.name, params.job_uid);
  meta["namespace"] = spec.ns;

  json& labels = ObjectAt(meta, "labels");
  labels[kOriginLabel] = params.origin;
  labels[kJobUidLabel] = params.job_uid;
  labels[kQueueNameLabel] = QueueName(params.local_queue, spec);
  // Kueue reads the prebuilt Workload's name from this label; the annotation
  // only behind the WorkloadIdentifierAnnotations gate of newer releases. The
  // name is a valid label value, so both are set and every release agrees.
  labels[kPrebuiltWorkloadAnnotation] = workload;

  json& annotations = ObjectAt(meta, "annotations");
  annotations[kEpochAnnotation] = epoch;
  annotations[kPrebuiltWorkloadAnnotation] = workload;
  if (AtMostOnce(spec)) {
    annotations[kAtMostOnceAnnotation] = "true";
  } else {
    annotations.erase(kAtMostOnceAnnotation);
  }

  // Kueue unsuspends the job once its Workload is admitted; created running,
  // it would start before admission.
  ObjectAt(job, "spec")["suspend"] = true;
  const TemplateKind kind = ClassifyTemplate(job);
  ClearCopiedJobFields(job, kind);
  ForEachPodTemplate(job, [&](json& pod_template) { PreparePodTemplate(pod_template, kind, epoch); });
  return job;
}

bool NotFoundNames(const nlohmann::json& body, const std::string& name) {
  if (!body.is_object()) return false;
  auto details = body.find("details");
  if (details == body.end() || !details->is_object()) return false;
  auto n = details->find("name");
  return n != details->end() && n->is_string() && n->get_ref<const std::string&>() == name;
}

}  // namespace gantry::dispatch
