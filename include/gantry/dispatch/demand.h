// From a spec to the record that stores it and back, and from a spec to
// what placement needs: the gang's pod sets and the job's hard
// constraints. Pure.
#pragma once

#include "gantry/common/status.h"
#include "gantry/job/job_document.h"
#include "gantry/placement/job_demand.h"
#include "gantry/store/job_store.h"

namespace gantry {

// The record a new job is stored as (phase Queued, epoch 0), stamped now_ms.
// SpecOfRecord gives the same spec back.
JobRecord RecordOfSpec(const JobSpec& spec, std::string uid, int64_t now_ms);

// The stored record's spec (spec_json, name, namespace, labels) read back.
// kCorruption with the document error when it no longer parses.
Result<JobSpec> SpecOfRecord(const JobRecord& job);

placement::JobDemand DemandFromSpec(const JobSpec& spec);

}  // namespace gantry
