#include "document_parsers.h"
#include "kueue_label_checks.h"
#include "pod_sets.h"
#include "spec_fields.h"
#include "worker_names.h"

namespace gantry::job_internal {
namespace {

void ReadMetadata(const json& meta, std::optional<std::string_view> path_namespace, JobSpec& spec,
                  FieldErrors& errors) {
  // uid and creationTimestamp are gantry's (a job's document as gantry
  // shows it, submitted again): read only, as the API server reads them on
  // a create, and not kept.
  CheckKnownFields(meta, "metadata", {"name", "namespace", "labels", "annotations", "uid", "creationTimestamp"},
                   errors);
  (void)ReadString(meta, "uid", "metadata", errors);
  (void)ReadString(meta, "creationTimestamp", "metadata", errors);
  std::optional<std::string> name = ReadString(meta, "name", "metadata", errors);
  if (name || Member(meta, "name") == nullptr) CheckJobName(name, "metadata.name", errors);
  if (name) spec.name = *name;
  std::optional<std::string> ns = ReadString(meta, "namespace", "metadata", errors);
  spec.ns = ResolveNamespace(ns, path_namespace, "metadata.namespace", errors);
  spec.labels = ReadLabels(meta, "labels", "metadata", errors);
  // Accepted for kubectl-style tooling, checked, and not kept: JobSpec has no
  // annotations, and they carry no meaning for gantry.
  std::map<std::string, std::string> annotations =
      ReadStringMap(meta, "annotations", "metadata", errors);
  (void)annotations;
}

void ReadSpec(const json& s, JobSpec& spec, FieldErrors& errors) {
  CheckSpecFieldNames(s, "spec", errors);
  ReadSpecFields(s, "spec", spec, errors);
  CheckPlacementText(spec.placement, "spec.placement", errors);
  const json* tmpl = RequireObject(s, "template", "spec", errors);
  if (tmpl == nullptr || !CheckTemplateHeader(*tmpl, "spec.template", errors)) return;
  CheckKueueLabels(*tmpl, "spec.template", errors);
  spec.pod_sets =
      DerivePodSets(*tmpl, "spec.template", Member(s, "podSets"), "spec.podSets", errors);
  CheckWorkerNames(*tmpl, "spec.template", spec.name, "metadata.name", errors);
}

}  // namespace

JobSpec ReadGantryDocument(const json& doc, std::optional<std::string_view> path_namespace,
                           FieldErrors& errors) {
  JobSpec spec;
  // status is gantry's to tell: a shown job's, sent back, is not read.
  CheckKnownFields(doc, "", {"apiVersion", "kind", "metadata", "spec", "status"}, errors);
  if (const json* meta = RequireObject(doc, "metadata", "", errors)) {
    ReadMetadata(*meta, path_namespace, spec, errors);
  } else {
    spec.ns = ResolveNamespace(std::nullopt, path_namespace, "metadata.namespace", errors);
  }
  if (const json* s = RequireObject(doc, "spec", "", errors)) ReadSpec(*s, spec, errors);
  return spec;
}

}  // namespace gantry::job_internal
