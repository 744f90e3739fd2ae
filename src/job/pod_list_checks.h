// Submission's check of a pod template's keyed lists; see
// gantry/job/pod_lists.h. Internal to gantry_job.
#pragma once

#include <string_view>

#include "json_fields.h"

namespace gantry::job_internal {

// Reports, for the pod spec at spec_path, what DropRepeatedListKeys would
// change the meaning of: an env value referring to $(NAME) of a name its
// container defines twice (at env[i].value), and an entry of ports,
// hostAliases or imagePullSecrets that repeats an earlier one's key but not
// the entry (at the entry).
void CheckRepeatedListKeys(const json& pod_spec, std::string_view spec_path, FieldErrors& errors);

}  // namespace gantry::job_internal
