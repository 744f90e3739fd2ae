// The job template (the Kubernetes object gantry runs in the chosen cluster)
// and the pod sets derived from it. Internal to gantry_job.
//
// gantry knows two kinds (its adapters): batch/v1 Job and jobset.x-k8s.io/*
// JobSet. Their pod sets are derived from the template, as Kueue does:
//   Job:    one pod set "main", count = parallelism (default 1), or
//           completions when that is smaller.
//   JobSet: one pod set per spec.replicatedJobs[i], named after it,
//           count = replicas (default 1) * that job's count as above.
// Any other kind needs explicit spec.podSets ({name, count, template}).
#pragma once

#include <string_view>
#include <vector>

#include "json_fields.h"

namespace gantry::job_internal {

// Kueue's limit on pod sets per Workload.
inline constexpr std::size_t kMaxPodSets = 18;
// Bounds on parallelism, replicas and explicit pod set counts.
inline constexpr int64_t kMaxPodCount = 10000;

// The template as stored: object minus metadata.namespace, status, the
// server-set metadata (uid, resourceVersion, creationTimestamp, generation,
// managedFields, selfLink, deletion*, ownerReferences) and gantry's own
// gantry.dev/* annotations; metadata (or its labels/annotations) is dropped
// when that leaves it empty, so equal templates compare equal.
// Pass a copy, or move a template the caller no longer needs.
json NormalizeTemplate(json object);

// Applies QuantityNumbersToStrings (gantry/job/quantity.h) to every pod
// template of a spec read without errors: its pod sets' and, for a Job or a
// JobSet, those in template_object, so that what is stored and written to
// workers holds the same strings.
void QuantityNumbersToStrings(JobSpec& spec);

// True for a jobset.x-k8s.io/* JobSet template.
bool IsJobSetTemplate(const json& object);

// Reports a template that is not an object with string apiVersion and kind.
// Returns false then.
bool CheckTemplateHeader(const json& object, std::string_view path, FieldErrors& errors);

// The pod sets of the template at template_path. explicit_pod_sets is the
// document's spec.podSets (nullptr when absent), reported at pod_sets_path.
std::vector<PodSet> DerivePodSets(const json& object, std::string_view template_path,
                                  const json* explicit_pod_sets, std::string_view pod_sets_path,
                                  FieldErrors& errors);

}  // namespace gantry::job_internal
