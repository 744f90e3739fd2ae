#include "pod_sets.h"

#include <fmt/format.h>

#include "gantry/common/names.h"
#include "gantry/job/job_document.h"
#include "gantry/job/pod_templates.h"
#include "gantry/job/quantity.h"
#include "pod_list_checks.h"
#include "pod_template.h"

namespace gantry::job_internal {
namespace {

// obj[key] when it is a string, else "" (json::value() would throw).
std::string StringOr(const json& obj, std::string_view key) {
  const json* v = Member(obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

// The pod count of one batch/v1 JobSpec at path (parallelism, capped by completions).
int64_t JobPodCount(const json& job_spec, std::string_view path, FieldErrors& errors) {
  int64_t parallelism = ReadInt(job_spec, "parallelism", path, 1, kMaxPodCount, errors).value_or(1);
  std::optional<int64_t> completions =
      ReadInt(job_spec, "completions", path, 1, std::numeric_limits<int32_t>::max(), errors);
  return completions ? std::min(parallelism, *completions) : parallelism;
}

// The restartPolicy of a Job's pods at pod_template (path): Kubernetes
// refuses a Job whose pods restart Always, and defaults an unset one to
// Always, unless the JobSet webhook defaults it first (to OnFailure). With
// a podFailurePolicy in job_spec only Never is taken.
void CheckJobRestartPolicy(const json& job_spec, const json& pod_template, std::string_view path,
                           bool unset_defaults_ok, FieldErrors& errors) {
  const json* spec = Member(pod_template, "spec");
  if (spec == nullptr || !spec->is_object()) return;  // CheckPodTemplate says so
  const std::string field = Child(Child(path, "spec"), "restartPolicy");
  const json* policy = Member(*spec, "restartPolicy");
  if (policy == nullptr) {
    if (!unset_defaults_ok) {
      errors.Add(field, "Required value: OnFailure or Never (a Job's pods may not restart Always, the default)");
      return;
    }
  } else if (!policy->is_string() || (*policy != "OnFailure" && *policy != "Never")) {
    errors.Add(field, fmt::format("Unsupported value: {}: supported values: \"OnFailure\", \"Never\"", policy->dump()));
    return;
  }
  const json* failure_policy = Member(job_spec, "podFailurePolicy");
  if (failure_policy != nullptr && !failure_policy->is_null() && (policy == nullptr || *policy != "Never")) {
    errors.Add(field, fmt::format("Invalid value: {}: only \"Never\" is supported when podFailurePolicy is "
                                  "specified",
                                  policy == nullptr ? std::string("\"OnFailure\" (the JobSet default)")
                                                    : policy->dump()));
  }
}

// A batch/v1 JobSpec's pod set at path (the JobSpec's own path); in_jobset:
// a JobSet's replicated job.
PodSet JobPodSet(std::string name, const json& job_spec, std::string_view path, int64_t replicas, bool in_jobset,
                 FieldErrors& errors) {
  PodSet set;
  set.name = std::move(name);
  set.count = static_cast<int32_t>(replicas * JobPodCount(job_spec, path, errors));
  const json* pod_template = RequireObject(job_spec, "template", path, errors);
  if (pod_template != nullptr) {
    set.requests_milli = CheckPodTemplate(*pod_template, Child(path, "template"), true, errors);
    CheckJobRestartPolicy(job_spec, *pod_template, Child(path, "template"), in_jobset, errors);
    set.pod_template = *pod_template;
  }
  return set;
}

// Reads a list of 1..kMaxPodSets entries at obj[key]; nullptr when wrong.
const json* ReadPodSetList(const json& obj, std::string_view key, std::string_view path,
                           FieldErrors& errors) {
  const json* list = ReadArray(obj, key, path, errors);
  if (list == nullptr && Member(obj, key) == nullptr) {
    errors.Add(Child(path, key), "Required value");
  } else if (list != nullptr && (list->empty() || list->size() > kMaxPodSets)) {
    errors.Add(Child(path, key), fmt::format("must have between 1 and {} entries", kMaxPodSets));
    return nullptr;
  }
  return list;
}

// The name of list entry at path: required DNS-1123 label, unique in names.
std::string ReadPodSetName(const json& entry, std::string_view path, FieldErrors& errors) {
  std::optional<std::string> name = ReadString(entry, "name", path, errors);
  std::string field = Child(path, "name");
  if (!name) {
    if (Member(entry, "name") == nullptr) errors.Add(field, "Required value");
    return "";
  }
  if (std::string e = CheckDns1123Label(*name); !e.empty()) {
    errors.Add(field, fmt::format("Invalid value: \"{}\": {}", *name, e));
    return "";
  }
  return *name;
}

std::vector<PodSet> JobSetPodSets(const json& spec, std::string_view spath, FieldErrors& errors) {
  std::vector<PodSet> out;
  const json* jobs = ReadPodSetList(spec, "replicatedJobs", spath, errors);
  if (jobs == nullptr) return out;
  std::string field = Child(spath, "replicatedJobs");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    const json& rj = (*jobs)[i];
    std::string rpath = Index(field, i);
    if (!rj.is_object()) {
      errors.Add(rpath, fmt::format("must be an object, got {}", TypeName(rj)));
      names.emplace_back();
      continue;
    }
    names.push_back(ReadPodSetName(rj, rpath, errors));
    int64_t replicas = ReadInt(rj, "replicas", rpath, 1, kMaxPodCount, errors).value_or(1);
    const json* job_template = RequireObject(rj, "template", rpath, errors);
    if (job_template == nullptr) continue;
    std::string tpath = Child(rpath, "template");
    CheckMetadataMaps(*job_template, tpath, errors);
    const json* job_spec = RequireObject(*job_template, "spec", tpath, errors);
    if (job_spec == nullptr) continue;
    out.push_back(JobPodSet(names.back(), *job_spec, Child(tpath, "spec"), replicas, true, errors));
  }
  CheckDistinct(names, field, ".name", errors);
  return out;
}

std::vector<PodSet> ExplicitPodSets(const json& list, std::string_view path, FieldErrors& errors) {
  std::vector<PodSet> out;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    std::string ppath = Index(path, i);
    if (!entry.is_object()) {
      errors.Add(ppath, fmt::format("must be an object, got {}", TypeName(entry)));
      names.emplace_back();
      continue;
    }
    CheckKnownFields(entry, ppath, {"name", "count", "template"}, errors);
    PodSet set;
    set.name = ReadPodSetName(entry, ppath, errors);
    names.push_back(set.name);
    set.count =
        static_cast<int32_t>(ReadInt(entry, "count", ppath, 1, kMaxPodCount, errors).value_or(1));
    if (const json* pod_template = RequireObject(entry, "template", ppath, errors)) {
      set.requests_milli = CheckPodTemplate(*pod_template, Child(ppath, "template"), false, errors);
      set.pod_template = *pod_template;
    }
    out.push_back(std::move(set));
  }
  CheckDistinct(names, path, ".name", errors);
  return out;
}

void EraseIfEmpty(json& obj, std::string_view key) {
  if (auto it = obj.find(key); it != obj.end() && (it->is_null() || it->empty())) obj.erase(it);
}

}  // namespace

bool IsJobSetTemplate(const json& object) { return ClassifyTemplate(object) == TemplateKind::kJobSet; }

void QuantityNumbersToStrings(JobSpec& spec) {
  for (PodSet& set : spec.pod_sets) gantry::QuantityNumbersToStrings(set.pod_template);
  ForEachPodTemplate(spec.template_object, [](json& pod_template) { gantry::QuantityNumbersToStrings(pod_template); });
}

json NormalizeTemplate(json object) {
  object.erase("status");
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return object;
  for (const char* key :
       {"namespace", "uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
        "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences"}) {
    meta->erase(key);
  }
  if (auto ann = meta->find("annotations"); ann != meta->end() && ann->is_object()) {
    for (auto it = ann->begin(); it != ann->end();) {
      it = it.key().starts_with("gantry.dev/") ? ann->erase(it) : std::next(it);
    }
  }
  EraseIfEmpty(*meta, "annotations");
  EraseIfEmpty(*meta, "labels");
  EraseIfEmpty(object, "metadata");
  return object;
}

bool CheckTemplateHeader(const json& object, std::string_view path, FieldErrors& errors) {
  if (!object.is_object()) {
    errors.Add(std::string(path), fmt::format("must be an object, got {}", TypeName(object)));
    return false;
  }
  bool ok = true;
  for (const char* key : {"apiVersion", "kind"}) {
    std::optional<std::string> v = ReadString(object, key, path, errors);
    if (v && v->empty()) errors.Add(Child(path, key), "must not be empty");
    if (!v && Member(object, key) == nullptr) errors.Add(Child(path, key), "Required value");
    ok = ok && v && !v->empty();
  }
  return ok;
}

std::vector<PodSet> DerivePodSets(const json& object, std::string_view template_path,
                                  const json* explicit_pod_sets, std::string_view pod_sets_path,
                                  FieldErrors& errors) {
  TemplateKind kind = ClassifyTemplate(object);
  std::string kind_name = StringOr(object, "kind");
  std::string spath = Child(template_path, "spec");
  // Sent as given in the object gantry creates. (A manifest's own metadata
  // is the document's, read and checked as such.)
  if (!template_path.empty()) CheckMetadataMaps(object, template_path, errors);
  if (kind != TemplateKind::kOther) {
    const json* spec = RequireObject(object, "spec", template_path, errors);
    if (spec == nullptr) return {};
    std::vector<PodSet> sets;
    if (kind == TemplateKind::kJobSet) {
      sets = JobSetPodSets(*spec, spath, errors);
    } else {
      sets.push_back(JobPodSet("main", *spec, spath, 1, false, errors));
    }
    // Derived, never given: only the very pod sets gantry derived (a job's
    // document as gantry status -o yaml shows it, submitted again) pass.
    if (explicit_pod_sets != nullptr && *explicit_pod_sets != PodSetsToJson(sets)) {
      errors.Add(std::string(pod_sets_path),
                 fmt::format("must not be set for kind {}; derived from the template (these differ from what it "
                             "gives: leave podSets out)",
                             kind_name));
      return {};
    }
    return sets;
  }
  // The generic adapter sets spec.suspend: a spec of another type would be
  // replaced by it, the user's fields lost.
  if (const json* spec = Member(object, "spec"); spec != nullptr && !spec->is_object()) {
    errors.Add(spath, fmt::format("must be an object (gantry sets its suspend), got {}", TypeName(*spec)));
  }
  if (explicit_pod_sets == nullptr) {
    errors.Add(
        std::string(pod_sets_path),
        fmt::format("Required value: required for kind {} ({}): gantry has no adapter for it",
                    kind_name, StringOr(object, "apiVersion")));
    return {};
  }
  if (!explicit_pod_sets->is_array()) {
    errors.Add(std::string(pod_sets_path),
               fmt::format("must be a list, got {}", TypeName(*explicit_pod_sets)));
    return {};
  }
  if (explicit_pod_sets->empty() || explicit_pod_sets->size() > kMaxPodSets) {
    errors.Add(std::string(pod_sets_path),
               fmt::format("must have between 1 and {} entries", kMaxPodSets));
    return {};
  }
  return ExplicitPodSets(*explicit_pod_sets, pod_sets_path, errors);
}

}  // namespace gantry::job_internal
