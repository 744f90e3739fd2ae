#include "dispatch_fixture.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gantry/http/client.h"
#include "gantry/inventory/kubeconfig.h"
#include "gantry/kube/kube_client.h"

namespace gantry::testing {
namespace {

std::string SimBin() { return std::string(GANTRY_BIN_DIR "/gantry-sim"); }

std::unique_ptr<http::Client> ClientFor(const std::string& url) {
  auto c = http::Client::Create(url);
  if (!c.ok()) return nullptr;
  return std::move(c.value());
}

}  // namespace

DispatchFleet::DispatchFleet(DispatchFleetOptions options) : options_(std::move(options)) {
  sim_dir_ = dir_.File("sim");
  std::vector<std::string> argv = {SimBin(), "--out-dir", sim_dir_};
  if (options_.sim_config_yaml.empty()) {
    argv.push_back("--clusters");
    argv.push_back(std::to_string(options_.clusters));
  } else {
    WriteFile(dir_.File("sim.yaml"), options_.sim_config_yaml);
    argv.push_back("--config");
    argv.push_back(dir_.File("sim.yaml"));
  }
  sim_ = std::make_unique<Process>(argv, dir_.path());
  if (!WaitFor([&] { return !ReadFile(sim_dir_ + "/ready").empty() || !sim_->Running(); },
               std::chrono::seconds(20)) ||
      !sim_->Running()) {
    return;
  }
  config_path_ = dir_.File("gantry.yaml");
  SetDaemonConfig(options_.daemon_config_yaml);
  RestartDaemon(false);
}

void DispatchFleet::SetDaemonConfig(const std::string& extra_yaml) {
  WriteFile(config_path_,
            fmt::format("clustersDir: {}/clusters.d\nprobeIntervalSeconds: 1\n{}\n", sim_dir_, extra_yaml));
}

DispatchFleet::~DispatchFleet() {
  daemon_.reset();
  if (sim_ && sim_->Running()) {
    sim_->Signal(SIGTERM);
    sim_->Wait(std::chrono::seconds(10));
  }
  // GANTRY_E2E_KEEP=DIR keeps every fleet's logs, data and sim output (debugging).
  if (const char* keep = std::getenv("GANTRY_E2E_KEEP"); keep && *keep) {
    std::error_code ec;
    std::filesystem::path to = std::filesystem::path(keep) / std::filesystem::path(dir_.path()).filename();
    std::filesystem::create_directories(to, ec);
    std::filesystem::copy(dir_.path(), to, std::filesystem::copy_options::recursive, ec);
  }
}

void DispatchFleet::RestartDaemon(bool kill) {
  StopDaemon(kill);
  StartDaemon();
}

void DispatchFleet::StopDaemon(bool kill) {
  if (daemon_ && kill && daemon_->process().Running()) {
    daemon_->process().Signal(SIGKILL);
    daemon_->process().Wait(std::chrono::seconds(10));
  }
  daemon_.reset();
}

void DispatchFleet::StartDaemon() {
  daemon_ = std::make_unique<Daemon>(dir_.File("data"), dir_.path(),
                                     std::vector<std::string>{"--config", config_path_, "--log-level", "debug"});
}

int DispatchFleet::Submit(const std::string& ns, const std::string& yaml) {
  auto client = ClientFor(url());
  if (!client) return -1;
  auto r = client->Do("POST", fmt::format("/api/v1/namespaces/{}/jobs", ns), yaml,
                      {{"Content-Type", "application/yaml"}});
  return r.ok() ? r->status : -1;
}

int DispatchFleet::ReloadClusters() {
  auto client = ClientFor(url());
  if (!client) return -1;
  auto r = client->Do("POST", "/api/v1/clusters:reload");
  return r.ok() ? r->status : -1;
}

nlohmann::json DispatchFleet::GetJson(const std::string& path) {
  auto client = ClientFor(url());
  if (!client) return nullptr;
  auto r = client->Do("GET", path);
  if (!r.ok() || r->status != 200) return nullptr;
  return nlohmann::json::parse(r->body, nullptr, false);
}

nlohmann::json DispatchFleet::Job(const std::string& ns, const std::string& name) {
  return GetJson(fmt::format("/api/v1/namespaces/{}/jobs/{}", ns, name));
}

nlohmann::json DispatchFleet::Placement(const std::string& ns, const std::string& name) {
  return GetJson(fmt::format("/api/v1/namespaces/{}/jobs/{}/placement", ns, name));
}

nlohmann::json DispatchFleet::Cluster(const std::string& name) { return GetJson("/api/v1/clusters/" + name); }

std::string DispatchFleet::Phase(const std::string& ns, const std::string& name) {
  nlohmann::json j = Job(ns, name);
  if (!j.is_object()) return "";
  return j["status"].value("phase", "");
}

bool DispatchFleet::WaitPhase(const std::string& ns, const std::string& name, std::vector<std::string> phases,
                              std::chrono::milliseconds deadline) {
  bool reached = WaitFor([&] {
    std::string p = Phase(ns, name);
    return std::find(phases.begin(), phases.end(), p) != phases.end();
  }, deadline);
  if (!reached) {  // what the job says of itself, for the failure's log
    std::cerr << "job " << ns << "/" << name << " did not reach " << fmt::format("{}", fmt::join(phases, "|"))
              << ":\n  " << Job(ns, name).dump() << "\n";
    for (const nlohmann::json& e : Events(ns, name)) std::cerr << "  event " << e.dump() << "\n";
    if (auto client = ClientFor(url())) {
      auto r = client->Do("GET", fmt::format("/api/v1/namespaces/{}/jobs/{}/placement", ns, name));
      if (r.ok()) std::cerr << "  placement now: " << r->body << "\n";
    }
    // Is the daemon still there (a job that reads as null may mean it is not),
    // and what did it say last?
    const bool running = daemon_->process().Running();
    std::cerr << "  daemon " << (running ? "running" : "exited")
              << (running ? "" : fmt::format(" ({})", daemon_->process().Wait(std::chrono::milliseconds(0)))) << "\n";
    std::istringstream log(daemon_->process().Stderr());
    std::deque<std::string> tail;
    for (std::string line; std::getline(log, line);) {
      // The daemon's lines read "<time> <level> <message>". The test's own
      // polling (GETs of the job) would crowd out the rest.
      const bool polling = line.find(" GET ") != std::string::npos;
      const bool notable = line.find(name) != std::string::npos || line.find(" warning ") != std::string::npos ||
                           line.find(" error ") != std::string::npos || line.find(" critical ") != std::string::npos ||
                           line.find("inventory") != std::string::npos;
      if (polling || !notable) continue;
      tail.push_back(std::move(line));
      if (tail.size() > 40) tail.pop_front();
    }
    for (const std::string& line : tail) std::cerr << "  log " << line << "\n";
  }
  return reached;
}

bool DispatchFleet::WaitClustersReady(std::chrono::milliseconds deadline) {
  return WaitFor([&] {
    auto client = ClientFor(url());
    if (!client) return false;
    auto r = client->Do("GET", "/api/v1/clusters");
    if (!r.ok() || r->status != 200) return false;
    auto body = nlohmann::json::parse(r->body, nullptr, false);
    if (!body.is_object()) return false;
    int ready = 0, all = 0;
    for (auto& c : body.value("items", nlohmann::json::array())) {
      ++all;
      ready += c["status"].value("health", "") == "Ready";
    }
    int want = options_.clusters;
    if (!options_.sim_config_yaml.empty()) want = all;  // the sim config names them
    return all > 0 && all >= want && ready == all;
  }, deadline);
}

nlohmann::json DispatchFleet::List(const std::string& ns) {
  auto client = ClientFor(url());
  if (!client) return nullptr;
  auto r = client->Do("GET", fmt::format("/api/v1/jobs?namespace={}&limit=5000", ns));
  if (!r.ok() || r->status != 200) return nullptr;
  return nlohmann::json::parse(r->body, nullptr, false);
}

// The items of GET /api/v1/namespaces/NS/jobs/NAME/SUB ({} on any error).
std::vector<nlohmann::json> DispatchFleet::JobItems(const std::string& ns, const std::string& name,
                                                   const std::string& sub) {
  auto client = ClientFor(url());
  if (!client) return {};
  auto r = client->Do("GET", fmt::format("/api/v1/namespaces/{}/jobs/{}/{}", ns, name, sub));
  if (!r.ok() || r->status != 200) return {};
  auto body = nlohmann::json::parse(r->body, nullptr, false);
  std::vector<nlohmann::json> out;
  for (auto& e : body.value("items", nlohmann::json::array())) out.push_back(e);
  return out;
}

std::vector<nlohmann::json> DispatchFleet::Events(const std::string& ns, const std::string& name) {
  return JobItems(ns, name, "events");
}

std::vector<nlohmann::json> DispatchFleet::RemoteObjects(const std::string& ns, const std::string& name) {
  return JobItems(ns, name, "remoteobjects");
}

RunResult DispatchFleet::Ctl(std::vector<std::string> args) {
  std::vector<std::string> argv = {SimBin(), "ctl", "--out-dir", sim_dir_};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

std::vector<nlohmann::json> DispatchFleet::Journal() {
  RunResult r = Ctl({"journal"});
  std::vector<nlohmann::json> out;
  size_t start = 0;
  while (start < r.out.size()) {
    size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    auto line = nlohmann::json::parse(r.out.substr(start, end - start), nullptr, false);
    if (line.is_object()) out.push_back(line);
    start = end + 1;
  }
  return out;
}

std::vector<nlohmann::json> DispatchFleet::Runs(const std::string& job_uid) {
  std::vector<nlohmann::json> out;
  for (auto& run : Journal()) {
    if (run.value("jobUid", "") == job_uid) out.push_back(std::move(run));
  }
  std::stable_sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("startMs", int64_t{0}) < b.value("startMs", int64_t{0});
  });
  return out;
}

