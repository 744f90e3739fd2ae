// Kueue's own labels and annotations on a job that its Workload must agree
// with. For a prebuilt Workload (gantry's copy) the worker's Kueue runs its
// equivalence check when the job arrives, and finishes a Workload that
// disagrees as OutOfSync: the job never starts, after its copy was admitted
// (maybe preempting other work) and the lease was taken. Submission refuses
// what cannot agree (kueue_labels.cc); BuildWorkload copies what must.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gantry {

// Label: the job's limit on its admitted time, which Kueue compares with
// the Workload's spec.maximumExecutionTimeSeconds (int32, minimum 1).
inline constexpr const char* kMaxExecTimeLabel = "kueue.x-k8s.io/max-exec-time-seconds";
// Annotation on a batch/v1 Job: partial admission, which Kueue compares
// with the pod set's minCount. gantry dispatches whole gangs.
inline constexpr const char* kMinParallelismAnnotation = "kueue.x-k8s.io/job-min-parallelism";
// Label: the WorkloadPriorityClass whose value is the Workload's priority.
// Kueue reads it when it builds a Workload from a job, never for a prebuilt
// one, so gantry writes the class and its value (in each worker, its own)
// into every Workload copy itself.
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";

// The template's kMaxExecTimeLabel as the Workload's
// spec.maximumExecutionTimeSeconds; nullopt when it has none, or one that
// is not a whole number in 1..2^31-1 (which submission refuses).
std::optional<int32_t> MaxExecutionTimeSeconds(const nlohmann::json& template_object);

// The template's kPriorityClassLabel; "" when it has none (submission
// refuses one that cannot name an object).
std::string WorkloadPriorityClass(const nlohmann::json& template_object);

}  // namespace gantry
