#include "gantry/api/api_service.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "gantry/api/k8s_status.h"
#include "jobs_gauge.h"
#include "slow_lane.h"

namespace gantry::api {
namespace {

// Room on the admin lane for a job count and a reload waiting, with some to spare.
constexpr std::size_t kAdminLaneCapacity = 4;

}  // namespace

ApiService::ApiService(JobStore& store, TokenAuth& auth, ApiMetrics& metrics, dispatch::JobIntake* intake,
                       const Clock& clock, ApiOptions options, inventory::Fleet* fleet)
    : store_(store),
      auth_(auth),
      metrics_(metrics),
      intake_(intake),
      clock_(clock),
      options_(options),
      fleet_(fleet),
      slow_lane_(std::make_unique<SlowLane>(options_.slow_lane_capacity, "api-slow")),
      // At most a count and a reload wait there (jobs_gauge.h, ReloadClusters): never full.
      admin_lane_(std::make_unique<SlowLane>(kAdminLaneCapacity, "api-admin")) {
  jobs_gauge_ = std::make_unique<JobsGauge>(store_, metrics_, clock_, *admin_lane_, options_.jobs_count_refresh_ms);
  auto bind = [this](void (ApiService::*fn)(http::Request, Respond)) {
    return [this, fn](http::Request req, Respond respond) { (this->*fn)(std::move(req), std::move(respond)); };
  };
  router_.Add("POST", "/api/v1/namespaces/{ns}/jobs", bind(&ApiService::Submit));
  router_.Add("GET", "/api/v1/namespaces/{ns}/jobs", bind(&ApiService::ListJobs));
  router_.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}", bind(&ApiService::GetJob));
  router_.Add("DELETE", "/api/v1/namespaces/{ns}/jobs/{name}", bind(&ApiService::CancelJob));
  router_.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}/events", bind(&ApiService::JobEvents));
  router_.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}/remoteobjects", bind(&ApiService::JobRemoteObjects));
  router_.Add("GET", "/api/v1/jobs", bind(&ApiService::ListJobs));
  router_.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}/placement", bind(&ApiService::JobPlacement));
  router_.Add("GET", "/api/v1/clusters", bind(&ApiService::ListClusters));
  router_.Add("GET", "/api/v1/clusters/{name}", bind(&ApiService::GetCluster));
  router_.Add("POST", "/api/v1/clusters:reload", bind(&ApiService::ReloadClusters));
  router_.Add("GET", "/healthz", bind(&ApiService::Healthz));
  router_.Add("GET", "/readyz", bind(&ApiService::Readyz));
  router_.Add("GET", "/metrics", bind(&ApiService::Metrics));
}

ApiService::~ApiService() = default;

void ApiService::StopSlowLane() {
  slow_lane_->Stop();
  admin_lane_->Stop();
}

http::Handler ApiService::Handler() {
  return [this](http::Request req, Respond respond) { Dispatch(std::move(req), std::move(respond)); };
}

void ApiService::Dispatch(http::Request req, Respond respond) {
  auto match = router_.Find(req.method, req.RawPath());
  std::string route = match.status != 404 ? match.pattern : "unmatched";  // a 405 too: it matched a route
  auto start = std::chrono::steady_clock::now();
  // Wrap the responder so every answer is counted and (at debug) logged once.
  // The target as sent (the parser takes only visible characters there),
  // not the decoded path, whose %0a would start a line of its own in the log.
  Respond counted = [this, respond = std::move(respond), route, method = req.method, path = req.target,
                     remote = req.remote_address, start](http::Response res) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_.ObserveRequest(method, route, res.status, seconds);
    spdlog::debug("{} {} {} {:.2f}ms from {}", method, path, res.status, seconds * 1000, remote);
    respond(std::move(res));
  };
  if (match.status == 404) {
    counted(K8sStatus(404, "NotFound", "no route for " + req.path));
    return;
  }
  if (match.status == 405) {
    auto res = K8sStatus(405, "MethodNotAllowed", req.method + " is not allowed on " + req.path);
    res.headers.emplace_back("Allow", match.allow);
    counted(std::move(res));
    return;
  }
  // One value each: which of two a handler read would be a guess (a
  // DELETE ?purge=false&purge=true cancelled the job).
  for (auto it = req.query.begin(); it != req.query.end(); it = req.query.upper_bound(it->first)) {
    if (req.query.count(it->first) > 1) {
      counted(K8sStatus(400, "BadRequest", "query parameter " + it->first + " is given more than once",
                        {{it->first, "given more than once"}}));
      return;
    }
  }
  req.path_params = std::move(match.params);
  try {
    (*match.handler)(std::move(req), std::move(counted));
  } catch (const std::exception& e) {
    // Handlers report expected failures as values; this is a bug.
    spdlog::error("handler for {} threw: {}", route, e.what());
  }
}

std::optional<Principal> ApiService::Authorize(const http::Request& req, const std::string* ns,
                                               const Respond& respond) {
  auto principal = auth_.Authenticate(req);
  if (!principal.ok()) {
    respond(K8sStatusFrom(principal.status()));
    return std::nullopt;
  }
  if (ns && !principal->MayUse(*ns)) {
    respond(K8sStatus(403, "Forbidden",
                      "subject " + principal->subject + " may not use namespace " + *ns));
    return std::nullopt;
  }
  return std::move(principal.value());
}

void ApiService::Healthz(http::Request, Respond respond) {
  respond(http::TextResponse(200, "ok\n"));
}

void ApiService::Readyz(http::Request, Respond respond) {
  if (!ready_) {
    respond(http::TextResponse(503, "not ready\n"));
    return;
  }
  // Every write refused until the store commits again: not ready for work,
  // though reads are served.
  if (std::string failing = metrics_.StoreFailing(); !failing.empty()) {
    respond(http::TextResponse(503, "store failing: " + failing + "\n"));
    return;
  }
  respond(http::TextResponse(200, "ok\n"));
}

void ApiService::Metrics(http::Request, Respond respond) {
  if (fleet_) {
    std::vector<inventory::ClusterView> clusters = fleet_->Clusters();
    std::map<std::string, int64_t> behind_since;
    if (options_.view_behind) {
      for (const auto& view : clusters) {
        ViewBehind b = options_.view_behind(view.config.name);
        if (!b.resources.empty()) behind_since[view.config.name] = b.since_ms;
      }
    }
    std::map<std::string, int> connections;
    if (options_.connections_limit) {
      for (const auto& view : clusters) connections[view.config.name] = options_.connections_limit(view.config.name);
    }
    std::map<std::string, int64_t> stalled;
    if (options_.requests_stalled_for_ms) {
      for (const auto& view : clusters) {
        if (const int64_t ms = options_.requests_stalled_for_ms(view.config.name); ms >= 0) {
          stalled[view.config.name] = ms;
        }
      }
    }
    metrics_.SetClusters(clusters, clock_.NowMillis(), behind_since, connections, stalled);
  }
  // The jobs by phase, counted at most jobsMetricSeconds before (jobs_gauge.h).
  jobs_gauge_->Scrape([this, respond = std::move(respond)](bool ready) {
    if (!ready) return respond(K8sStatus(503, "ServiceUnavailable", "gantry is shutting down"));
    respond(http::TextResponse(200, metrics_.Serialize(), "text/plain; version=0.0.4"));
  });
}

}  // namespace gantry::api
