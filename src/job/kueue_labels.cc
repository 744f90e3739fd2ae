#include "gantry/job/kueue_labels.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "gantry/common/names.h"
#include "kueue_label_checks.h"

namespace gantry {
namespace {

// A label value Kueue reads as a positive int32 (strconv.ParseInt(v, 10, 32);
// a label value has no sign).
std::optional<int32_t> PositiveInt32(std::string_view text) {
  int32_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || text[0] == '-' || ec != std::errc() || end != text.data() + text.size() ||
      n < 1) {
    return std::nullopt;
  }
  return n;
}

// object.metadata[field][key], or nullptr.
const nlohmann::json* MetadataEntry(const nlohmann::json& object, const char* field,
                                    const char* key) {
  const nlohmann::json* meta = job_internal::Member(object, "metadata");
  const nlohmann::json* map = meta != nullptr ? job_internal::Member(*meta, field) : nullptr;
  return map != nullptr ? job_internal::Member(*map, key) : nullptr;
}

}  // namespace

std::optional<int32_t> MaxExecutionTimeSeconds(const nlohmann::json& template_object) {
  const nlohmann::json* value = MetadataEntry(template_object, "labels", kMaxExecTimeLabel);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return PositiveInt32(value->get_ref<const std::string&>());
}

std::string WorkloadPriorityClass(const nlohmann::json& template_object) {
  const nlohmann::json* value = MetadataEntry(template_object, "labels", kPriorityClassLabel);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

namespace job_internal {

void CheckKueueLabels(const json& object, std::string_view path, FieldErrors& errors) {
  const std::string meta = Child(path, "metadata");
  if (const json* value = MetadataEntry(object, "labels", kMaxExecTimeLabel)) {
    if (!value->is_string() || !PositiveInt32(value->get_ref<const std::string&>())) {
      errors.Add(
          Key(Child(meta, "labels"), kMaxExecTimeLabel),
          fmt::format("Invalid value: {}: must be a whole number of seconds from 1 to {} (the "
                      "Workload's maximumExecutionTimeSeconds)",
                      value->dump(), std::numeric_limits<int32_t>::max()));
    }
  }
  if (const json* value = MetadataEntry(object, "labels", kPriorityClassLabel)) {
    // A label value (63 at most) that names an object; empty, as Kueue
    // reads it, names none (a template that leaves it blank).
    std::string why = "must be a string";
    if (value->is_string()) {
      const std::string& name = value->get_ref<const std::string&>();
      why = CheckLabelValue(name);
      if (why.empty() && !name.empty()) why = CheckDns1123Subdomain(name);
    }
    if (!why.empty()) {
      errors.Add(Key(Child(meta, "labels"), kPriorityClassLabel),
                 fmt::format("Invalid value: {}: {} (it names a WorkloadPriorityClass)", value->dump(), why));
    }
  }
  const json* api = Member(object, "apiVersion");
  const json* kind = Member(object, "kind");
  const bool batch_job = api != nullptr && *api == "batch/v1" && kind != nullptr && *kind == "Job";
  if (batch_job && MetadataEntry(object, "annotations", kMinParallelismAnnotation) != nullptr) {
    errors.Add(
        Key(Child(meta, "annotations"), kMinParallelismAnnotation),
        "Forbidden: gantry dispatches a job's pods to one cluster as a whole, so its Workload "
        "asks for no partial admission; the worker's Kueue would find the job and its Workload "
        "out of sync and never start it");
  }
}

}  // namespace job_internal
}  // namespace gantry
