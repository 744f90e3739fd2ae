// ApiService: gantry's REST API (/api/v1, /healthz, /readyz, /metrics).
//
// It validates input, writes intent to the store and wakes the reconciler; it
// never talks to clusters. Every route authenticates the caller (except the
// health and metrics endpoints) and checks namespace access. Every response
// is counted in ApiMetrics by method, route pattern and code.
//
// Thread-safety: the handler may be called from any server thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "gantry/api/api_metrics.h"
#include "gantry/api/job_view.h"
#include "gantry/api/token_auth.h"
#include "gantry/common/log_limiter.h"
#include "gantry/common/clock.h"
#include "gantry/dispatch/job_intake.h"
#include "gantry/http/message.h"
#include "gantry/http/router.h"
#include "gantry/inventory/fleet.h"
#include "gantry/job/job_document.h"
#include "gantry/placement/placement_options.h"
#include "gantry/store/job_store.h"

namespace gantry::api {

class JobsGauge;
class SlowLane;

// A cluster whose objects gantry's view may miss: the watched resources
// whose watch broke and whose relist has not succeeded yet (e.g.
// "workloads"), and since when (ms, the earliest). Empty when current.
struct ViewBehind {
  std::vector<std::string> resources;
  int64_t since_ms = 0;
};

struct ApiOptions {
  // Page size for GET /api/v1/jobs without ?limit.
  int default_list_limit = 500;
  // Largest ?limit accepted (bigger pages would hold the read connection too long).
  int max_list_limit = 5000;
  // A page of jobs also ends once they hold this much text (ListQuery::
  // max_bytes; the answer is about twice that): a few clients that ask for
  // pages of 1 MiB documents and never read them must not pin gigabytes.
  int64_t max_list_page_bytes = 4 << 20;
  // Capacity readings older than this are shown as stale (as the Fleet treats them).
  int64_t stale_after_ms = 30'000;
  // Called after POST /api/v1/clusters:reload re-read the inventory (the
  // dispatch engine re-aims its watches). Returns what else the reload did,
  // told beside the clusters it added and removed ("": nothing; the
  // engine's Engine::InventoryChanged). Optional.
  // removed: the clusters the reload removed (InventoryChange::removed).
  std::function<std::string(const std::vector<std::string>& removed)> after_reload;
  // Why a cluster keeps gantry from watching its objects ("" when it does
  // not): shown as status.watchRefused. Optional.
  std::function<std::string(const std::string& cluster)> watch_refused;
  // Since when (ms) it does (0: it does not, or not known): shown as
  // status.watchRefusedSince. Optional.
  std::function<int64_t(const std::string& cluster)> watch_refused_since;
  // The resource of a job's kind (its template's apiVersion and kind) when
  // the cluster keeps gantry from listing it, else "": such a cluster is no
  // candidate for the job (placement route, gantry explain). Optional.
  std::function<std::string(const std::string& cluster, const std::string& api_version, const std::string& kind)>
      kind_refused;
  // The clusters where an earlier run of the job may still be (seen, or its
  // delete not confirmed): the dispatch sends no copy there meanwhile, so
  // such a cluster is no candidate now (placement route). Optional.
  // (The job's rows, as the route read them.)
  std::function<std::vector<std::string>(const JobRecord& job, const std::vector<RemoteIntent>& intents)>
      earlier_runs_in;
  // Which of the cluster's watched resources gantry's view may miss changes
  // of, and since when: shown as status.viewBehind and viewBehindSince, and
  // as gantry_cluster_view_behind_seconds. Optional.
  std::function<ViewBehind(const std::string& cluster)> view_behind;
  // The owners of jobs the inventory lacked at the daemon's start, with
  // their job counts (dispatch::Engine::OwnersMissingSinceStart): those
  // still not in the inventory are listed as clusters of health Missing.
  // Optional.
  std::function<std::map<std::string, int>()> owners_missing;
  // The requests the dispatch engine allows in flight to the cluster now:
  // gantry_cluster_connections_limit. Optional.
  std::function<int(const std::string& cluster)> connections_limit;
  // For how long (ms) the dispatch engine's requests to the cluster have
  // gone unanswered (-1: they are answered; kube::ClientPool's stall):
  // status.requestsStalled and requestsStalledSince, and
  // gantry_cluster_requests_stalled_seconds. Optional.
  std::function<int64_t(const std::string& cluster)> requests_stalled_for_ms;
  // The fleet as the dispatch engine's placement sees it now (a job's
  // placement route, gantry explain, the submit's warning), shared, not
  // copied for each request; unset: the inventory's own snapshot.
  std::function<std::shared_ptr<const std::vector<placement::ClusterSnapshot>>(int64_t now_ms)> placement_snapshots;
  // How long the engine leaves a cluster that refused a job's real job, or
  // failed every create of it, out of that job's dispatches (jobRefusalHoldSeconds):
  // the placement route shows it left out, not a candidate, meanwhile.
  int64_t job_refusal_hold_ms = 600'000;
  // preemptionGateSeconds in ms (0: no gates): gantry explain says whether
  // the job's copy in a cluster may preempt there yet.
  int64_t preemption_gate_ms = 0;
  // What the engine's placement is told (maxCopies): a job's placement
  // route selects the clusters its dispatch would.
  placement::PlacementOptions placement;
  // A job document larger than this is parsed on a thread of its own (the
  // slow lane), not on the server's loop, which serves every connection;
  // at most slow_lane_capacity wait there (more get 429).
  std::size_t inline_parse_bytes = 32 << 10;
  std::size_t slow_lane_capacity = 8;
  // gantry_jobs{phase} is counted at most this often (ms), off the loop; a
  // scrape within this time of the last count shows its figures, a later
  // one waits for a new count (src/api/jobs_gauge.h). 15 s: a common scrape
  // interval; the count reads every job, so its time grows with the store.
  // 0: every scrape waits for a count (one at work, or its own).
  int64_t jobs_count_refresh_ms = 15'000;
};

class ApiService {
 public:
  // store, auth, metrics and clock must outlive the service. intake and
  // fleet may be null (no reconciler / no inventory).
  ApiService(JobStore& store, TokenAuth& auth, ApiMetrics& metrics, dispatch::JobIntake* intake,
             const Clock& clock, ApiOptions options = {}, inventory::Fleet* fleet = nullptr);
  ~ApiService();

