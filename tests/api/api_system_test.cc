// Health, metrics, auth and tenant isolation, and connection-level limits.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "api_fixture.h"
#include "gantry/api/api_metrics.h"

namespace gantry::testing {

TEST_CASE("the fleet's gauges follow the inventory, and a removed cluster leaves no series", "[api][metrics]") {
  api::ApiMetrics metrics;
  inventory::ClusterView c1;
  c1.config.name = "c1";
  c1.health.OnProbeOk(1'000'000);
  c1.capacity = inventory::CapacityReading{};
  c1.capacity->quota["nvidia.com/gpu"] = {32'000, 8'000};
  c1.capacity->quota["memory"] = {int64_t{1} << 40, 0};  // milli-bytes
  c1.capacity->pending_workloads = 3;
  c1.capacity_at_ms = 1'000'000;
  inventory::ClusterView c2;
  c2.config.name = "c2";
  c2.config.cordoned = true;
  c2.config.declared_lost = true;
  c1.capacity_error = "listing ClusterQueues is forbidden (403)";
  c2.health.OnProbeFailed(1'000'000, "connect: connection refused");
  inventory::ClusterView c3;
  c3.config.name = "c3";
  c3.health.OnProbeRefused(1'000'000, "/readyz answered 401");
  // Held for its refused file, Ready as last seen before: not usable.
  inventory::ClusterView c4;
  c4.config.name = "c4";
  c4.health.OnProbeOk(1'000'000);
  c4.config_error = "cluster file c4.yaml refused: clusters.d/c4.yaml: line 4: gpuz: unknown field";

  metrics.SetClusters({c1, c2, c3, c4}, 1'090'000);
  const std::string text = metrics.Serialize();
  for (const char* line : {
           R"(gantry_cluster_ready{cluster="c1"} 1)",
           R"(gantry_cluster_ready{cluster="c2"} 0)",
           R"(gantry_cluster_ready{cluster="c3"} 0)",
           R"(gantry_cluster_ready{cluster="c4"} 0)",
           R"(gantry_cluster_credentials_refused{cluster="c3"} 1)",
           R"(gantry_cluster_credentials_refused{cluster="c2"} 0)",
           R"(gantry_cluster_outage_seconds{cluster="c2"} 90)",
           R"(gantry_cluster_outage_seconds{cluster="c3"} 90)",  // a refusal is an outage, with its own timeout
           R"(gantry_cluster_cordoned{cluster="c2"} 1)",
           R"(gantry_cluster_declared_lost{cluster="c2"} 1)",
           R"(gantry_cluster_declared_lost{cluster="c1"} 0)",
           R"(gantry_cluster_capacity_unreadable{cluster="c1"} 1)",
           R"(gantry_cluster_capacity_unreadable{cluster="c2"} 0)",
           R"(gantry_cluster_quota{cluster="c1",resource="nvidia.com/gpu"} 32)",
           R"(gantry_cluster_quota_reserved{cluster="c1",resource="nvidia.com/gpu"} 8)",
           R"(gantry_cluster_quota{cluster="c1",resource="memory"} 1099511627.776)",
           R"(gantry_cluster_pending_workloads{cluster="c1"} 3)",
           R"(gantry_cluster_capacity_age_seconds{cluster="c1"} 90)",
           "# TYPE gantry_cluster_ready gauge",
       }) {
    INFO(line);
    CHECK_THAT(text, Catch::Contains(line));
  }
  CHECK_THAT(text, !Catch::Contains(R"(gantry_cluster_quota{cluster="c2")"));  // never read

  metrics.SetClusters({c1}, 1'090'000);  // c2, c3 and c4 removed from clusters.d
  const std::string after = metrics.Serialize();
  CHECK_THAT(after, Catch::Contains(R"(gantry_cluster_ready{cluster="c1"} 1)"));
  CHECK_THAT(after, !Catch::Contains(R"(cluster="c2")"));
  CHECK_THAT(after, !Catch::Contains(R"(cluster="c3")"));
  CHECK_THAT(after, !Catch::Contains(R"(cluster="c4")"));
}

TEST_CASE("readiness: 503 while the store's commits fail, ready again once one succeeds", "[api]") {
  ApiFixture api;
  REQUIRE(api.Call("GET", "/readyz", "", "").status == 200);
  api.metrics().ObserveCommitFailure("sqlite gantry.db: COMMIT: database or disk is full");
  auto failing = api.Call("GET", "/readyz", "", "");
  CHECK(failing.status == 503);
  CHECK_THAT(failing.body, Catch::Contains("disk is full"));
  CHECK_THAT(api.Call("GET", "/metrics", "", "").body, Catch::Contains("gantry_store_commit_failures_total 1"));
  CHECK(api.Call("GET", "/healthz", "", "").status == 200);  // alive, not ready
  // A submit commits: the store works again.
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("after")).status == 201);
  CHECK(api.Call("GET", "/readyz", "", "").status == 200);
}