std::string DispatchFleet::Uid(const std::string& ns, const std::string& name) {
  nlohmann::json j = Job(ns, name);
  if (!j.is_object()) return "";
  return j["metadata"].value("uid", "");
}

std::unique_ptr<kube::KubeClient> DispatchFleet::RemoteClient(const std::string& cluster,
                                                              const kube::KubeClientOptions& options) {
  auto creds = inventory::LoadKubeconfig(sim_dir_ + "/" + cluster + ".kubeconfig", "", false);
  if (!creds.ok()) return nullptr;
  auto client = kube::KubeClient::Create(*creds, options);
  return client.ok() ? std::move(*client) : nullptr;
}

DispatchFleet::RemoteReply DispatchFleet::RemoteGet(const std::string& cluster, const std::string& path) {
  RemoteReply out;
  kube::KubeClientOptions options;
  options.timeout = std::chrono::seconds(5);
  options.max_attempts = 1;
  auto client = RemoteClient(cluster, options);
  if (!client) return out;
  auto reply = client->Get(path);
  if (!reply.ok()) return out;
  out.status = reply->status;
  out.body = reply->body;
  return out;
}

std::string RemoteJobPath(const std::string& ns, const std::string& remote) {
  return fmt::format("/apis/batch/v1/namespaces/{}/jobs/{}", ns, remote);
}