  // The handler to give the HTTP server.
  http::Handler Handler();
  // Ends the lanes where large job documents are read and the operator's
  // work is done (reloads, the job count of /metrics): what waits there
  // gets 503. Called at shutdown once the server has stopped, before the
  // store and the engine stop.
  void StopSlowLane();
  // /readyz answers 200 only while ready (set after start-up, cleared at shutdown).
  void SetReady(bool ready) { ready_ = ready; }

 private:
  using Respond = http::Responder;
  void Dispatch(http::Request req, Respond respond);
  // Authenticates and checks the namespace; answers the error itself and
  // returns nullopt when the caller may not proceed.
  std::optional<Principal> Authorize(const http::Request& req, const std::string* ns,
                                     const Respond& respond);

  // Authorizes the caller for {ns} and reads job {ns}/{name}; answers the
  // error itself and returns nullopt when there is no job to work on.
  std::optional<JobRecord> AuthorizedJob(http::Request& req, const Respond& respond);
  // The clusters NotReady at their last probe, since the outage began
  // (job_view.h, OwnersOut): none without a fleet.
  OwnersOut OwnersOutNow() const;

  void Submit(http::Request req, Respond respond);
  // Submit's work once the caller may submit in a format gantry reads.
  void SubmitDocument(http::Request req, DocumentFormat format, Principal principal, Respond respond);
  // For a job no cluster of the inventory could ever run as a whole
  // (placement's verdict now): the warning its submission carries, naming
  // each cluster's reason; else "".
  std::string NeverPlaceable(const JobSpec& spec, int64_t now_ms) const;
  // The fleet as placement sees it now (the engine's, or the inventory's).
  std::shared_ptr<const std::vector<placement::ClusterSnapshot>> PlacementSnapshots(int64_t now_ms) const;
  // The same document again for an Unschedulable job: queued to be judged again.
  void Resubmitted(const JobRecord& job, std::vector<std::string> warnings, const Respond& respond);
  // The answer to a job's document submitted again (Resubmitted for an
  // Unschedulable job, else the stored job as it is).
  void AnswerExisting(const JobRecord& job, std::vector<std::string> warnings, const Respond& respond);
  void GetJob(http::Request req, Respond respond);
  void ListJobs(http::Request req, Respond respond);
  void CancelJob(http::Request req, Respond respond);
  void JobEvents(http::Request req, Respond respond);
  void JobRemoteObjects(http::Request req, Respond respond);
  // A cluster as the API shows it (cluster_view.h), with what only the engine knows.
  // admin: the messages that name files and kubeconfig entries in full.
  nlohmann::json ClusterJson(const inventory::ClusterView& view, int64_t now_ms, bool admin) const;
  // A cluster of OwnersMissingSinceStart, which owned `jobs` at the start.
  static nlohmann::json MissingClusterJson(const std::string& name, int jobs);
  void ListClusters(http::Request req, Respond respond);
  void GetCluster(http::Request req, Respond respond);
  void ReloadClusters(http::Request req, Respond respond);
  // One reload on the admin lane, for every request waiting (run false: the
  // lane stopped first).
  void ReloadForWaiting(bool run);
  void JobPlacement(http::Request req, Respond respond);
  void Healthz(http::Request req, Respond respond);
  void Readyz(http::Request req, Respond respond);
  void Metrics(http::Request req, Respond respond);

  JobStore& store_;
  TokenAuth& auth_;
  ApiMetrics& metrics_;
  dispatch::JobIntake* intake_;
  const Clock& clock_;
  ApiOptions options_;
  inventory::Fleet* fleet_;
  http::Router router_;
  std::atomic<bool> ready_{false};
  std::unique_ptr<JobsGauge> jobs_gauge_;
  // Reload requests not yet taken by a reload: all answered by the next
  // one to start, which reads the files as they are after each of them
  // came. So a reload is never refused for room, and a burst of them is
  // one reload.
  std::mutex reload_mu_;
  // A submission the store refused (a full disk refuses every one), logged
  // at most every 10 s with how many more were.
  LogLimiter submit_failed_log_;
  std::vector<Respond> reloads_waiting_;  // GUARDED_BY(reload_mu_)
  // Last: destroyed first, so that work still queued answers while the rest
  // is whole. Job documents over inline_parse_bytes are read on slow_lane_;
  // the operator's work runs on admin_lane_, which submitters cannot fill:
  // a reload is neither refused nor held up by a burst of large submissions.
  std::unique_ptr<SlowLane> slow_lane_;
  std::unique_ptr<SlowLane> admin_lane_;
};

}  // namespace gantry::api