TEST_CASE("health, readiness and metrics", "[api]") {
  ApiFixture api;
  CHECK(api.Call("GET", "/healthz", "", "").status == 200);
  CHECK(api.Call("GET", "/readyz", "", "").status == 200);
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("m1")).status == 201);
  auto metrics = api.Call("GET", "/metrics", "", "");
  CHECK(metrics.status == 200);
  CHECK(metrics.headers["content-type"].find("text/plain") == 0);
  CHECK(metrics.body.find("gantry_jobs{phase=\"Queued\"} 1") != std::string::npos);
  CHECK(metrics.body.find("gantry_http_requests_total{code=\"201\",method=\"POST\",route=\"/api/v1/namespaces/{ns}/jobs\"} 1") !=
        std::string::npos);
  CHECK(metrics.body.find("gantry_http_request_duration_seconds_bucket") != std::string::npos);
  CHECK(metrics.body.find("gantry_store_commit_duration_seconds_count") != std::string::npos);
  // The submission was fsync'd: no commit so far went without.
  CHECK(metrics.body.find("gantry_store_commits_total{fsync=\"false\"} 0") != std::string::npos);
  CHECK(metrics.body.find("gantry_store_commits_total{fsync=\"true\"} 0") == std::string::npos);
  auto clusters = api.Call("GET", "/api/v1/clusters");
  CHECK(clusters.status == 200);
  CHECK(api.Json(clusters)["items"].empty());
}

TEST_CASE("a reload whose new cluster's kubeconfig does not load says so (422), naming the cluster", "[api]") {
  ApiFixtureOptions options;
  options.with_fleet = true;
  ApiFixture api(options);
  // insecure-skip-tls-verify without the file's allowInsecure: refused.
  WriteFile(api.clusters_dir() + "/../x.kubeconfig", R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-real-token-123}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  WriteFile(api.clusters_dir() + "/x.yaml", "name: x-insecure\nkubeconfig: ../x.kubeconfig\nregion: eu-central-1\n");
  auto reload = api.Call("POST", "/api/v1/clusters:reload");
  INFO(reload.body);
  CHECK(reload.status == 422);  // it said 200 "inventory reloaded: added x-insecure"
  const nlohmann::json body = api.Json(reload);
  CHECK_THAT(body.value("message", ""), Catch::StartsWith("some clusters' credentials do not load; the others are "
                                                          "in use; added x-insecure"));
  REQUIRE(body["details"]["causes"].size() == 1);
  CHECK(body["details"]["causes"][0]["field"] == "x-insecure");
  CHECK_THAT(body["details"]["causes"][0].value("message", ""), Catch::StartsWith("its credentials do not load: "));
  CHECK(body.dump().find("not-a-real-token-123") == std::string::npos);
  // Reloaded again with it as it was: told once, not at every reload (a
  // script's reload is not failed while gantry clusters shows it).
  auto again = api.Call("POST", "/api/v1/clusters:reload");
  CHECK(again.status == 200);
}