std::string RemoteWorkloadPath(const std::string& ns, const std::string& remote) {
  return fmt::format("/apis/kueue.x-k8s.io/v1beta2/namespaces/{}/workloads/{}", ns, remote);
}

bool RemoteGone(DispatchFleet& fleet, const std::string& cluster, const std::string& ns, const std::string& remote) {
  return fleet.RemoteGet(cluster, RemoteJobPath(ns, remote)).status == 404 &&
         fleet.RemoteGet(cluster, RemoteWorkloadPath(ns, remote)).status == 404;
}

std::vector<std::string> Reasons(DispatchFleet& fleet, const std::string& ns, const std::string& name) {
  std::vector<std::string> out;
  for (auto& e : fleet.Events(ns, name)) out.push_back(e.value("reason", ""));
  return out;
}

int Count(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<int>(std::count(v.begin(), v.end(), x));
}

std::string Describe(const std::vector<nlohmann::json>& runs) {
  std::string out;
  for (const nlohmann::json& r : runs) out += r.dump() + "\n";
  return out;
}

bool PollFor(const std::function<bool()>& cond, std::chrono::milliseconds deadline,
             std::chrono::milliseconds interval) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (true) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= end) return cond();
    std::this_thread::sleep_for(interval);
  }
}

namespace {

// A gantry job document's lines before its template's body.
std::string JobDocumentHead(const std::string& name, const std::string& ns, const std::string& extra_spec,
                            const std::string& api_version, const std::string& kind) {
  return fmt::format(R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {{name: {0}, namespace: {1}}}
spec:
  queue: {1}
{2}
  template:
    apiVersion: {3}
    kind: {4}
)",
                     name, ns, extra_spec, api_version, kind);
}

}  // namespace

std::string SimJobYaml(const std::string& name, const std::string& ns, int pods, int gpus,
                       const std::string& duration, const std::string& extra_spec, bool fail) {
  std::string gpu = gpus > 0 ? fmt::format(", nvidia.com/gpu: {}", gpus) : "";
  // Kubernetes refuses an extended resource's request without an equal limit.
  std::string gpu_limit = gpus > 0 ? fmt::format("\n              limits: {{nvidia.com/gpu: {}}}", gpus) : "";
  return JobDocumentHead(name, ns, extra_spec, "batch/v1", "Job") + fmt::format(R"(    metadata:
      annotations: {{sim.gantry.dev/duration: "{0}"{1}}}
    spec:
      parallelism: {2}
      completions: {2}
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: main
            image: registry.example.com/train:1
            resources:
              requests: {{cpu: "1", memory: 1Gi{3}}}{4}
)",
                     duration, fail ? ", sim.gantry.dev/outcome: Failed" : "", pods, gpu, gpu_limit);
}

