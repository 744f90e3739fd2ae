// The job routes of ApiService: submit, get, list, cancel/purge, events,
// remote objects.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "gantry/api/api_service.h"
#include "gantry/api/job_view.h"
#include "gantry/api/k8s_status.h"
#include "gantry/common/names.h"
#include "gantry/dispatch/demand.h"
#include "gantry/job/job_document.h"
#include "gantry/job/template_fields.h"
#include "slow_lane.h"

namespace gantry::api {
namespace {

// Which parser a body needs, from its Content-Type; nullopt = unsupported.
std::optional<DocumentFormat> FormatOf(const http::Request& req) {
  std::string ct = http::ToLowerAscii(req.Header("content-type"));
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

}  // namespace

void ApiService::Submit(http::Request req, Respond respond) {
  const std::string& ns = req.path_params["ns"];
  if (std::string e = CheckDns1123Label(ns); !e.empty()) {
    respond(InvalidName("namespace", "metadata.namespace", e));
    return;
  }
  if (!Authorize(req, &ns, respond)) return;
  auto format = FormatOf(req);
  if (!format) {
    respond(K8sStatus(415, "UnsupportedMediaType",
                      "Content-Type must be application/json or application/yaml"));
    return;
  }
  if (req.body.size() <= options_.inline_parse_bytes) return SubmitDocument(std::move(req), *format, std::move(respond));
  // A large document is parsed on the slow lane, not on the server's loop
  // (slow_lane.h); what a submitter sends then holds no one else up.
  auto work = [this, req = std::make_shared<http::Request>(std::move(req)), format = *format,
               respond](bool run) mutable {
    if (!run) return respond(K8sStatus(503, "ServiceUnavailable", "gantry is shutting down; submit again"));
    SubmitDocument(std::move(*req), format, std::move(respond));
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

void ApiService::SubmitDocument(http::Request req, DocumentFormat format, Respond respond) {
  const std::string& ns = req.path_params["ns"];
  auto parsed = ParseJobDocument(req.body, format, ns);
  if (auto* err = std::get_if<DocumentError>(&parsed)) {
    std::vector<Cause> causes;
    for (const FieldError& f : err->causes) causes.push_back({f.field, f.message});
    respond(K8sStatus(err->code, err->code == 400 ? "BadRequest" : "Invalid", err->message, causes));
    return;
  }
  if (intake_) {
    const JobSpec& spec = std::get<JobSpec>(parsed);
    if (std::optional<FieldError> refused = intake_->Refuse(spec)) {
      // A job stored before the engine began to refuse its kind (it left the
      // daemon's genericKinds) is still the answer to its own document.
      auto stored = store_.Get(spec.ns, spec.name);
      if (stored.ok() && SameSubmission(*stored, SpecToJsonText(spec))) {
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
      spdlog::error("submit failed: {}", result.status().ToString());
      respond(K8sStatusFrom(result.status()));
      return;
    }
    const JobRecord& job = result->job;
    if (result->outcome == SubmitOutcome::kExisting) {
      if (job.phase == JobPhase::kUnschedulable && intake_) {
        Resubmitted(job, std::move(warnings), respond);
        return;
      }
      http::Response same = http::JsonResponse(200, JobJsonText(job));
      AddWarnings(same, warnings);
      respond(std::move(same));
      return;
    }
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

std::optional<JobRecord> ApiService::AuthorizedJob(http::Request& req, const Respond& respond) {
  const std::string& ns = req.path_params["ns"];
  if (!Authorize(req, &ns, respond)) return std::nullopt;
  auto job = store_.Get(ns, req.path_params["name"]);
  if (!job.ok()) {
    respond(K8sStatusFrom(job.status()));
    return std::nullopt;
  }
  return std::move(job.value());
}

void ApiService::GetJob(http::Request req, Respond respond) {
  auto job = AuthorizedJob(req, respond);
  if (!job) return;
  respond(http::JsonResponse(200, JobJsonText(*job)));
}

void ApiService::ListJobs(http::Request req, Respond respond) {
  ListQuery query;
  const std::string ns_text =
      req.path_params.count("ns") ? req.path_params["ns"] : req.Query("namespace").value_or("");
  if (std::string e = ns_text.empty() ? "" : CheckDns1123Label(ns_text); !e.empty()) {
    respond(InvalidName("namespace", "metadata.namespace", e));  // ".." or "a\0b" names no namespace
    return;
  }
  std::optional<std::string> ns;
  if (!ns_text.empty()) ns = ns_text;
  auto principal = Authorize(req, ns ? &*ns : nullptr, respond);
  if (!principal) return;
  query.ns = ns;
  if (!principal->admin && !ns) {
    query.allowed_namespaces.assign(principal->namespaces.begin(), principal->namespaces.end());
  }
  if (auto queue = req.Query("queue"); queue && !queue->empty()) query.queue = *queue;
  if (auto phase = req.Query("phase"); phase && !phase->empty()) {
    std::vector<std::string_view> names;
    for (JobPhase p : kAllJobPhases) {  // whatever its case: running is Running
      names.push_back(JobPhaseName(p));
      if (http::ToLowerAscii(JobPhaseName(p)) == http::ToLowerAscii(*phase)) query.phase = p;
    }
    if (!query.phase) {
      const std::string known = fmt::format("{}", fmt::join(names, ", "));
      respond(K8sStatus(400, "BadRequest", "unknown phase '" + *phase + "': one of " + known,
                        {{"phase", "one of " + known}}));
      return;
    }
  }
  query.limit = options_.default_list_limit;
  if (auto limit = req.Query("limit"); limit && !limit->empty()) {
    char* end = nullptr;
    long v = std::strtol(limit->c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > options_.max_list_limit) {
      respond(K8sStatus(400, "BadRequest",
                        "limit must be an integer from 1 to " + std::to_string(options_.max_list_limit),
                        {{"limit", "out of range"}}));
      return;
    }
    query.limit = static_cast<int>(v);
  }
  if (auto token = req.Query("continue"); token && !token->empty()) {
    auto after = DecodeContinue(*token);
    if (!after) {
      respond(K8sStatus(400, "BadRequest", "the continue token is not valid", {{"continue", "invalid"}}));
      return;
    }
    query.after_seq = *after;
  }
  auto page = store_.List(query);
  if (!page.ok()) {
    spdlog::error("list failed: {}", page.status().ToString());
    respond(K8sStatusFrom(page.status()));
    return;
  }
  respond(http::JsonResponse(200, JobListJsonText(page->jobs, page->next_after_seq)));
}

void ApiService::CancelJob(http::Request req, Respond respond) {
  std::string ns = req.path_params["ns"];
  std::string name = req.path_params["name"];
  if (!Authorize(req, &ns, respond)) return;
  auto purge = req.Query("purge");
  if (purge && *purge != "true" && *purge != "false") {
    respond(K8sStatus(400, "BadRequest", "purge must be true or false", {{"purge", "not a boolean"}}));
    return;
  }
  if (purge && *purge == "true") {
    store_.Purge(ns, name, [this, respond, ns, name](Result<std::string> result) {
      if (!result.ok()) {
        respond(K8sStatusFrom(result.status()));
        return;
      }
      spdlog::info("job {}/{} purged", ns, name);
      // The engine keeps a job's spec, last record and expectations in
      // bounded caches: woken now, its pass finds the job gone and forgets
      // it at once instead of when the caches make room.
      if (intake_) intake_->Wake(*result);
      respond(K8sSuccess(200, "job " + ns + "/" + name + " purged"));
    });
    return;
  }
  store_.RequestCancel(ns, name, [this, respond](Result<JobRecord> result) {
    if (!result.ok()) {
      respond(K8sStatusFrom(result.status()));
      return;
    }
    const JobRecord& job = *result;
    if (job.phase == JobPhase::kCancelling) spdlog::info("job {}/{} cancel requested uid={}", job.ns, job.name, job.uid);
    if (job.phase == JobPhase::kCancelling && intake_) {
      // Answered once no create of the job's can go out any more (job_intake.h).
      intake_->CancelRequested(job.uid, [respond, body = JobJsonText(job)] {
        respond(http::JsonResponse(202, body));
      });
      return;
    }
    respond(http::JsonResponse(202, JobJsonText(job)));
  });
}

void ApiService::JobEvents(http::Request req, Respond respond) {
  auto job = AuthorizedJob(req, respond);
  if (!job) return;
  auto events = store_.Events(job->uid);
  if (!events.ok()) {
    respond(K8sStatusFrom(events.status()));
    return;
  }
  respond(JsonAnswer(EventsToJson(*events)));
}

void ApiService::JobRemoteObjects(http::Request req, Respond respond) {
  auto job = AuthorizedJob(req, respond);
  if (!job) return;
  auto intents = store_.Intents(job->uid);
  if (!intents.ok()) {
    respond(K8sStatusFrom(intents.status()));
    return;
  }
  std::vector<dispatch::ObservedObject> observed;
  std::vector<dispatch::ActionError> errors;
  if (intake_) {
    observed = intake_->RemoteView(job->uid);
    errors = intake_->ActionErrors(job->uid);
  }
  // The real job's own kind (its rows say "Job"), read from the stored
  // spec without parsing it: this is the server's loop.
  const std::string job_kind = TemplateKindOf(job->spec_json);
  respond(JsonAnswer(RemoteObjectsToJson(std::move(*intents), observed, errors, job_kind)));
}

}  // namespace gantry::api