TEST_CASE("a tenant token reads a cluster's health, not its error messages, which name the operator's files",
          "[api][auth]") {
  ApiFixtureOptions options;
  options.with_fleet = true;
  // The engine's words too: a refusal names gantry's identity there.
  options.watch_refused = [](const std::string&) {
    return std::string("jobs is forbidden: User \"system:serviceaccount:gantry:dispatcher\" cannot list");
  };
  ApiFixture api(options);
  WriteFile(api.clusters_dir() + "/c1.yaml", "name: c1\nkubeconfig: /etc/secret-place/c1.kubeconfig\nregion: [\n");
  REQUIRE(api.Call("POST", "/api/v1/clusters:reload").status == 422);
  for (const std::string target : {"/api/v1/clusters", "/api/v1/clusters/c1"}) {
    INFO(target);
    auto as_admin = api.Call("GET", target);
    REQUIRE(as_admin.status == 200);
    INFO(as_admin.body);
    CHECK(as_admin.body.find("cluster file c1.yaml refused: line 4") != std::string::npos);
    auto as_tenant = api.Call("GET", target, "", kTeamAToken);
    REQUIRE(as_tenant.status == 200);
    CHECK(as_tenant.body.find("c1.yaml") == std::string::npos);
    CHECK(as_admin.body.find("serviceaccount:gantry") != std::string::npos);
    CHECK(as_tenant.body.find("serviceaccount:gantry") == std::string::npos);
    CHECK(as_tenant.body.find("withheld from tenant tokens") != std::string::npos);
    CHECK(as_tenant.body.find("\"configError\"") != std::string::npos);  // what is wrong, not why
  }
}

