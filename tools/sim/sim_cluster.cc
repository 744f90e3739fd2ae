#include "sim_cluster.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "kube_errors.h"
#include "resources.h"

namespace gantry::sim {


namespace {
// The Status reason the API server gives with an HTTP error code.
const char* ReasonOfCode(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "InternalError";
  }
}
}  // namespace

SimCluster::SimCluster(ClusterConfig config, Journal* journal, const Clock* clock)
    : state_(std::move(config), journal, clock), api_(&state_), clock_(clock), rng_(std::random_device{}()) {
  faults_.latency_ms = state_.config().api_latency_ms;
  port_ = state_.config().port;
}

SimCluster::~SimCluster() { Shutdown(); }

std::string SimCluster::server_url() const { return fmt::format("https://127.0.0.1:{}", port_); }

Status SimCluster::Start() {
  auto certs = MakeClusterCerts(name());
  if (!certs.ok()) return certs.status();
  certs_ = std::move(*certs);
  token_ = MakeToken();
  std::lock_guard lock(server_mu_);
  return StartServerLocked();
}

Status SimCluster::StartServerLocked() {
  if (server_) return Status::Ok();
  http::ServerOptions opts;
  opts.address = "127.0.0.1";
  opts.port = port_;
  opts.tls = http::TlsServerOptions{certs_.cert_pem, certs_.key_pem};
  opts.server_name = "gantry-sim";
  opts.idle_timeout = std::chrono::minutes(5);
  // kube-apiserver's request body limit (MaxRequestBodyBytes, 3 MiB by
  // default). A real cluster's etcd also refuses an object over about
  // 1.5 MiB, which gantry-sim does not model.
  opts.body_limit = 3 * 1024 * 1024;
  opts.error_response = [](int status, std::string message) {
    return KubeError(status, status >= 500 ? "InternalError" : "BadRequest", message);
  };
  auto server = std::make_unique<http::Server>(
      std::move(opts), [this](http::Request req, http::Responder respond) { Handle(std::move(req), std::move(respond)); });
  GANTRY_RETURN_IF_ERROR(server->Start());
  port_ = server->port();
  server_ = std::move(server);
  return Status::Ok();
}

void SimCluster::StopServerLocked() {
  if (!server_) return;
  // Responders post to the server's io_context: answer them all before it goes.
  std::vector<http::Responder> stalled;
  std::deque<Deferred> deferred;
  {
    std::lock_guard lock(fault_mu_);
    stalled.swap(stalled_);
    deferred.swap(deferred_);
  }
  for (auto& r : stalled) r(KubeError(503, "ServiceUnavailable", "the apiserver is stopping"));
  for (auto& d : deferred) d.respond(std::move(d.response));
  server_->Stop(std::chrono::milliseconds(0));
  server_.reset();
}

void SimCluster::Shutdown() {
  state_.KillWatches();
  std::lock_guard lock(server_mu_);
  StopServerLocked();
}

namespace {

// The verbs as ForbidVerb names them, which faults set per verb accept; a
// typo would never fire.
const std::set<std::string> kFaultVerbs = {"create", "update", "delete", "get", "list"};

// The verbs `forbid` names, coarser than RBAC's: update for a PATCH too,
// list for a watch too, delete for a whole collection too.
std::string ForbidVerb(const RequestAttributes& a) {
  // (kFaultVerbs lists what this returns for the requests gantry sends.)
  if (a.verb == "create" || a.verb == "get" || a.verb == "list" || a.verb == "update") return a.verb;
  if (a.verb == "patch") return "update";
  if (a.verb == "watch") return "list";
  if (a.verb == "delete" || a.verb == "deletecollection") return "delete";
  return a.verb;
}

}  // namespace

