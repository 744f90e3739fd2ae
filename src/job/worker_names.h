// Names a worker cluster derives from the job's own name, checked at
// submission. Internal to gantry_job.
//
// In a worker the job's object is named <metadata.name>-<8 hex> (63 at most).
// A JobSet's controller names its child Jobs <jobset>-<replicatedJob>-<index>
// and, for an Indexed Job with completions, their pods
// <jobset>-<replicatedJob>-<jobIndex>-<podIndex>-<5 random>; the JobSet
// webhook refuses a JobSet unless the longest of these are DNS-1035 labels
// (a letter first, 63 at most). Without this check such a job would pass
// submission, win a lease, and only then be refused by the worker.
#pragma once

#include <string>
#include <string_view>

#include "json_fields.h"

namespace gantry::job_internal {

// For a JobSet template (object at template_path), reports a job name that
// does not start with a letter (at name_path) and each replicatedJob whose
// derived Job or pod names would exceed 63 characters (at its .name). Other
// kinds, and a name already refused by CheckJobName, are left alone.
void CheckWorkerNames(const json& object, std::string_view template_path,
                      const std::string& job_name, std::string_view name_path,
                      FieldErrors& errors);

}  // namespace gantry::job_internal
