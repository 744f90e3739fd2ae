// Submission's check of Kueue's labels and annotations on the template; see
// gantry/job/kueue_labels.h. Internal to gantry_job.
#pragma once

#include <string_view>

#include "json_fields.h"

namespace gantry::job_internal {

// Checks the template object at path (its header checked): a
// kMaxExecTimeLabel must be a whole number of seconds in 1..2^31-1, and a
// batch/v1 Job must not ask for partial admission (kMinParallelismAnnotation).
void CheckKueueLabels(const json& object, std::string_view path, FieldErrors& errors);

}  // namespace gantry::job_internal
