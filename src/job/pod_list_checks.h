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

// Reports, for the pod template at path (a Job's or a JobSet's), what the
// worker's API server would refuse of the fields gantry does not otherwise
// read: the template's label and annotation keys and values (annotations
// at most 256 KiB), container names (DNS-1123 labels), an image with
// surrounding whitespace, imagePullPolicy, env names ('=' or not printable)
// and an env with both value and valueFrom, ports (containerPort required
// and in 1-65535, hostPort, protocol, names IANA_SVC_NAME and unique in
// their container), volume names (DNS-1123 labels, unique), volumeMounts
// (a mountPath, unique in the container, and a volume of the pod),
// nodeSelector, serviceAccountName (pod_field_checks.cc).
void CheckPodFields(const json& pod_template, std::string_view path, FieldErrors& errors);
// An object's metadata.labels (label keys and values) and annotations
// (string values, keys, total size), as the API server types and checks
// them: a pod template's, a job template's, the template object's own.
void CheckMetadataMaps(const json& object, std::string_view path, FieldErrors& errors);

}  // namespace gantry::job_internal
