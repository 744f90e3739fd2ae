#include "gantry/job/pod_templates.h"

#include <string>

namespace gantry {
namespace {

using nlohmann::json;

std::string_view StringAt(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>())
                                            : std::string_view();
}

// (*obj)[key] when obj is an object that has it, else nullptr. Json is
// json or const json.
template <class Json>
Json* MemberOf(Json* obj, const char* key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

// The object at (*obj)[key], or nullptr.
template <class Json>
Json* ObjectIn(Json* obj, const char* key) {
  Json* at = MemberOf(obj, key);
  return at != nullptr && at->is_object() ? at : nullptr;
}

}  // namespace

TemplateKind ClassifyTemplate(std::string_view api_version, std::string_view kind) {
  if (api_version == "batch/v1" && kind == "Job") return TemplateKind::kBatchJob;
  if (api_version.starts_with("jobset.x-k8s.io/") && kind == "JobSet") return TemplateKind::kJobSet;
  return TemplateKind::kOther;
}

TemplateKind ClassifyTemplate(const json& object) {
  return ClassifyTemplate(StringAt(object, "apiVersion"), StringAt(object, "kind"));
}

namespace {

// fn(job_spec, i) on each batch/v1 JobSpec of object (ForEachJobSpec).
template <class Json, class Fn>
void WalkJobSpecs(Json& object, const Fn& fn) {
  Json* spec = ObjectIn(&object, "spec");
  switch (ClassifyTemplate(object)) {
    case TemplateKind::kBatchJob:
      if (spec != nullptr) fn(*spec, -1);
      break;
    case TemplateKind::kJobSet:
      if (Json* jobs = MemberOf(spec, "replicatedJobs"); jobs != nullptr && jobs->is_array()) {
        int i = 0;
        for (Json& rj : *jobs) {
          if (Json* job_spec = ObjectIn(ObjectIn(&rj, "template"), "spec")) fn(*job_spec, i);
          ++i;
        }
      }
      break;
    case TemplateKind::kOther:
      break;
  }
}

}  // namespace

void ForEachJobSpec(const json& object, const std::function<void(const json& job_spec, int replicated_job)>& fn) {
  WalkJobSpecs(object, fn);
}

void ForEachPodTemplate(json& object, const std::function<void(json&)>& fn) {
  WalkJobSpecs(object, [&](json& job_spec, int) {
    if (json* pod_template = ObjectIn(&job_spec, "template")) fn(*pod_template);
  });
}

}  // namespace gantry
