// The submission routes of ApiService: a job document posted (JSON or
// YAML), the same document posted again, and a resubmission that puts an
// Unschedulable job back to Queued.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "gantry/common/ascii.h"
#include "gantry/common/cut_text.h"
#include "gantry/api/api_service.h"
#include "gantry/api/job_view.h"
#include "gantry/api/k8s_status.h"
#include "gantry/common/names.h"
#include "gantry/dispatch/demand.h"
#include "gantry/job/job_document.h"
#include "gantry/job/kueue_labels.h"
#include "gantry/job/pod_templates.h"
#include "gantry/job/template_fields.h"
#include "gantry/placement/place.h"
#include "slow_lane.h"

namespace gantry::api {
namespace {

// Which parser a body needs, from its Content-Type; nullopt = unsupported.
std::optional<DocumentFormat> FormatOf(const http::Request& req) {
  std::string ct = ToLowerAscii(req.Header("content-type"));
  if (auto semi = ct.find(';'); semi != std::string::npos) ct.resize(semi);
  while (!ct.empty() && ct.back() == ' ') ct.pop_back();
  if (ct == "application/json") return DocumentFormat::kJson;
  if (ct == "application/yaml" || ct == "application/x-yaml" || ct == "text/yaml") {
    return DocumentFormat::kYaml;
  }
  if (ct.empty()) {  // curl -d without -H: guess from the first character
    auto first = req.body.find_first_not_of(" \t\r\n");
    bool json = first != std::string::npos && req.body[first] == '{';
    return json ? DocumentFormat::kJson : DocumentFormat::kYaml;
  }
  return std::nullopt;
}

// Warning headers as the Kubernetes API server writes them: 299 - "text",
// one per warning (kubectl and gantry print them).
void AddWarnings(http::Response& response, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) {
    std::string quoted;
    for (char c : w) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    response.headers.emplace_back("Warning", "299 - \"" + quoted + "\"");
  }
}

// On a 200 to a submission: this very post put the job back to Queued
// (event Resubmitted). The job's message alone cannot tell it: it still
// says "submitted again" when the same document comes once more while the
// job waits, and nothing was written then.
constexpr const char* kResubmittedHeader = "Gantry-Resubmitted";

http::Response InvalidName(const std::string& what, const std::string& field, const std::string& error) {
  return K8sStatus(422, "Invalid", what + " " + error, {{field, error}});
}

// What a job asks beyond its token's priority cap (Principal::max_priority),
// so that a tenant cannot have its jobs preempt everyone else's: its
// priority (Kueue's, for admission and preemption), its WorkloadPriorityClass
// (one the token lists), and its pods' own priority (kube-scheduler's, which
// preempts running pods on a full node): none may be named. Kinds gantry
// reads no pod templates of (generic kinds) are refused for such a token.
std::optional<FieldError> OverPriorityCap(const JobSpec& spec, const Principal& principal) {
  if (!principal.max_priority) return std::nullopt;
  const bool manifest = spec.template_path.empty();  // the priority is then an annotation
  const std::string at = manifest ? "" : spec.template_path + ".";
  if (spec.priority > *principal.max_priority) {
    return FieldError{manifest ? "metadata.annotations[gantry.dev/priority]" : "spec.priority",
                      fmt::format("{} is above this token's maxPriority, {}", spec.priority, *principal.max_priority)};
  }
  if (const std::string cls = WorkloadPriorityClass(spec.template_object);
      !cls.empty() && !principal.priority_classes.count(cls)) {
    const std::string allowed = principal.priority_classes.empty()
                                    ? "none"
                                    : fmt::format("{}", fmt::join(principal.priority_classes, ", "));
    return FieldError{at + "metadata.labels[" + kPriorityClassLabel + "]",
                      fmt::format("WorkloadPriorityClass {} is not among this token's priorityClasses ({})", cls,
                                  allowed)};
  }
  if (ClassifyTemplate(spec.template_object) == TemplateKind::kOther) {
    return FieldError{at + "kind", fmt::format("a token with maxPriority may submit a batch/v1 Job or a JobSet, whose "
                                               "pods' priority gantry reads, not {} {}",
                                               spec.template_object.value("apiVersion", ""),
                                               spec.template_object.value("kind", ""))};
  }
  for (const PodSet& set : spec.pod_sets) {
    const nlohmann::json* pod = set.pod_template.is_object() && set.pod_template.contains("spec")
                                    ? &set.pod_template["spec"]
                                    : nullptr;
    if (!pod || !pod->is_object()) continue;
    for (const char* field : {"priorityClassName", "priority"}) {
      if (pod->contains(field)) {
        return FieldError{at + "spec",
                          fmt::format("pod set {}: {} is set; a token with maxPriority may not give its pods a "
                                      "priority of their own (kube-scheduler preempts running pods by it)",
                                      set.name, field)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

void ApiService::Submit(http::Request req, Respond respond) {
  const std::string& ns = req.path_params["ns"];
  if (std::string e = CheckDns1123Label(ns); !e.empty()) {
    respond(InvalidName("namespace", "metadata.namespace", e));
    return;
  }
  auto principal = Authorize(req, &ns, respond);
  if (!principal) return;
  auto format = FormatOf(req);
  if (!format) {
    respond(K8sStatus(415, "UnsupportedMediaType",
                      "Content-Type must be application/json or application/yaml"));
    return;
  }
  if (req.body.size() <= options_.inline_parse_bytes) {
    return SubmitDocument(std::move(req), *format, std::move(*principal), std::move(respond));
  }
  // A large document is parsed on the slow lane, not on the server's loop
  // (slow_lane.h); what a submitter sends then holds no one else up.
  auto work = [this, req = std::make_shared<http::Request>(std::move(req)), format = *format,
               principal = std::move(*principal), respond](bool run) mutable {
    if (!run) return respond(K8sStatus(503, "ServiceUnavailable", "gantry is shutting down; submit again"));
    SubmitDocument(std::move(*req), format, std::move(principal), std::move(respond));
  };
  if (!slow_lane_->Post(std::move(work))) {
    http::Response busy = K8sStatus(429, "TooManyRequests",
                                    fmt::format("{} large job documents wait to be read already; submit again "
                                                "shortly",
                                                options_.slow_lane_capacity));
    busy.headers.emplace_back("Retry-After", "1");
    respond(std::move(busy));
  }
}

void ApiService::SubmitDocument(http::Request req, DocumentFormat format, Principal principal, Respond respond) {
  const std::string& ns = req.path_params["ns"];
  auto parsed = ParseJobDocument(req.body, format, ns);
  if (auto* err = std::get_if<DocumentError>(&parsed)) {
    std::vector<Cause> causes;
    for (const FieldError& f : err->causes) causes.push_back({f.field, f.message});
    respond(K8sStatus(err->code, err->code == 400 ? "BadRequest" : "Invalid", err->message, causes));
    return;
  }
  if (std::optional<FieldError> over = OverPriorityCap(std::get<JobSpec>(parsed), principal)) {
    respond(K8sStatus(403, "Forbidden", over->field + ": " + over->message, {{over->field, over->message}}));
    return;
  }
  if (intake_) {
    const JobSpec& spec = std::get<JobSpec>(parsed);
    if (std::optional<FieldError> refused = intake_->Refuse(spec)) {
      // A job stored before the engine began to refuse its kind (it left the
      // daemon's genericKinds) is still the answer to its own document.
      auto stored = store_.Get(spec.ns, spec.name);
      if (stored.ok() && SameJobSpec(stored->spec_json, SpecToJsonText(spec))) {
        respond(http::JsonResponse(200, JobJsonText(*stored)));
        return;
      }
      respond(K8sStatus(422, "Invalid", refused->field + ": " + refused->message, {{refused->field, refused->message}}));
      return;
    }
  }
  // Fields of the pod templates Kubernetes does not know: warned of, as
  // the API server's own field validation warns (template_fields.h).
  std::vector<std::string> warnings =
      UnknownTemplateFields(std::get<JobSpec>(parsed).template_object, std::get<JobSpec>(parsed).template_path);
  const int64_t now_ms = clock_.NowMillis();
  if (std::string never = NeverPlaceable(std::get<JobSpec>(parsed), now_ms); !never.empty()) {
    warnings.push_back(std::move(never));
  }
  JobRecord record = RecordOfSpec(std::get<JobSpec>(parsed), NewUid(now_ms), now_ms);
  if (intake_) record.message = intake_->FirstMessage();
  // The answer for a new job is built here, on the connection's thread: the
  // store's callback runs on its writer thread, whose time is every
  // submitter's commit latency.
  std::string created_body = JobJsonText(record);
  // The engine's first pass starts from this spec, if it has room for it
  // (job_intake.h); else it is freed here with the request.
  std::shared_ptr<JobSpec> handed;
  if (intake_ && intake_->WantsSpec()) handed = std::make_shared<JobSpec>(std::move(std::get<JobSpec>(parsed)));
  store_.Submit(std::move(record), [this, respond, created_body = std::move(created_body), handed = std::move(handed),
                                    warnings = std::move(warnings)](Result<SubmitResult> result) mutable {
    if (!result.ok()) {
      if (result.status().code() == Code::kConflict) {
        respond(K8sStatus(409, "AlreadyExists", result.status().message()));
        return;
      }
      if (int64_t held = 0; submit_failed_log_.Allow(&held)) {
        spdlog::error("submit failed: {}{}", result.status().ToString(), submit_failed_log_.HeldText(held));
      }
      respond(K8sStatusFrom(result.status()));
      return;
    }
    if (const int64_t held = submit_failed_log_.Reset(); held > 0) {
      spdlog::error("submit failed: {} more submission(s) refused before this one was taken (none refused for "
                    "10 s since)",
                    held);
    }
    const JobRecord& job = result->job;
    if (result->outcome == SubmitOutcome::kExisting) return AnswerExisting(job, std::move(warnings), respond);
    spdlog::info("job {}/{} submitted uid={} queue={} priority={}", job.ns, job.name, job.uid, job.queue,
                 job.priority);
    if (intake_) intake_->Created(std::move(result->job), std::move(handed));
    http::Response res;
    res.status = 201;
    res.body = std::move(created_body);
    AddWarnings(res, warnings);
    respond(std::move(res));
  });
}

// The answer to a job's document submitted again: the stored job as it is,
// or, for an Unschedulable one, the job judged again (Resubmitted).
void ApiService::AnswerExisting(const JobRecord& job, std::vector<std::string> warnings, const Respond& respond) {
  if (job.phase == JobPhase::kUnschedulable && intake_) return Resubmitted(job, std::move(warnings), respond);
  http::Response same = http::JsonResponse(200, JobJsonText(job));
  AddWarnings(same, warnings);
  respond(std::move(same));
}

std::string ApiService::NeverPlaceable(const JobSpec& spec, int64_t now_ms) const {
  const placement::Decision decision =
      placement::Place(DemandFromSpec(spec), *PlacementSnapshots(now_ms), options_.placement);
  if (!decision.unschedulable) return "";  // (an empty inventory is no verdict either)
  std::vector<std::string> why;
  for (const placement::ExcludedCluster& e : decision.excluded) {
    why.push_back(fmt::format("{}: {}", e.cluster, e.exclusion.message));
  }
  // Told now, as the tenant's submit answers at once: the verdict comes with
  // the job's first pass, a moment later.
  return CutText(fmt::format("no configured cluster can ever run this job as a whole ({}): it will be "
                             "Unschedulable; see gantry explain",
                             fmt::join(why, "; ")),
                 400);
}

// An Unschedulable job submitted again as it was is judged again, against
// the inventory of now: it goes back to Queued here, so that the answer (and
// a `submit --wait` reading it) does not show the old verdict as final, and
// its next pass nominates it or finds it Unschedulable again. Only an
// Unschedulable job is written (SubmitDocument's check, and expected_phase
// below against a race): the same document for a job in any other phase,
// Queued again included, is answered as it is, so that a tool applying it
// every minute adds nothing to the job's history.
void ApiService::Resubmitted(const JobRecord& job, std::vector<std::string> warnings, const Respond& respond) {
  DispatchUpdate u;
  u.uid = job.uid;
  u.expected_phase = job.phase;
  u.expected_epoch = job.epoch;
  u.expected_cluster = job.cluster;
  u.phase = JobPhase::kQueued;
  u.nominated_ms = clock_.NowMillis();  // Queued since: its dispatch timeout counts from here
  u.message = "submitted again: judged again against the clusters of now";
  JobEvent e;
  e.reason = "Resubmitted";
  e.message = "the same document was submitted again while the job was Unschedulable: it is judged again";
  u.events.push_back(std::move(e));
  store_.ApplyDispatch(std::move(u), [this, job, warnings = std::move(warnings), respond](Result<JobRecord> r) {
    JobRecord now = job;
    const bool queued_again = r.ok();
    if (r.ok()) {
      spdlog::info("job {}/{} submitted again while Unschedulable: queued to be judged again", job.ns, job.name);
      now = std::move(*r);
    } else if (r.status().code() == Code::kConflict) {
      // Changed meanwhile: answered as it is now, as any resubmission.
      if (auto read = store_.Get(job.ns, job.name); read.ok()) now = std::move(*read);
    } else {
      spdlog::warn("job {}/{}: could not queue it again: {}", job.ns, job.name, r.status().ToString());
    }
    intake_->Wake(job.uid);  // judged again in any case, as before this write existed
    http::Response same = http::JsonResponse(200, JobJsonText(now));
    if (queued_again) same.headers.emplace_back(kResubmittedHeader, "true");
    AddWarnings(same, warnings);
    respond(std::move(same));
  });
}

}  // namespace gantry::api
