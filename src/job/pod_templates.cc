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

// (*obj)[key] when obj is an object that has it, else nullptr.
json* MemberOf(json* obj, const char* key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

// The object at (*obj)[key], or nullptr.
json* ObjectIn(json* obj, const char* key) {
  json* at = MemberOf(obj, key);
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

void ForEachPodTemplate(json& object, const std::function<void(json&)>& fn) {
  json* spec = ObjectIn(&object, "spec");
  switch (ClassifyTemplate(object)) {
    case TemplateKind::kBatchJob:
      if (json* pod_template = ObjectIn(spec, "template")) fn(*pod_template);
      break;
    case TemplateKind::kJobSet:
      if (json* jobs = MemberOf(spec, "replicatedJobs"); jobs != nullptr && jobs->is_array()) {
        for (json& rj : *jobs) {
          if (json* pod_template = ObjectIn(ObjectIn(ObjectIn(&rj, "template"), "spec"), "template")) {
            fn(*pod_template);
          }
        }
      }
      break;
    case TemplateKind::kOther:
      break;
  }
}

}  // namespace gantry