TEST_CASE("a token's maxPriority caps its jobs' priority and the WorkloadPriorityClass they may name",
          "[api][auth]") {
  ApiFixture api;
  auto post = [&](const std::string& doc, const char* token) {
    return api.Call("POST", "/api/v1/namespaces/team-a/jobs", doc, token);
  };
  CHECK(post(JobDoc("at-cap", "team-a", 10), kCappedToken).status == 201);
  auto over = post(JobDoc("over-cap", "team-a", 11), kCappedToken);
  CHECK(over.status == 403);
  CHECK(over.body.find("spec.priority: 11 is above this token's maxPriority, 10") != std::string::npos);
  CHECK(post(JobDoc("uncapped", "team-a", 1000), kTeamAToken).status == 201);  // another token: no cap
  auto with_class = [](const std::string& name, const std::string& cls) {
    nlohmann::json doc = nlohmann::json::parse(JobDoc(name));
    doc["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = cls;
    return doc.dump();
  };
  CHECK(post(with_class("low-class", "batch-low"), kCappedToken).status == 201);
  auto high = post(with_class("high-class", "prod-high"), kCappedToken);
  CHECK(high.status == 403);
  CHECK(high.body.find("spec.template.metadata.labels[kueue.x-k8s.io/priority-class]") != std::string::npos);
  CHECK(high.body.find("not among this token's priorityClasses (batch-low)") != std::string::npos);
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/over-cap").status == 404);  // nothing stored
  // The pods' own priority: kube-scheduler preempts by it, whatever Kueue admitted.
  nlohmann::json pod_class = nlohmann::json::parse(JobDoc("pod-class"));
  pod_class["spec"]["template"]["spec"]["template"]["spec"]["priorityClassName"] = "system-cluster-critical";
  auto pods = post(pod_class.dump(), kCappedToken);
  CHECK(pods.status == 403);
  CHECK(pods.body.find("priorityClassName is set") != std::string::npos);
  // A manifest submitted as it is: its priority is an annotation, and named so.
  nlohmann::json manifest = nlohmann::json::parse(JobDoc("manifest"))["spec"]["template"];
  manifest["metadata"] = {{"name", "manifest"},
                          {"labels", {{"kueue.x-k8s.io/queue-name", "team-a"}}},
                          {"annotations", {{"gantry.dev/priority", "11"}}}};
  auto annotated = post(manifest.dump(), kCappedToken);
  CHECK(annotated.status == 403);
  CHECK(annotated.body.find("metadata.annotations[gantry.dev/priority]: 11 is above") != std::string::npos);
  // A kind gantry reads no pods of: refused to a capped token, taken from another.
  nlohmann::json generic = nlohmann::json::parse(JobDoc("torch"));
  nlohmann::json pod = generic["spec"]["template"]["spec"]["template"];
  generic["spec"]["template"] = {{"apiVersion", "kubeflow.org/v1"}, {"kind", "PyTorchJob"},
                                 {"spec", {{"pytorchReplicaSpecs", nlohmann::json::object()}}}};
  generic["spec"]["podSets"] = {{{"name", "master"}, {"template", pod}}};
  auto torch = post(generic.dump(), kCappedToken);
  CHECK(torch.status == 403);
  CHECK(torch.body.find("spec.template.kind: a token with maxPriority may submit a batch/v1 Job or a JobSet") !=
        std::string::npos);
  CHECK(post(generic.dump(), kTeamAToken).status == 201);
}

TEST_CASE("authentication and tenant isolation", "[api][auth]") {
  ApiFixture api;
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-b/jobs", JobDoc("secret", "team-b")).status == 201);
  struct Row {
    const char* what;
    std::string method, target, body, token;
    int code;
  };
  const Row rows[] = {
      {"no token", "GET", "/api/v1/jobs", "", "", 401},
      {"wrong token", "GET", "/api/v1/jobs", "", "not-a-valid-token-at-all", 401},
      {"no token on submit", "POST", "/api/v1/namespaces/team-a/jobs", JobDoc("x"), "", 401},
      {"other namespace read", "GET", "/api/v1/namespaces/team-b/jobs/secret", "", kTeamAToken, 403},
      {"other namespace events", "GET", "/api/v1/namespaces/team-b/jobs/secret/events", "", kTeamAToken, 403},
      {"other namespace list", "GET", "/api/v1/jobs?namespace=team-b", "", kTeamAToken, 403},
      {"other namespace submit", "POST", "/api/v1/namespaces/team-b/jobs", JobDoc("x", "team-b"), kTeamAToken, 403},
      {"other namespace cancel", "DELETE", "/api/v1/namespaces/team-b/jobs/secret", "", kTeamAToken, 403},
      {"own namespace submit", "POST", "/api/v1/namespaces/team-a/jobs", JobDoc("mine"), kTeamAToken, 201},
      {"own namespace read", "GET", "/api/v1/namespaces/team-a/jobs/mine", "", kTeamAToken, 200},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    auto r = api.Call(row.method, row.target, row.body, row.token);
    CHECK(r.status == row.code);
  }
  // Listing every namespace shows a tenant only its own jobs.
  auto mine = api.Json(api.Call("GET", "/api/v1/jobs", "", kTeamAToken));
  REQUIRE(mine["items"].size() == 1);
  CHECK(mine["items"][0]["metadata"]["name"] == "mine");
  CHECK(api.Json(api.Call("GET", "/api/v1/jobs"))["items"].size() == 2);  // admin
  // The job in team-b was not cancelled by the forbidden request.
  CHECK(api.Json(api.Call("GET", "/api/v1/namespaces/team-b/jobs/secret"))["status"]["phase"] == "Queued");
}

TEST_CASE("cluster routes and placement without an inventory", "[api]") {
  ApiFixture api;
  CHECK(api.Call("GET", "/api/v1/clusters/nope").status == 404);
  CHECK(api.Call("POST", "/api/v1/clusters:reload", "", kTeamAToken).status == 403);
  CHECK(api.Call("POST", "/api/v1/clusters:reload").status == 503);
  CHECK(api.Call("GET", "/api/v1/clusters:reload").status == 405);
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("p1")).status == 201);
  auto placement = api.Call("GET", "/api/v1/namespaces/team-a/jobs/p1/placement");
  REQUIRE(placement.status == 200);
  auto decision = api.Json(placement);
  CHECK(decision["kind"] == "PlacementDecision");
  CHECK(decision["candidates"].empty());
  CHECK(decision["unschedulable"] == false);  // no clusters yet is not "never"
  CHECK(decision["jobPhase"] == "Queued");    // what the verdict is beside
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/p1/placement", "", kTeamAToken).status == 200);
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/nope/placement").status == 404);
}

