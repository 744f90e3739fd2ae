#include "worker_names.h"

#include <fmt/format.h>

#include "gantry/common/names.h"
#include "gantry/job/job_document.h"
#include "pod_sets.h"

namespace gantry::job_internal {
namespace {

constexpr std::size_t kMaxLabel = 63;
// The random suffix the Job controller appends to a pod's name ("-abcde").
constexpr std::size_t kPodSuffixLength = 6;

std::size_t Digits(int64_t n) { return fmt::formatted_size("{}", n); }

// obj[key] when it is an integer within [1, max int32], else fallback.
int64_t PositiveOr(const json& obj, std::string_view key, int64_t fallback) {
  const json* v = Member(obj, key);
  if (v == nullptr || !v->is_number_integer()) return fallback;
  int64_t n = v->get<int64_t>();
  return n >= 1 && n <= std::numeric_limits<int32_t>::max() ? n : fallback;
}

void CheckReplicatedJob(const json& rj, std::string_view rpath, const std::string& job_name,
                        FieldErrors& errors) {
  const json* name = Member(rj, "name");
  const json* tmpl = Member(rj, "template");
  if (name == nullptr || !name->is_string() || tmpl == nullptr || !tmpl->is_object()) return;
  const std::string& rj_name = name->get_ref<const std::string&>();
  const int64_t last_job = PositiveOr(rj, "replicas", 1) - 1;
  // <name>-<8 hex>-<replicatedJob>-<last index>
  std::size_t job_len = job_name.size() + kRemoteNameSuffixLength + 1 + rj_name.size() + 1 +
                        Digits(last_job);
  std::string field = Child(rpath, "name");
  if (job_len > kMaxLabel) {
    errors.Add(field, fmt::format("Invalid value: \"{}\": the worker names this replicatedJob's "
                                  "Jobs \"{}-<8 hex>-{}-{}\", {} characters, more than {}; "
                                  "shorten it or metadata.name",
                                  rj_name, job_name, rj_name, last_job, job_len, kMaxLabel));
    return;
  }
  const json* spec = Member(*tmpl, "spec");
  if (spec == nullptr || !spec->is_object()) return;
  const json* mode = Member(*spec, "completionMode");
  const json* completions = Member(*spec, "completions");
  if (mode == nullptr || *mode != "Indexed" || completions == nullptr) return;
  const int64_t last_pod = PositiveOr(*spec, "completions", 1) - 1;
  std::size_t pod_len = job_len + 1 + Digits(last_pod) + kPodSuffixLength;
  if (pod_len > kMaxLabel) {
    errors.Add(field, fmt::format("Invalid value: \"{}\": the worker names this replicatedJob's "
                                  "pods \"{}-<8 hex>-{}-{}-{}-<5 random>\", {} characters, more "
                                  "than {}; shorten it or metadata.name",
                                  rj_name, job_name, rj_name, last_job, last_pod, pod_len,
                                  kMaxLabel));
  }
}

}  // namespace

void CheckWorkerNames(const json& object, std::string_view template_path,
                      const std::string& job_name, std::string_view name_path,
                      FieldErrors& errors) {
  if (!IsJobSetTemplate(object)) return;
  if (!CheckDns1123Label(job_name, kMaxJobNameLength).empty()) return;
  if (job_name.front() < 'a' || job_name.front() > 'z') {
    errors.Add(std::string(name_path),
               fmt::format("Invalid value: \"{}\": a JobSet's name must start with a letter "
                           "(the JobSet webhook requires DNS-1035 names)",
                           job_name));
  }
  const json* spec = Member(object, "spec");
  const json* jobs = spec != nullptr && spec->is_object() ? Member(*spec, "replicatedJobs") : nullptr;
  if (jobs == nullptr || !jobs->is_array()) return;
  std::string field = Child(Child(template_path, "spec"), "replicatedJobs");
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    if ((*jobs)[i].is_object()) CheckReplicatedJob((*jobs)[i], Index(field, i), job_name, errors);
  }
}

}  // namespace gantry::job_internal
