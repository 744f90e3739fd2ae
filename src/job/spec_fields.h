// Readers for the parts of a job document that are the same in a gantry.dev/v1
// Job, a plain manifest and a stored spec: name, namespace, labels, queue and
// the spec fields (priority, placement, dispatch, onClusterLoss). Internal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "json_fields.h"

namespace gantry::job_internal {

// Limits, with their reason.
inline constexpr int64_t kMinStepSize = 1, kMaxStepSize = 100;
inline constexpr int64_t kMinRoundSeconds = 1, kMaxRoundSeconds = 86400;        // one day
inline constexpr int64_t kMinTimeoutSeconds = 1, kMaxTimeoutSeconds = 2592000;  // 30 days
inline constexpr int64_t kMinGpuMemoryGiB = 1, kMaxGpuMemoryGiB = 4096;

std::optional<DispatchMode> DispatchModeFromName(std::string_view name);
std::optional<OnClusterLoss> OnClusterLossFromName(std::string_view name);

// "Unsupported value: \"x\": supported values: \"a\", \"b\"".
std::string UnsupportedValue(std::string_view value,
                             std::initializer_list<std::string_view> supported);

// metadata.name: required, DNS-1123 label of at most kMaxJobNameLength.
void CheckJobName(const std::optional<std::string>& name, std::string_view path,
                  FieldErrors& errors);

// The job's namespace: the document's (validated, and equal to the URL's when
// path_namespace is set), else the URL's, else "default".
std::string ResolveNamespace(const std::optional<std::string>& doc_namespace,
                             std::optional<std::string_view> path_namespace, std::string_view path,
                             FieldErrors& errors);

// A label map (obj[key]) with valid keys and values.
std::map<std::string, std::string> ReadLabels(const json& obj, std::string_view key,
                                              std::string_view path, FieldErrors& errors);

// The queue: required, a DNS-1123 subdomain like a LocalQueue name ("team.a",
// the Workload CRD's queueName pattern), of at most kMaxQueueNameLength.
void CheckQueue(const std::optional<std::string>& queue, std::string_view path,
                FieldErrors& errors);

// Reports every member of a spec object (a gantry.dev/v1 Job's, or a stored
// spec) that is not a spec field as "unknown field".
void CheckSpecFieldNames(const json& spec_obj, std::string_view path, FieldErrors& errors);

// queue, priority, placement, dispatch, onClusterLoss and
// finishedRetentionSeconds of a spec object at path (template and podSets
// are the caller's).
// At submission only (a stored spec is read back as it was accepted): the
// placement's names hold no control character (kNoControlText), as they
// are told in logs and events. Errors at path's fields.
void CheckPlacementText(const PlacementConstraints& placement, std::string_view path, FieldErrors& errors);

void ReadSpecFields(const json& spec_obj, std::string_view path, JobSpec& spec,
                    FieldErrors& errors);

}  // namespace gantry::job_internal