TEST_CASE("a reload is not refused while large job documents fill the slow lane", "[api]") {
  // The reading of documents named large-* is held (the intake's Refuse
  // runs once one is parsed), so that they fill the slow lane.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto reached = std::make_shared<std::atomic<bool>>(false);
  ApiFixtureOptions options;
  options.refuse = [released, reached](const JobSpec& spec) -> std::optional<FieldError> {
    if (spec.name.rfind("large", 0) == 0) {
      reached->store(true);
      released.wait();
    }
    return std::nullopt;
  };
  options.slow_lane_capacity = 1;
  options.with_fleet = true;
  auto reloads = std::make_shared<std::atomic<int>>(0);
  options.after_reload = [reloads] { ++*reloads; };
  ApiFixture api(options);
  auto submit = [&](const std::string& name) { return PostLargeJob(api, name); };
  // Released once, also when a REQUIRE below fails: the futures, destroyed
  // then, wait for their answers, which wait for it.
  std::atomic<bool> released_once{false};
  auto release_once = [&] {
    if (!released_once.exchange(true)) release->set_value();
  };
  struct OnExit {
    std::function<void()> fn;
    ~OnExit() { fn(); }
  };
  std::vector<std::future<Result<http::ClientResponse>>> large;
  OnExit release_at_exit{release_once};  // after `large`'s declaration: runs before its futures wait
  large.push_back(submit("large-1"));
  REQUIRE(WaitFor([&] { return reached->load(); }, std::chrono::seconds(10)));
  large.push_back(submit("large-2"));
  large.push_back(submit("large-3"));
  // The lane is full: one of the two waits, the other got 429.
  REQUIRE(WaitFor([&] {
    for (std::size_t i = 1; i < large.size(); ++i) {
      if (large[i].wait_for(std::chrono::seconds(0)) == std::future_status::ready) return true;
    }
    return false;
  }, std::chrono::seconds(10)));
  // An operator's reload is served all the same, while the lane is full.
  auto reload = api.Call("POST", "/api/v1/clusters:reload");
  CHECK(reload.status == 200);
  CHECK(api.Json(reload)["message"] == "inventory reloaded");
  CHECK(reloads->load() == 1);
  release_once();
  int created = 0, refused = 0;
  for (auto& f : large) {
    auto answer = f.get();
    REQUIRE(answer.ok());
    created += answer->status == 201;
    refused += answer->status == 429;
  }
  CHECK(created == 2);
  CHECK(refused == 1);  // the lane was full indeed
}

TEST_CASE("without a tokens file loopback clients are admins", "[api][auth]") {
  ApiFixture api({.with_tokens = false});
  CHECK(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("open"), "").status == 201);
  CHECK(api.Call("GET", "/api/v1/jobs", "", "").status == 200);
}