std::optional<std::string> DispatchFleet::Metrics() {
  auto client = http::Client::Create(url());
  if (!client.ok()) return std::nullopt;
  auto metrics = (*client)->Do("GET", "/metrics");
  if (!metrics.ok() || metrics->status != 200) return std::nullopt;
  return std::move(metrics->body);
}

std::map<std::string, double> DispatchFleet::ClusterGauge(const std::string& name) {
  std::map<std::string, double> out;
  const std::optional<std::string> metrics = Metrics();
  if (!metrics) return out;
  std::istringstream lines(*metrics);
  const std::string lead = name + "{cluster=\"";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(lead, 0) != 0) continue;
    const std::size_t end = line.find('"', lead.size());
    if (end == std::string::npos) continue;
    out[line.substr(lead.size(), end - lead.size())] = std::stod(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

double DispatchFleet::RemoteCalls(const std::string& cluster, const std::string& verb, int code) {
  const std::optional<std::string> metrics = Metrics();
  if (!metrics) return -1;
  std::istringstream lines(*metrics);
  double sum = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("gantry_dispatch_remote_calls_total{", 0) != 0) continue;
    if ((!cluster.empty() && line.find("cluster=\"" + cluster + "\"") == std::string::npos) ||
        line.find("verb=\"" + verb + "\"") == std::string::npos ||
        line.find("code=\"" + std::to_string(code) + "\"") == std::string::npos) {
      continue;
    }
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

std::string JobSetYaml(const std::string& name, const std::string& ns, const std::string& duration,
                       const std::string& cluster) {
  const std::string placement = cluster.empty() ? "" : fmt::format("  placement: {{clusters: [{}]}}", cluster);
  return JobDocumentHead(name, ns, placement, "jobset.x-k8s.io/v1alpha2", "JobSet") + fmt::format(R"(    metadata:
      annotations: {{sim.gantry.dev/duration: "{0}"}}
    spec:
      replicatedJobs:
      - name: main
        replicas: 1
        template:
          spec:
            template:
              spec:
                restartPolicy: Never
                containers:
                - name: main
                  image: registry.example.com/train:1
                  resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
)",
                     duration);
}

bool StoppedByDelete(const nlohmann::json& run) {
  const std::string reason = run.value("endReason", "");
  return reason == "WorkloadDeleted" || reason == "Deleted";
}

std::map<std::string, int> PhaseCounts(DispatchFleet& fleet, const std::string& ns) {
  std::map<std::string, int> counts;
  nlohmann::json list = fleet.List(ns);
  if (!list.is_object()) return counts;
  for (const nlohmann::json& j : list.value("items", nlohmann::json::array())) {
    ++counts[j["status"].value("phase", "")];
  }
  return counts;
}

std::string Histogram(const std::map<std::string, int>& counts) {
  std::string out;
  for (const auto& [phase, n] : counts) out += fmt::format("{}={} ", phase, n);
  return out;
}

std::map<std::string, nlohmann::json> JobsByName(DispatchFleet& fleet, const std::string& ns) {
  std::map<std::string, nlohmann::json> out;
  nlohmann::json list = fleet.List(ns);
  if (!list.is_object()) return out;
  for (nlohmann::json& j : list["items"]) {
    std::string name = j["metadata"].value("name", "");
    out[name] = std::move(j);
  }
  return out;
}

std::optional<std::string> SubmitAcked(const std::function<std::string()>& url, const std::string& ns,
                                       const std::string& yaml, std::chrono::milliseconds deadline,
                                       int* last_status) {
  *last_status = -1;
  std::optional<std::string> uid;
  PollFor([&] {
    http::ClientOptions opts;
    opts.connect_timeout = std::chrono::seconds(2);
    opts.request_timeout = std::chrono::seconds(5);
    auto client = http::Client::Create(url(), opts);
    if (!client.ok()) return false;
    auto r = (*client)->Do("POST", fmt::format("/api/v1/namespaces/{}/jobs", ns), yaml,
                           {{"Content-Type", "application/yaml"}});
    if (!r.ok()) return false;  // the daemon is down or died mid-request: again
    *last_status = r->status;
    if (r->status != 201 && r->status != 200) return false;
    nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
    uid = body.is_object() ? body["metadata"].value("uid", "") : "";
    return true;
  }, deadline, std::chrono::milliseconds(20));
  return uid;
}

}  // namespace gantry::testing
