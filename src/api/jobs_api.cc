// The job routes of ApiService after submission (submit_api.cc): get,
// list, cancel/purge, events, remote objects.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <set>

#include "gantry/common/ascii.h"
#include "gantry/api/api_service.h"
#include "gantry/api/job_view.h"
#include "gantry/api/k8s_status.h"
#include "gantry/common/names.h"
#include "gantry/dispatch/demand.h"
#include "gantry/job/template_fields.h"

namespace gantry::api {
namespace {

// The query's limit, from 0 to max; nullopt when it is not a number in that
// range. None given reads as 0.
std::optional<long> QueryLimit(const http::Request& req, long max) {
  auto text = req.Query("limit");
  if (!text || text->empty()) return 0;
  char* end = nullptr;
  long v = std::strtol(text->c_str(), &end, 10);
  if (*end != '\0' || v < 0 || v > max) return std::nullopt;
  return v;
}

}  // namespace

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
  const OwnersOut out = OwnersOutNow();
  respond(http::JsonResponse(200, JobJsonText(*job, &out)));
}

OwnersOut ApiService::OwnersOutNow() const { return fleet_ ? fleet_->Outages() : OwnersOut{}; }

void ApiService::ListJobs(http::Request req, Respond respond) {
  ListQuery query;
  const std::string ns_text =
      req.path_params.count("ns") ? req.path_params["ns"] : req.Query("namespace").value_or("");
  if (std::string e = ns_text.empty() ? "" : CheckDns1123Label(ns_text); !e.empty()) {
    respond(K8sStatus(422, "Invalid", "namespace " + e, {{"metadata.namespace", e}}));  // ".." or "a\0b" names no namespace
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
  if (auto cluster = req.Query("cluster"); cluster && !cluster->empty()) {
    if (std::string e = CheckDns1123Label(*cluster); !e.empty()) {
      respond(K8sStatus(400, "BadRequest", "cluster " + e, {{"cluster", e}}));
      return;
    }
    query.cluster = *cluster;
  }
  if (auto phase = req.Query("phase"); phase && !phase->empty()) {
    std::vector<std::string_view> names;
    for (JobPhase p : kAllJobPhases) {  // whatever its case: running is Running
      names.push_back(JobPhaseName(p));
      if (ToLowerAscii(JobPhaseName(p)) == ToLowerAscii(*phase)) query.phase = p;
    }
    if (!query.phase) {
      const std::string known = fmt::format("{}", fmt::join(names, ", "));
      respond(K8sStatus(400, "BadRequest", "unknown phase '" + *phase + "': one of " + known,
                        {{"phase", "one of " + known}}));
      return;
    }
  }
  const auto limit = QueryLimit(req, options_.max_list_limit);
  if (!limit) {
    respond(K8sStatus(400, "BadRequest",
                      fmt::format("limit: must be an integer from 0 to {} (0, or none: pages of {})",
                                  options_.max_list_limit, options_.default_list_limit),
                      {{"limit", fmt::format("must be an integer from 0 to {}", options_.max_list_limit)}}));
    return;
  }
  // 0 is Kubernetes' "no limit": pages of the default size, as without one.
  query.limit = *limit > 0 ? static_cast<int>(*limit) : options_.default_list_limit;
  query.max_bytes = options_.max_list_page_bytes;
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
  const OwnersOut out = OwnersOutNow();
  respond(http::JsonResponse(200, JobListJsonText(page->jobs, page->next_after_seq, &out)));
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
  // limit: the job's last so many events (a status page's tail); none or 0
  // asks for all of them, oldest first either way.
  const auto limit = QueryLimit(req, options_.max_list_limit);
  if (!limit) {
    respond(K8sStatus(400, "BadRequest",
                      fmt::format("limit: must be an integer from 0 to {} (0, or none: all events)",
                                  options_.max_list_limit),
                      {{"limit", fmt::format("must be an integer from 0 to {}", options_.max_list_limit)}}));
    return;
  }
  auto tail = store_.LastEvents(job->uid, static_cast<int>(*limit));  // 0: all
  if (!tail.ok()) {
    respond(K8sStatusFrom(tail.status()));
    return;
  }
  respond(JsonAnswer(EventsToJson(tail->events, tail->total)));
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
  // The rows' clusters that a reload removed from the inventory (a few
  // lookups: a job's rows name a handful of clusters).
  std::set<std::string> clusters, not_in_inventory;
  for (const RemoteIntent& i : *intents) clusters.insert(i.cluster);
  for (const std::string& c : clusters) {
    if (fleet_ && !fleet_->Cluster(c)) not_in_inventory.insert(c);
  }
  respond(JsonAnswer(RemoteObjectsToJson(std::move(*intents), observed, errors, job_kind, not_in_inventory)));
}

}  // namespace gantry::api
