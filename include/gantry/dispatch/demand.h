// From a job's spec to what placement needs: the gang's pod sets and the
// job's hard constraints. Pure.
#pragma once

#include "gantry/job/job_document.h"
#include "gantry/placement/job_demand.h"

namespace gantry {

placement::JobDemand DemandFromSpec(const JobSpec& spec);

}  // namespace gantry
