// sim_bench: how fast one simulated cluster (one server thread) serves
// create + get Workload traffic over HTTPS with the bearer token, while
// watches (label-selected, like the daemon's) receive every change.
//
//   sim_bench [requests=4000] [watchers=4]
//
// Prints requests/s and watch events/s. The client runs in this process on
// the other core, so the figure is what the simulator takes from one core.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gantry/http/client.h"
#include "simulator.h"

using nlohmann::json;
using namespace gantry::sim;

namespace {

json Workload(int i) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata", {{"name", "wl-" + std::to_string(i)}, {"labels", {{"kueue.x-k8s.io/multikueue-origin", "gantry"}}}}},
          {"spec",
           {{"queueName", "team-a"},
            {"podSets", json::array({{{"name", "main"}, {"count", 1},
                                      {"template", {{"spec", {{"containers", json::array({{{"name", "c"}, {"image", "x"},
                                          {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}}}}}})}}}};
}

}  // namespace

int main(int argc, char** argv) {
  int requests = argc > 1 ? std::atoi(argv[1]) : 4000;
  int watchers = argc > 2 ? std::atoi(argv[2]) : 4;
  char tmpl[] = "/tmp/sim-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  SimConfig cfg = MakeVariedClusters(1);
  cfg.clusters[0].quota["cpu"] = int64_t{1} << 50;  // everything is admitted: the full write path
  SimulatorOptions opts;
  opts.out_dir = dir;
  Simulator sim(cfg, opts);
  if (auto s = sim.Start(); !s.ok()) {
    std::fprintf(stderr, "start: %s\n", s.ToString().c_str());
    return 1;
  }
  SimCluster& c = *sim.clusters()[0];
  std::vector<std::shared_ptr<gantry::http::ResponseStream>> streams;
  for (int i = 0; i < watchers; ++i) {
    WatchRequest w;
    w.resource = &ResourceByPlural("workloads");
    w.api_version = "kueue.x-k8s.io/v1beta2";
    w.selector = *LabelSelector::Parse("kueue.x-k8s.io/multikueue-origin=gantry");
    w.resource_version = "1";
    w.timeout_ms = 3'600'000;
    w.stream = std::make_shared<gantry::http::ResponseStream>();
    streams.push_back(w.stream);
    c.state().Watch(std::move(w));
  }
  gantry::http::ClientOptions copts;
  copts.ca_pem = c.certs().ca_pem;
  auto client = gantry::http::Client::Create(c.server_url(), copts);
  if (!client.ok()) return 1;
  const std::vector<std::pair<std::string, std::string>> headers = {{"Authorization", "Bearer " + c.token()},
                                                                    {"Content-Type", "application/json"}};
  const std::string base = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";
  std::size_t events = 0;
  auto drain = [&] {
    for (auto& s : streams) {
      bool finished = false;
      events += s->Take(&finished).size();
    }
  };
  auto start = std::chrono::steady_clock::now();
  int failures = 0;
  for (int i = 0; i < requests / 2; ++i) {
    auto created = (*client)->Do("POST", base, Workload(i).dump(), headers);
    auto got = (*client)->Do("GET", base + "/wl-" + std::to_string(i), "", headers);
    if (!created.ok() || created->status != 201 || !got.ok() || got->status != 200) ++failures;
    if (i % 64 == 0) drain();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // last admissions
  drain();
  std::printf("sim_bench: %d requests (create+get) in %.2f s: %.0f requests/s over HTTPS keep-alive, %d failures\n",
              requests, secs, requests / secs, failures);
  std::printf("sim_bench: %d watchers received %zu events: %.0f events/s\n", watchers, events, events / secs);
  sim.Stop();
  std::string cmd = "rm -rf " + dir;
  return std::system(cmd.c_str()) == 0 && failures == 0 ? 0 : 1;
}
