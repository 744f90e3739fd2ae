// Field names in a Job's or a JobSet's pod templates that Kubernetes does
// not know: `limts` for `limits`, `parallelizm` for `parallelism`. gantry
// does not own those schemas (the worker's API server does), and a worker
// of a newer release may know more fields, so these are warnings, not
// refusals: a misspelt `resources.limts` would otherwise run a GPU job
// without its GPUs, with nothing said (the worker drops unknown fields).
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry {

// "spec.template.spec.template.spec.containers[0].resources: unknown field \"limts\"", ...
// (and a container's GANTRY_EPOCH, which gantry replaces; a field at the
// template's top other than apiVersion, kind, metadata, spec and status)
// for a batch/v1 Job or a JobSet template; for any kind, the template's
// metadata.finalizers, and its Jobs' and pods', which gantry drops from
// what it writes (dispatch::BuildRemoteJob). Nothing else for another kind,
// whose schema is its CRD's business. template_path: where the template is
// in the document ("spec.template"; "" for a manifest submitted as is).
// At most kMaxTemplateWarnings, each cut to kMaxTemplateWarningBytes, and
// printable ASCII only: they travel in HTTP headers.
std::vector<std::string> UnknownTemplateFields(const nlohmann::json& template_object,
                                               std::string_view template_path = "spec.template");
inline constexpr std::size_t kMaxTemplateWarnings = 10;
inline constexpr std::size_t kMaxTemplateWarningBytes = 256;

// The field names known, for the test that keeps them whole against the
// Workload CRD's pod template schema.
const std::vector<std::string_view>& KnownPodSpecFields();
const std::vector<std::string_view>& KnownContainerFields();

}  // namespace gantry
