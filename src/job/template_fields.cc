#include "gantry/job/template_fields.h"

#include <algorithm>

#include <fmt/format.h>

#include "gantry/common/cut_text.h"
#include "gantry/job/pod_templates.h"

namespace gantry {
namespace {

using json = nlohmann::json;
using Names = std::vector<std::string_view>;

// core/v1 PodSpec and Container as the Workload CRD's pod template has them
// (a test keeps these whole against it); batch/v1 JobSpec.
const Names kPodSpec = {
    "activeDeadlineSeconds", "affinity", "automountServiceAccountToken", "containers", "dnsConfig", "dnsPolicy",
    "enableServiceLinks", "ephemeralContainers", "hostAliases", "hostIPC", "hostNetwork", "hostPID", "hostUsers",
    "hostname", "hostnameOverride", "imagePullSecrets", "initContainers", "nodeName", "nodeSelector", "os", "overhead",
    "preemptionPolicy", "priority", "priorityClassName", "readinessGates", "resourceClaims", "resources",
    "restartPolicy", "runtimeClassName", "schedulerName", "schedulingGates", "schedulingGroup", "securityContext",
    "serviceAccount", "serviceAccountName", "setHostnameAsFQDN", "shareProcessNamespace", "subdomain",
    "terminationGracePeriodSeconds", "tolerations", "topologySpreadConstraints", "volumes"};
const Names kContainer = {
    "args", "command", "env", "envFrom", "image", "imagePullPolicy", "lifecycle", "livenessProbe", "name", "ports",
    "readinessProbe", "resizePolicy", "resources", "restartPolicy", "restartPolicyRules", "securityContext",
    "startupProbe", "stdin", "stdinOnce", "terminationMessagePath", "terminationMessagePolicy", "tty", "volumeDevices",
    "volumeMounts", "workingDir"};
const Names kResources = {"claims", "limits", "requests"};
const Names kJobSpec = {
    "activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "completionMode", "completions", "managedBy",
    "manualSelector", "maxFailedIndexes", "parallelism", "podFailurePolicy", "podReplacementPolicy", "selector",
    "successPolicy", "suspend", "template", "ttlSecondsAfterFinished"};
const Names kPodTemplate = {"metadata", "spec"};
const Names kObject = {"apiVersion", "kind", "metadata", "spec", "status"};

// Finalizers that nothing in the worker removes would hold the delete
// gantry sends to cancel, requeue or fence the job (a foreground delete
// waits for its pods and child Jobs too): gantry drops them from what it
// writes (BuildRemoteJob), and says so.
void CheckFinalizers(const json& object, const std::string& path, std::vector<std::string>& out) {
  if (!object.is_object()) return;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return;
  auto finalizers = meta->find("finalizers");
  if (finalizers == meta->end() || finalizers->is_null() || (finalizers->is_array() && finalizers->empty())) return;
  out.push_back(fmt::format("{}metadata.finalizers: dropped: gantry deletes the remote job to cancel, requeue or "
                            "fence it, and a finalizer would hold that delete (the worker's controllers add their own)",
                            path.empty() ? path : path + "."));
}

void Check(const json& object, const Names& known, const std::string& path, std::vector<std::string>& out) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      out.push_back(fmt::format("{}: unknown field \"{}\"", path, key));
    }
  }
}

void CheckContainers(const json& pod_spec, const char* list, const std::string& path, std::vector<std::string>& out) {
  auto it = pod_spec.find(list);
  if (it == pod_spec.end() || !it->is_array()) return;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& c = (*it)[i];
    const std::string at = fmt::format("{}.{}[{}]", path, list, i);
    Check(c, kContainer, at, out);
    if (c.is_object() && c.contains("resources")) Check(c["resources"], kResources, at + ".resources", out);
    // gantry sets it in every container (the job's epoch, to fence writes
    // with): a value the template gives is replaced, and said so.
    if (!c.is_object() || !c.contains("env") || !c["env"].is_array()) continue;
    for (const json& var : c["env"]) {
      if (var.is_object() && var.contains("name") && var["name"] == "GANTRY_EPOCH") {
        out.push_back(
            fmt::format("{}.env: GANTRY_EPOCH is set by gantry to the job's epoch; the value given here is replaced", at));
      }
    }
  }
}

void CheckPodTemplate(const json& pod_template, const std::string& path, std::vector<std::string>& out) {
  Check(pod_template, kPodTemplate, path, out);
  CheckFinalizers(pod_template, path, out);
  if (!pod_template.is_object() || !pod_template.contains("spec") || !pod_template["spec"].is_object()) return;
  const json& spec = pod_template["spec"];
  Check(spec, kPodSpec, path + ".spec", out);
  CheckContainers(spec, "containers", path + ".spec", out);
  CheckContainers(spec, "initContainers", path + ".spec", out);
  if (spec.contains("resources")) Check(spec["resources"], kResources, path + ".spec.resources", out);
}

void CheckJobSpec(const json& job_spec, const std::string& path, std::vector<std::string>& out) {
  Check(job_spec, kJobSpec, path, out);
  if (job_spec.is_object() && job_spec.contains("template")) CheckPodTemplate(job_spec["template"], path + ".template", out);
}

}  // namespace

std::vector<std::string> UnknownTemplateFields(const json& template_object, std::string_view template_path) {
  std::vector<std::string> out;
  const std::string top = template_path.empty() ? std::string("") : std::string(template_path);
  const std::string at = top.empty() ? std::string("spec") : top + ".spec";
  // A manifest's own fields at the top are the document's, refused there.
  if (!top.empty() && ClassifyTemplate(template_object) != TemplateKind::kOther) {
    Check(template_object, kObject, top, out);
  }
  CheckFinalizers(template_object, top, out);
  ForEachJobSpec(template_object, [&](const json& job_spec, int replicated_job) {
    if (replicated_job >= 0) {  // a JobSet's Job template: its metadata too
      CheckFinalizers(template_object.at("spec").at("replicatedJobs").at(static_cast<std::size_t>(replicated_job)).at(
                          "template"),
                      fmt::format("{}.replicatedJobs[{}].template", at, replicated_job), out);
    }
    CheckJobSpec(job_spec,
                 replicated_job < 0 ? at : fmt::format("{}.replicatedJobs[{}].template.spec", at, replicated_job),
                 out);
  });
  // Headers carry them: bytes a header cannot, and not without bound.
  for (std::string& w : out) {
    for (char& c : w) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    }
    if (w.size() > kMaxTemplateWarningBytes) w = CutText(w, kMaxTemplateWarningBytes - 3);  // "..." after
  }
  if (out.size() > kMaxTemplateWarnings) {
    const std::size_t more = out.size() - (kMaxTemplateWarnings - 1);
    out.resize(kMaxTemplateWarnings - 1);
    out.push_back(fmt::format("and {} more unknown field(s)", more));
  }
  return out;
}

const std::vector<std::string_view>& KnownPodSpecFields() { return kPodSpec; }
const std::vector<std::string_view>& KnownContainerFields() { return kContainer; }

}  // namespace gantry
