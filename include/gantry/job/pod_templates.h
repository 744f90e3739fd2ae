// The kinds whose pod templates gantry knows where to find, and a walk over
// those templates: shared by submission (gantry_job) and by what the
// engine writes to workers (remote_objects), so that both read a template
// the same way.
//
// Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gantry {

enum class TemplateKind { kBatchJob, kJobSet, kOther };

// batch/v1 Job, jobset.x-k8s.io/* JobSet, or anything else.
TemplateKind ClassifyTemplate(std::string_view api_version, std::string_view kind);
TemplateKind ClassifyTemplate(const nlohmann::json& object);

// Calls fn on every batch/v1 JobSpec of a Job (its spec; replicated_job -1)
// or a JobSet (spec.replicatedJobs[replicated_job].template.spec); on none
// of any other kind. Parts of the wrong JSON type are skipped.
void ForEachJobSpec(const nlohmann::json& object,
                    const std::function<void(const nlohmann::json& job_spec, int replicated_job)>& fn);

// Calls fn on every pod template (PodTemplateSpec) of a Job (spec.template)
// or a JobSet (spec.replicatedJobs[].template.spec.template) object; on
// none of any other kind, whose pod templates are its CRD's business.
// Parts of the wrong JSON type are skipped.
void ForEachPodTemplate(nlohmann::json& object, const std::function<void(nlohmann::json&)>& fn);

}  // namespace gantry