namespace {

// A raw TCP connection for misbehaving-client tests.
int ConnectRaw(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

// Waits up to deadline_ms for the server to close the connection; returns
// true if it did (read returns 0 or an error after any pending response).
bool ServerCloses(int fd, int deadline_ms) {
  char buf[4096];
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a slow client is closed by the read deadline", "[api][limits]") {
  ApiFixture api({.with_tokens = true, .body_limit = 1 << 20, .read_timeout = std::chrono::milliseconds(300)});
  int fd = ConnectRaw(api.port());
  std::string partial = "POST /api/v1/namespaces/team-a/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n";
  REQUIRE(write(fd, partial.data(), partial.size()) == static_cast<ssize_t>(partial.size()));
  // The headers never finish: the server must hang up well within 5 s.
  CHECK(ServerCloses(fd, 5000));
  close(fd);
  // The server still serves others.
  CHECK(api.Call("GET", "/healthz", "", "").status == 200);
}

TEST_CASE("a declared body over the limit is refused before it is read", "[api][limits]") {
  ApiFixture api({.with_tokens = true, .body_limit = 4096});
  int fd = ConnectRaw(api.port());
  std::string head = "POST /api/v1/namespaces/team-a/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: 100000000\r\n\r\n";
  REQUIRE(write(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  std::string got;
  char buf[4096];
  WaitFor([&] {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) > 0) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n > 0) got.append(buf, n);
    }
    return got.find("\r\n\r\n") != std::string::npos;
  });
  CHECK(got.rfind("HTTP/1.1 413", 0) == 0);
  close(fd);
}

TEST_CASE("header fields over the header limit get 431 with a reason of their own", "[api][limits]") {
  ApiFixture api;
  int fd = ConnectRaw(api.port());
  // Over the limit (64 KiB) in one field: the server answers before it has read it all.
  const std::string head = "GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(70 << 10, 'a') + "\r\n\r\n";
  (void)send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  WaitFor([&] {  // the whole answer: the server closes after it
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) return false;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) got.append(buf, n);
    return n <= 0;
  });
  close(fd);
  CHECK(got.rfind("HTTP/1.1 431", 0) == 0);
  const std::size_t body_at = got.find("\r\n\r\n");
  REQUIRE(body_at != std::string::npos);
  auto body = nlohmann::json::parse(got.substr(body_at + 4), nullptr, false);
  REQUIRE(body.is_object());
  CHECK(body["code"] == 431);
  CHECK(body["reason"] == "RequestHeaderFieldsTooLarge");
}

TEST_CASE("garbage instead of HTTP gets 400 and the server stays up", "[api][limits]") {
  ApiFixture api;
  int fd = ConnectRaw(api.port());
  std::string junk = "\x16\x03\x01 this is not http\r\n\r\n";
  REQUIRE(write(fd, junk.data(), junk.size()) == static_cast<ssize_t>(junk.size()));
  CHECK(ServerCloses(fd, 5000));
  close(fd);
  CHECK(api.Call("GET", "/healthz", "", "").status == 200);
}

TEST_CASE("a client's own methods share one label value: the registry does not grow with them", "[api][metrics]") {
  api::ApiMetrics metrics;
  for (int i = 0; i < 1000; ++i) metrics.ObserveRequest("M" + std::to_string(i), "unmatched", 404, 0.001);
  metrics.ObserveRequest("GET", "unmatched", 404, 0.001);
  const std::string text = metrics.Serialize();
  CHECK(text.find("method=\"M17\"") == std::string::npos);
  CHECK(text.find("method=\"other\"") != std::string::npos);
  CHECK(text.find("method=\"GET\"") != std::string::npos);
  CHECK(text.size() < 20'000);
}

}  // namespace gantry::testing

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace gantry::testing {

TEST_CASE("a request's path is logged as sent: an encoded line break cannot forge a log line", "[api][auth]") {
  ApiFixture api;
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto capture = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  capture->set_level(spdlog::level::debug);
  capture->set_pattern("%l %v");
  spdlog::set_default_logger(capture);
  auto r = api.Call("GET", "/x%0acritical%20forged%20line");
  spdlog::set_default_logger(previous);
  CHECK(r.status == 404);
  const std::string text = log.str();
  CHECK(text.find("/x%0acritical%20forged%20line") != std::string::npos);
  CHECK(text.find("\ncritical forged line") == std::string::npos);
}

}  // namespace gantry::testing
