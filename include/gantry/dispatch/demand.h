// From a stored job to its spec, and from a spec to what placement needs:
// the gang's pod sets and the job's hard constraints. Pure.
#pragma once

#include "gantry/common/status.h"
#include "gantry/job/job_document.h"
#include "gantry/placement/job_demand.h"
#include "gantry/store/job_store.h"

namespace gantry {

// The stored record's spec (spec_json, name, namespace, labels) read back.
// kCorruption with the document error when it no longer parses.
Result<JobSpec> SpecOfRecord(const JobRecord& job);

placement::JobDemand DemandFromSpec(const JobSpec& spec);

}  // namespace gantry
