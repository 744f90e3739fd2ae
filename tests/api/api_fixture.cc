#include "api_fixture.h"

#include <filesystem>

#include <catch2/catch.hpp>

#include "gantry/job/job_document.h"
#include "gantry/api/k8s_status.h"

namespace gantry::testing {
namespace {

// The reconciler as the API's intake, with a Refuse and a RemoteView of the
// test's.
class TestIntake final : public dispatch::JobIntake {
 public:
  TestIntake(Reconciler& r, const ApiFixtureOptions& options)
      : r_(r), refuse_(options.refuse), remote_view_(options.remote_view) {}
  void Wake(const std::string& uid) override { r_.Wake(uid); }
  void Created(JobRecord record, std::shared_ptr<JobSpec> spec) override { r_.Created(std::move(record), std::move(spec)); }
  bool WantsSpec() const override { return r_.WantsSpec(); }
  void CancelRequested(const std::string& uid, std::function<void()> acknowledge) override {
    r_.CancelRequested(uid, std::move(acknowledge));
  }
  std::string FirstMessage() const override { return r_.FirstMessage(); }
  std::optional<FieldError> Refuse(const JobSpec& spec) const override {
    return refuse_ ? refuse_(spec) : r_.Refuse(spec);
  }
  std::vector<dispatch::ObservedObject> RemoteView(const std::string& uid) const override {
    return remote_view_ ? remote_view_(uid) : r_.RemoteView(uid);
  }

 private:
  Reconciler& r_;
  std::function<std::optional<FieldError>(const JobSpec&)> refuse_;
  std::function<std::vector<dispatch::ObservedObject>(const std::string&)> remote_view_;
};

// The clusters of an empty clusters.d: none to probe.
class NoProber final : public inventory::ClusterProber {
 public:
  Result<inventory::CapacityReading> Probe(const inventory::ClusterConfig&,
                                           const inventory::ClusterCredentials&) override {
    return Status::Unavailable("no cluster is probed in the API tests");
  }
};

}  // namespace

ApiFixture::ApiFixture(ApiFixtureOptions options) {
  SqliteStoreOptions so;
  so.path = dir_.File("gantry.db");
  so.same_spec = SameJobSpec;  // as the daemon sets it
  so.on_commit = [this](double s, int w, bool synced) { metrics_.ObserveCommit(s, w, synced); };
  auto store = OpenSqliteStore(so);
  REQUIRE(store.ok());
  store_ = std::move(store.value());
  std::string tokens_path;
  if (options.with_tokens) {
    tokens_path = dir_.File("tokens.yaml");
    WriteFile(tokens_path, std::string("tokens:\n") +
                               "- subject: admin\n  token: " + kAdminToken + "\n  namespaces: ['*']\n" +
                               "- subject: alice\n  tokenSha256: " + api::TokenAuth::Sha256Hex(kTeamAToken) +
                               "\n  namespaces: [team-a]\n" + "- subject: capped\n  token: " + kCappedToken +
                               "\n  namespaces: [team-a]\n  maxPriority: 10\n  priorityClasses: [batch-low]\n");
  }
  auto auth = api::TokenAuth::Load(tokens_path);
  REQUIRE(auth.ok());
  auth_ = std::move(auth.value());
  reconciler_ = std::make_unique<Reconciler>(*store_, clock_);
  REQUIRE(reconciler_->Start().ok());
  dispatch::JobIntake* intake = reconciler_.get();
  if (options.refuse || options.remote_view) {
    intake_ = std::make_unique<TestIntake>(*reconciler_, options);
    intake = intake_.get();
  }
  api::ApiOptions api_options;
  api_options.slow_lane_capacity = options.slow_lane_capacity;
  if (options.after_reload) {
    api_options.after_reload = [f = options.after_reload](const std::vector<std::string>&) {
      f();
      return std::string();
    };
  }
  api_options.watch_refused = options.watch_refused;
  if (options.with_fleet) {
    std::filesystem::create_directories(dir_.File("clusters.d"));
    inventory::FleetOptions fleet_options;
    fleet_options.clusters_dir = dir_.File("clusters.d");
    prober_ = std::make_unique<NoProber>();
    fleet_ = std::make_unique<inventory::Fleet>(*prober_, *store_, clock_, fleet_options);
    REQUIRE(fleet_->Start().empty());
  }
  service_ = std::make_unique<api::ApiService>(*store_, *auth_, metrics_, intake, clock_, api_options, fleet_.get());
  service_->SetReady(true);
  http::ServerOptions so2;
  so2.port = 0;
  so2.body_limit = options.body_limit;
  so2.read_timeout = options.read_timeout;
  so2.error_response = [](int code, std::string message) {
    return api::K8sStatus(code, api::ReasonForCode(code), std::move(message));
  };
  server_ = std::make_unique<http::Server>(so2, service_->Handler());
  REQUIRE(server_->Start().ok());
  auto client = http::Client::Create("http://127.0.0.1:" + std::to_string(server_->port()));
  REQUIRE(client.ok());
  client_ = std::move(client.value());
}

ApiFixture::~ApiFixture() {
  server_->Stop(std::chrono::seconds(2));
  reconciler_->Stop();
}

http::ClientResponse ApiFixture::Call(const std::string& method, const std::string& target,
                                      const std::string& body, const std::string& token,
                                      const std::string& content_type) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (!token.empty()) headers.emplace_back("Authorization", std::string("Bearer ") + token);
  if (!body.empty()) headers.emplace_back("Content-Type", content_type);
  auto r = client_->Do(method, target, body, headers);
  REQUIRE(r.ok());
  return *r;
}

std::string JobDoc(const std::string& name, const std::string& ns, int priority, int gpus) {
  nlohmann::json container = nlohmann::json::parse(R"({"name": "main", "image": "trainer:1",
      "resources": {"requests": {"cpu": "4", "memory": "16Gi"}}})");
  container["resources"]["requests"]["nvidia.com/gpu"] = gpus;
  container["resources"]["limits"]["nvidia.com/gpu"] = gpus;  // Kubernetes requires it
  nlohmann::json job_template = {{"apiVersion", "batch/v1"}, {"kind", "Job"}};
  job_template["spec"]["parallelism"] = 2;
  job_template["spec"]["template"]["spec"]["containers"] = nlohmann::json::array({container});
  job_template["spec"]["template"]["spec"]["restartPolicy"] = "Never";
  nlohmann::json doc = {{"apiVersion", "gantry.dev/v1"}, {"kind", "Job"}};
  doc["metadata"] = {{"name", name}, {"namespace", ns}};
  doc["spec"] = {{"queue", "team-a"}, {"priority", priority}, {"template", job_template}};
  return doc.dump();
}

std::future<Result<http::ClientResponse>> PostLargeJob(const ApiFixture& api, const std::string& name) {
  return std::async(std::launch::async, [port = api.port(), doc = JobDoc(name) + std::string(64 << 10, ' ')] {
    auto client = http::Client::Create("http://127.0.0.1:" + std::to_string(port)).value();
    return client->Do("POST", "/api/v1/namespaces/team-a/jobs", doc,
                      {{"Authorization", std::string("Bearer ") + kAdminToken}, {"Content-Type", "application/json"}});
  });
}

}  // namespace gantry::testing
