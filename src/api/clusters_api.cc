// The cluster routes of ApiService: list, get, reload, and a job's placement.
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "gantry/api/api_service.h"
#include "gantry/api/cluster_view.h"
#include "gantry/api/k8s_status.h"
#include "gantry/common/clock.h"
#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/demand.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/job/job_document.h"
#include "gantry/placement/explain.h"
#include "slow_lane.h"
#include "gantry/placement/place.h"

namespace gantry::api {
namespace {

// What a tenant token reads in place of a cluster's error messages.
constexpr const char* kWithheld = "withheld from tenant tokens: an admin token's gantry clusters shows it";

}  // namespace

nlohmann::json ApiService::ClusterJson(const inventory::ClusterView& view, int64_t now_ms, bool admin) const {
  nlohmann::json out = ClusterToJson(view, now_ms, options_.stale_after_ms);
  if (options_.watch_refused) {
    if (std::string why = options_.watch_refused(view.config.name); !why.empty()) out["status"]["watchRefused"] = why;
  }
  if (options_.watch_refused_since && out["status"].contains("watchRefused")) {
    if (int64_t since = options_.watch_refused_since(view.config.name); since > 0) {
      out["status"]["watchRefusedSince"] = FormatRfc3339(since);
    }
  }
  if (options_.requests_stalled_for_ms) {
    if (const int64_t ms = options_.requests_stalled_for_ms(view.config.name); ms >= 0) {
      out["status"]["requestsStalled"] =
          fmt::format("gantry's requests here have gone unanswered for {} s: it takes no new copy, and one request "
                      "at a time goes here until one is answered",
                      ms / 1000);
      out["status"]["requestsStalledSince"] = FormatRfc3339(now_ms - ms);
    }
  }
  if (options_.view_behind) {
    ViewBehind b = options_.view_behind(view.config.name);
    if (!b.resources.empty()) {
      out["status"]["viewBehind"] = fmt::format("{}", fmt::join(b.resources, ", "));
      if (b.since_ms > 0) out["status"]["viewBehindSince"] = FormatRfc3339(b.since_ms);
    }
  }
  // Last, once every message is in (the engine's too).
  if (!admin) {
    // A tenant sees each cluster's health, capacity and spec, and that
    // something is wrong, not the messages: they name the operator's files,
    // kubeconfig entries and credential plugins (with what a plugin printed),
    // and carry the clusters' own answers to gantry's identity. The health
    // (ConfigRefused, CredentialsUnloadable, NotReady...) says as much as a
    // tenant can act on.
    nlohmann::json& status = out["status"];
    for (const char* field :
         {"lastError", "recoveredFrom", "configError", "credentialsError", "capacityError", "watchRefused"}) {
      if (status.contains(field)) status[field] = kWithheld;
    }
    if (status.contains("capacity")) {
      for (const char* field : {"localQueuesError", "priorityClassesError"}) {
        if (status["capacity"].contains(field)) status["capacity"][field] = kWithheld;
      }
    }
    status.erase("configWarning");
    status.erase("credentialsWarning");
  }
  return out;
}

nlohmann::json ApiService::MissingClusterJson(const std::string& name, int jobs) {
  return {{"apiVersion", "gantry.dev/v1"},
          {"kind", "Cluster"},
          {"metadata", {{"name", name}}},
          {"spec", nlohmann::json::object()},
          {"status",
           {{"health", "Missing"},
            {"ownedJobs", jobs},
            {"missing",
             fmt::format("not in the inventory gantry started with (its file in clusters.d missing?), yet it owned {} "
                         "running job(s) then: they are held as they are (OwnerHeld) until it is back, or a reload "
                         "(SIGHUP, or POST /api/v1/clusters:reload) confirms its removal and each gets its "
                         "onClusterLoss",
                         jobs)}}}};
}

void ApiService::ListClusters(http::Request req, Respond respond) {
  auto principal = Authorize(req, nullptr, respond);
  if (!principal) return;
  nlohmann::json items = nlohmann::json::array();
  std::set<std::string> listed;
  if (fleet_) {
    int64_t now = clock_.NowMillis();
    for (const auto& view : fleet_->Clusters()) {
      items.push_back(ClusterJson(view, now, principal->admin));
      listed.insert(view.config.name);
    }
  }
  if (options_.owners_missing) {
    for (const auto& [name, jobs] : options_.owners_missing()) {
      if (!listed.count(name)) items.push_back(MissingClusterJson(name, jobs));  // (back since the start: listed)
    }
  }
  nlohmann::json list = {{"apiVersion", "gantry.dev/v1"}, {"kind", "ClusterList"}, {"metadata", nlohmann::json::object()},
                        {"items", items}};
  respond(JsonAnswer(list));
}

void ApiService::GetCluster(http::Request req, Respond respond) {
  auto principal = Authorize(req, nullptr, respond);
  if (!principal) return;
  const std::string& name = req.path_params["name"];
  auto view = fleet_ ? fleet_->Cluster(name) : std::nullopt;
  if (!view && options_.owners_missing) {
    const std::map<std::string, int> missing = options_.owners_missing();
    if (auto m = missing.find(name); m != missing.end()) {
      respond(JsonAnswer(MissingClusterJson(name, m->second)));
      return;
    }
  }
  if (!view) {
    respond(K8sStatus(404, "NotFound", "cluster " + name + " not found"));
    return;
  }
  respond(JsonAnswer(ClusterJson(*view, clock_.NowMillis(), principal->admin)));
}

void ApiService::ReloadClusters(http::Request req, Respond respond) {
  auto principal = Authorize(req, nullptr, respond);
  if (!principal) return;
  if (!principal->admin) {
    respond(K8sStatus(403, "Forbidden", "reloading the inventory needs an admin token"));
    return;
  }
  if (!fleet_) {
    respond(K8sStatus(503, "ServiceUnavailable", "no cluster inventory is configured"));
    return;
  }
  // On the admin lane, not the server's loop: the reload reads every
  // cluster file, and the engine then walks every unfinished job in the
  // store (100,000 queued ones take a while). Not on the lane of large job
  // documents either, where a burst of submissions would refuse it.
  bool post = false;
  {
    std::lock_guard lock(reload_mu_);
    post = reloads_waiting_.empty();  // else the reload posted already answers this one too
    reloads_waiting_.push_back(std::move(respond));
  }
  // Refused only once stopped (it never holds more than a reload and a count).
  if (post && !admin_lane_->Post([this](bool run) { ReloadForWaiting(run); })) ReloadForWaiting(false);
}

void ApiService::ReloadForWaiting(bool run) {
  std::vector<Respond> waiting;
  {
    std::lock_guard lock(reload_mu_);
    waiting.swap(reloads_waiting_);  // a request from now on waits for the next reload
  }
  if (!run) {
    for (const Respond& respond : waiting) {
      respond(K8sStatus(503, "ServiceUnavailable", "gantry is shutting down; reload again"));
    }
    return;
  }
  // Each cluster's credentials problem before: the answer names those this
  // reload brought (a script reloading while one cluster's kubeconfig stays
  // broken is not failed each time; gantry clusters shows it meanwhile).
  auto credentials_of = [](const inventory::ClusterView& view) {
    return view.credentials_error + "\n" + view.credentials_warning;
  };
  std::map<std::string, std::string> credentials_before;
  for (const inventory::ClusterView& view : fleet_->Clusters()) {
    credentials_before[view.config.name] = credentials_of(view);
  }
  inventory::InventoryChange change;
  auto errors = fleet_->Reload(&change);
  const std::string also = options_.after_reload ? options_.after_reload(change.removed) : "";
  std::string changed = change.Describe();
  if (!also.empty()) changed += (changed.empty() ? "" : "; ") + also;
  if (fleet_->DirStatus().ok()) {
    spdlog::info("POST /api/v1/clusters:reload: inventory reloaded: {} cluster(s), {} file(s) refused{}",
                 fleet_->Clusters().size(), errors.size(), changed.empty() ? "" : "; " + changed);
  } else {
    spdlog::warn("POST /api/v1/clusters:reload: the inventory is kept as it was ({} cluster(s)): {}",
                 fleet_->Clusters().size(), fleet_->DirStatus().message());
  }
  std::vector<Cause> causes;
  // The field is the file; the message says why, not the file again.
  for (const auto& e : errors) causes.push_back({e.file, inventory::RefusalWithoutFile(e.file, e.status.message())});
  // A file taken whose kubeconfig is not: the cluster is in the inventory
  // but gantry cannot reach it (or keeps its last good credentials).
  std::size_t unusable = 0;
  for (const inventory::ClusterView& view : fleet_->Clusters()) {
    auto before = credentials_before.find(view.config.name);
    if (before != credentials_before.end() && before->second == credentials_of(view)) continue;  // as before
    if (!view.credentials_error.empty()) {
      causes.push_back({view.config.name, "its credentials do not load: " + view.credentials_error +
                                              "; the cluster is not reached until they do"});
      ++unusable;
    } else if (!view.credentials_warning.empty()) {
      causes.push_back({view.config.name, "its kubeconfig was refused at this reload, and its last good credentials "
                                          "stay in use: " +
                                              view.credentials_warning});
      ++unusable;
    }
  }
  const Status dir = fleet_->DirStatus();
  for (const Respond& respond : waiting) {
    if (!dir.ok()) {
      // Nothing was read: every cluster is kept as it was (Fleet::Reload).
      respond(K8sStatus(422, "Invalid", dir.message() + "; the inventory is kept as it was", {}));
    } else if (!errors.empty() || unusable > 0) {
      respond(K8sStatus(422, "Invalid",
                        std::string(errors.empty() ? "some clusters' credentials do not load"
                                                   : "some cluster files were refused") +
                            "; the others are in use" + (changed.empty() ? std::string() : "; " + changed),
                        causes));
    } else {
      respond(K8sSuccess(200, changed.empty() ? "inventory reloaded" : "inventory reloaded: " + changed));
    }
  }
}

std::shared_ptr<const std::vector<placement::ClusterSnapshot>> ApiService::PlacementSnapshots(int64_t now_ms) const {
  if (options_.placement_snapshots) return options_.placement_snapshots(now_ms);
  return std::make_shared<const std::vector<placement::ClusterSnapshot>>(
      fleet_ ? fleet_->Snapshot(now_ms) : std::vector<placement::ClusterSnapshot>{});
}

void ApiService::JobPlacement(http::Request req, Respond respond) {
  auto job = AuthorizedJob(req, respond);
  if (!job) return;
  const std::string& ns = job->ns;
  auto spec = SpecOfRecord(*job);
  if (!spec.ok()) {
    spdlog::error("job {}/{}: stored spec unreadable: {}", ns, job->name, spec.status().message());
    respond(K8sStatus(500, "InternalError", "the stored job cannot be read; see the gantry log"));
    return;
  }
  int64_t now = clock_.NowMillis();
  placement::Decision decision = placement::Place(DemandFromSpec(*spec), *PlacementSnapshots(now), options_.placement);
  nlohmann::json body = placement::DecisionToJson(decision);
  body["apiVersion"] = "gantry.dev/v1";
  body["kind"] = "PlacementDecision";
  body["job"] = ns + "/" + job->name;
  body["jobPhase"] = std::string(JobPhaseName(job->phase));  // placement's verdict is for a dispatch now
  body["decidedAt"] = FormatRfc3339(now);
  body["maxCopies"] = options_.placement.max_copies;  // the most candidates (copies) a job has at once
  // A cluster the engine leaves out of this job's dispatches is no candidate.
  auto leave_out = [&body](nlohmann::json& cluster) {
    if (cluster.contains("selected")) cluster["selected"] = false;
    if (!body["candidates"].is_array()) return;
    auto& cands = body["candidates"];
    const std::string name = cluster.value("name", "");
    for (auto it = cands.begin(); it != cands.end();) {
      it = it->is_string() && it->get<std::string>() == name ? cands.erase(it) : it + 1;
    }
  };
  // One that keeps gantry from listing the job's kind (a JobSet CRD or its
  // RBAC missing there): the engine cannot see a run of it there, so it
  // sends it none. Why is the cluster's to tell (its watchRefused).
  if (options_.kind_refused) {
    const std::string api_version = spec->template_object.value("apiVersion", "");
    const std::string kind = spec->template_object.value("kind", "");
    for (nlohmann::json& c : body["clusters"]) {
      const std::string resource = options_.kind_refused(c.value("name", ""), api_version, kind);
      if (resource.empty()) continue;
      c["kindRefused"] = {{"resource", resource},
                          {"message", fmt::format("the cluster keeps gantry from listing {}, so no {} is sent "
                                                  "there (gantry clusters {} says why)",
                                                  resource, kind, c.value("name", ""))}};
      leave_out(c);
    }
  }
  // The cluster of that name in the answer, or null.
  auto named = [&body](const std::string& name) -> nlohmann::json* {
    for (nlohmann::json& c : body["clusters"]) {
      if (c.value("name", "") == name) return &c;
    }
    return nullptr;
  };
  // The job's owner (its lease), which a verdict of now does not move. One
  // outside the inventory is in no row: said here, or the verdict would
  // read as if nothing held the job but quota.
  if (!job->cluster.empty()) {
    nlohmann::json owner = {{"name", job->cluster}};
    if (!named(job->cluster)) {
      const auto missing = options_.owners_missing ? options_.owners_missing() : std::map<std::string, int>{};
      owner["inInventory"] = false;
      owner["message"] = missing.count(job->cluster)
                             ? "not in the inventory gantry started with (its file in clusters.d missing?): the "
                               "job is held as it is (OwnerHeld) until the cluster is back, or a reload confirms "
                               "its removal and the job gets its onClusterLoss"
                             : "not in the inventory: the job waits as its status says until the cluster is back";
    }
    body["owner"] = std::move(owner);
  }
  // Placement knows clusters, not this job's history: what the job's rows
  // say of each (below) is told beside, as the engine's passes see it.
  auto intents = store_.Intents(job->uid);
  if (!intents.ok()) {
    respond(JsonAnswer(body));
    return;
  }
  // One where an earlier run of the job may still be (its delete not seen
  // done): no copy goes there until it is, since that run would take it.
  if (options_.earlier_runs_in && !IsFinal(job->phase)) {
    for (const std::string& name : options_.earlier_runs_in(*job, *intents)) {
      nlohmann::json* c = named(name);
      if (!c) continue;
      (*c)["earlierRun"] = {{"message", "an earlier run of the job there is not seen deleted yet: no copy goes there "
                                        "until it is, since that run would take the copy and start again"}};
      leave_out(*c);
    }
  }
  // Where the job's dispatch already put a Workload copy of its epoch: the
  // verdict of now (which counts that copy among the cluster's pending
  // work) is not what chose it.
  for (const RemoteIntent& i : *intents) {
    if (!i.present || i.kind != dispatch::kWorkload || i.epoch != job->epoch) continue;
    nlohmann::json* c = named(i.cluster);
    if (!c) continue;
    (*c)["copy"] = true;
    // Whether it may preempt lower-priority work there yet: gates open one
    // cluster at a time (decide_nominating.cc, Gates), so that the job does
    // not evict work in every cluster at once.
    if (options_.preemption_gate_ms <= 0 || job->phase != JobPhase::kNominating) continue;
    // Copies carry a gate only in clusters that serve Kueue's v1beta2
    // (remote_objects.cc); elsewhere nothing holds them back.
    const auto view = fleet_ ? fleet_->Cluster(i.cluster) : std::nullopt;
    if (!view || view->config.kueue_api_version != inventory::KueueApiVersion::kV1beta2) continue;
    if (!i.gate_refusal.empty()) {
      (*c)["preemptionGate"] = {{"open", false},
                                {"refusal", i.gate_refusal},
                                {"message", "the cluster refused gantry the gate's patch: " + i.gate_refusal}};
    } else if (i.gate_opened_ms > 0) {
      (*c)["preemptionGate"] = {{"open", true}, {"openedAt", FormatRfc3339(i.gate_opened_ms)}};
    } else {
      (*c)["preemptionGate"] = {
          {"open", false},
          {"message", fmt::format("its copy may not preempt other workloads there yet: gantry opens one "
                                  "cluster's gate at a time, preemptionGateSeconds ({} s) apart, the first that "
                                  "long after the job's nomination, and none while a copy holds quota",
                                  options_.preemption_gate_ms / 1000)}};
    }
  }
  // A cluster that refused the job's real job, or that failed every create
  // of it (its row kept while the engine leaves that cluster out of the
  // job's dispatches, jobRefusalHoldSeconds), is no candidate meanwhile
  // (Ladder::JobRefusalIn).
  for (const RemoteIntent& i : *intents) {
    if (!dispatch::HoldsClusterOut(i, job->phase, now, options_.job_refusal_hold_ms)) continue;
    nlohmann::json* c = named(i.cluster);
    if (!c) continue;
    (*c)[i.hold.empty() ? "refusedJob" : "heldOut"] = {
        {"message", dispatch::HeldOutWhy(i)},
        {"time", FormatRfc3339(i.updated_ms)},
        {"until", FormatRfc3339(i.updated_ms + options_.job_refusal_hold_ms)}};
    leave_out(*c);
  }
  respond(JsonAnswer(body));
}

}  // namespace gantry::api
