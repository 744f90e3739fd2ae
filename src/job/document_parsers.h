// The two document forms, each read into a JobSpec with every problem added
// to errors. The caller has checked that doc is an object with a supported
// apiVersion and kind. Internal to gantry_job.
//
// template_object is left empty: when there are no errors the caller sets it
// to NormalizeTemplate of the template (spec.template of a gantry.dev/v1 Job,
// the whole manifest), moving it out of a document it owns instead of copying.
// Pod sets are derived from the template as given: normalization removes
// nothing they are read from (apiVersion, kind, spec).
#pragma once

#include <optional>
#include <string_view>

#include "json_fields.h"

namespace gantry::job_internal {

// apiVersion gantry.dev/v1, kind Job: {apiVersion, kind, metadata, spec};
// unknown fields are refused at every level gantry defines.
JobSpec ReadGantryDocument(const json& doc, std::optional<std::string_view> path_namespace,
                           FieldErrors& errors);

// A plain batch/v1 Job or jobset.x-k8s.io/v1alpha2 JobSet manifest: the whole
// object becomes the template; the queue comes from its
// kueue.x-k8s.io/queue-name label, the rest from gantry.dev/* annotations
// (listed in manifest.cc).
JobSpec ReadManifest(const json& doc, std::optional<std::string_view> path_namespace,
                     FieldErrors& errors);

}  // namespace gantry::job_internal