void SimCluster::Handle(http::Request req, http::Responder respond) {
  // Every answer says when it was made, as an API server's do (RFC 9110
  // asks a server with a clock to): gantry reads the cluster's clock from it.
  respond = [respond = std::move(respond), clock = clock_](http::Response r) {
    // Formatted once a second per thread: every answer carries one.
    thread_local int64_t second = -1;
    thread_local std::string date;
    if (const int64_t now = clock->NowMillis() / 1000; now != second) {
      second = now;
      date = FormatHttpDate(now * 1000);
    }
    r.headers.emplace_back("Date", date);
    respond(std::move(r));
  };
  int64_t delay = 0;
  bool lose = false;
  {
    std::lock_guard lock(fault_mu_);
    // Cut off: no answer at all, not even a refusal, as on a real network.
    if (faults_.partition_mode == 2) {
      stalled_.push_back(std::move(respond));
      return;
    }
    if (req.Header("authorization") != "Bearer " + token_) {
      respond(KubeError(401, "Unauthorized", "Unauthorized"));
      return;
    }
    // What RBAC would judge of the request, read once, and only when some
    // fault needs it.
    const bool judged = !faults_.failing.empty() || !faults_.forbidden.empty() || faults_.rbac ||
                        !faults_.error_verbs.empty() || !faults_.lose_answer.empty() ||
                        !faults_.latency_verbs.empty();
    const RequestAttributes a = judged ? AttributesOf(req) : RequestAttributes{};
    const std::string resource = a.resource.substr(0, a.resource.find('/'));  // "workloads" of "workloads/status"
    // RESOURCE fails every verb (a broken conversion webhook), RESOURCE:VERB
    // only that one (an admission webhook that fails, or times out, on creates).
    auto failing = faults_.failing.find(resource);
    if (failing == faults_.failing.end() && !faults_.failing.empty()) {
      failing = faults_.failing.find(resource + ":" + ForbidVerb(a));
    }
    if (failing != faults_.failing.end()) {
      respond(KubeError(failing->second, ReasonOfCode(failing->second),
                        fmt::format("injected fault for {} (gantry-sim)", failing->first)));
      return;
    }
    if (!faults_.forbidden.empty()) {
      // RESOURCE forbids every verb, RESOURCE:VERB only that one.
      const std::string verb = ForbidVerb(a);
      if (faults_.forbidden.count(resource) || faults_.forbidden.count(resource + ":" + verb)) {
        respond(KubeError(403, "Forbidden",
                          fmt::format("{} is forbidden: User \"gantry\" cannot {} resource \"{}\" (gantry-sim)",
                                      resource, verb, resource)));
        return;
      }
    }
    if (faults_.rbac && !faults_.rbac->Allows(a)) {
      respond(KubeError(403, "Forbidden", Rbac::Refusal(a)));
      return;
    }
    if (faults_.error_fraction > 0 && !faults_.error_codes.empty() &&
        (faults_.error_verbs.empty() || faults_.error_verbs.count(a.verb)) &&
        std::uniform_real_distribution<double>(0, 1)(rng_) < faults_.error_fraction) {
      int code = faults_.error_codes[rng_() % faults_.error_codes.size()];
      http::Response r = KubeError(code, code == 429 ? "TooManyRequests" : code == 503 ? "ServiceUnavailable" : "InternalError",
                                   "injected fault (gantry-sim)");
      if (code == 429 || code == 503) r.headers.emplace_back("Retry-After", "1");
      respond(std::move(r));
      return;
    }
    if (faults_.latency_verbs.empty() || faults_.latency_verbs.count(ForbidVerb(a))) delay = faults_.latency_ms;
    if (!faults_.lose_answer.empty() && faults_.lose_answer == resource + ":" + ForbidVerb(a)) {
      faults_.lose_answer.clear();
      lose = true;
    }
  }
  if (lose) {
    // The apiserver stalls as it carries the request out: its watch events
    // and its answer are held back.
    state_.HoldWatches(true);
    (void)api_.Handle(req);
    // (A heal between the two leaves this answer to the next heal; the
    // client's own deadline ends its wait.)
    std::lock_guard lock(fault_mu_);
    stalled_.push_back(std::move(respond));
    return;
  }
  http::Response resp = api_.Handle(req);
  if (delay > 0 && !resp.stream) {
    std::lock_guard lock(fault_mu_);
    deferred_.push_back({clock_->NowMillis() + delay, std::move(respond), std::move(resp)});
    return;
  }
  respond(std::move(resp));
}

void SimCluster::Tick() {
  state_.Tick();
  std::vector<Deferred> due;
  {
    std::lock_guard lock(fault_mu_);
    int64_t now = clock_->NowMillis();
    // Latency is constant per cluster, so deferred_ is ordered by due time.
    while (!deferred_.empty() && deferred_.front().due_ms <= now) {
      due.push_back(std::move(deferred_.front()));
      deferred_.pop_front();
    }
  }
  for (Deferred& d : due) d.respond(std::move(d.response));
}

Status SimCluster::StopApiserver() {
  {
    std::lock_guard lock(fault_mu_);
    faults_.apiserver_stopped = true;
  }
  state_.KillWatches();
  std::lock_guard lock(server_mu_);
  StopServerLocked();
  return Status::Ok();
}

Status SimCluster::StartApiserver() {
  {
    std::lock_guard lock(fault_mu_);
    faults_.apiserver_stopped = false;
    if (faults_.partition_mode == 1) return Status::Ok();  // stays down until heal
  }
  std::lock_guard lock(server_mu_);
  return StartServerLocked();
}

Status SimCluster::Partition(int mode) {
  if (mode != 1 && mode != 2) return Status::Invalid("partition mode must be 1 (down) or 2 (daemon cut off)");
  {
    std::lock_guard lock(fault_mu_);
    faults_.partition_mode = mode;
  }
  state_.KillWatches();
  if (mode == 1) {
    std::lock_guard lock(server_mu_);
    StopServerLocked();
  }
  return Status::Ok();
}

Status SimCluster::Heal() {
  std::vector<http::Responder> stalled;
  bool start = false;
  {
    std::lock_guard lock(fault_mu_);
    start = !faults_.apiserver_stopped;
    faults_.partition_mode = 0;
    stalled.swap(stalled_);
  }
  for (auto& r : stalled) r(KubeError(503, "ServiceUnavailable", "the cluster was unreachable (partition healed)"));
  if (!start) return Status::Ok();
  std::lock_guard lock(server_mu_);
  return StartServerLocked();
}

Status SimCluster::SetLatency(int64_t ms, std::set<std::string> verbs) {
  for (const std::string& v : verbs) {
    if (!kFaultVerbs.count(v)) {
      return Status::Invalid(fmt::format("latency: unknown verb {} (create, delete, update, get, list)", v));
    }
  }
  std::lock_guard lock(fault_mu_);
  faults_.latency_ms = std::max<int64_t>(0, ms);
  faults_.latency_verbs = std::move(verbs);
  return Status::Ok();
}

Status SimCluster::SetErrors(double fraction, std::vector<int> codes, std::set<std::string> verbs) {
  if (fraction < 0 || fraction > 1) return Status::Invalid("error fraction must be within [0, 1]");
  for (int c : codes) {
    if (c < 400 || c > 599) return Status::Invalid(fmt::format("error code {} is not an HTTP error", c));
  }
  std::lock_guard lock(fault_mu_);
  faults_.error_fraction = fraction;
  if (!codes.empty()) faults_.error_codes = std::move(codes);
  faults_.error_verbs = std::move(verbs);
  return Status::Ok();
}

Status SimCluster::SetForbidden(std::set<std::string> resources) {
  std::set<std::string> forbidden;
  std::map<std::string, int> failing;
  for (const std::string& entry : resources) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      forbidden.insert(entry);
      continue;
    }
    int code = 0;
    const std::string text = entry.substr(eq + 1);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), code);
    if (ec != std::errc() || end != text.data() + text.size() || code < 400 || code > 599) {
      return Status::Invalid(fmt::format("{}: the code is not an HTTP error", entry));
    }
    if (const std::size_t colon = entry.find(':'); colon < eq && !kFaultVerbs.count(entry.substr(colon + 1, eq - colon - 1))) {
      return Status::Invalid(fmt::format("{}: want RESOURCE=CODE or RESOURCE:VERB=CODE, VERB one of create, update, "
                                         "delete, get, list",
                                         entry));
    }
    failing[entry.substr(0, eq)] = code;
  }
  std::lock_guard lock(fault_mu_);
  faults_.forbidden = std::move(forbidden);
  faults_.failing = std::move(failing);
  return Status::Ok();
}

std::size_t SimCluster::answers_held() {
  std::lock_guard lock(fault_mu_);
  return stalled_.size();
}

Status SimCluster::SetLoseAnswer(std::string request) {
  if (!request.empty()) {
    const std::size_t colon = request.find(':');
    if (colon == std::string::npos || colon == 0 || !kFaultVerbs.count(request.substr(colon + 1))) {
      return Status::Invalid(
          fmt::format("{}: want RESOURCE:VERB, VERB one of create, update, delete, get, list (e.g. jobs:create)",
                      request));
    }
    const std::string plural = request.substr(0, colon);
    if (std::none_of(AllResources().begin(), AllResources().end(),
                     [&](const ResourceInfo& r) { return r.plural == plural; })) {
      return Status::Invalid(fmt::format("{}: no resource {} here", request, plural));
    }
  }
  std::lock_guard lock(fault_mu_);
  faults_.lose_answer = std::move(request);
  return Status::Ok();
}

Status SimCluster::SetRbac(const std::string& yaml_text) {
  std::shared_ptr<const Rbac> rbac;
  if (!yaml_text.empty()) {
    auto parsed = Rbac::Parse(yaml_text);
    if (!parsed.ok()) return parsed.status();
    rbac = std::make_shared<const Rbac>(std::move(*parsed));
  }
  std::lock_guard lock(fault_mu_);
  faults_.rbac = std::move(rbac);
  return Status::Ok();
}

FaultSettings SimCluster::faults() {
  std::lock_guard lock(fault_mu_);
  return faults_;
}

}  // namespace gantry::sim
