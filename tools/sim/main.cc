// gantry-sim: simulated Kubernetes + Kueue worker clusters over HTTPS.
//
//   gantry-sim [--config sim.yaml | --clusters N] [--out-dir DIR]
//   gantry-sim ctl --out-dir DIR <command> [args]     (see ctl.h)
#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "ctl.h"
#include "simulator.h"

namespace {

int Serve(const std::string& config_path, int clusters, const std::string& out_dir, uint16_t admin_port) {
  using namespace gantry::sim;
  gantry::Result<SimConfig> config = config_path.empty() ? gantry::Result<SimConfig>(MakeVariedClusters(clusters))
                                                          : LoadSimConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "gantry-sim: %s\n", config.status().ToString().c_str());
    return 2;
  }
  // Block the stop signals before any thread starts, so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  SimulatorOptions options;
  options.out_dir = out_dir;
  options.admin_port = admin_port;
  Simulator sim(std::move(*config), options);
  if (gantry::Status s = sim.Start(); !s.ok()) {
    std::fprintf(stderr, "gantry-sim: %s\n", s.ToString().c_str());
    return 1;
  }
  for (const auto& c : sim.clusters()) {
    spdlog::info("cluster {} at {} ({} GPUs of {})", c->name(), c->server_url(),
                 c->config().quota.count("nvidia.com/gpu") ? c->config().quota.at("nvidia.com/gpu") / 1000 : 0,
                 c->config().accelerator.model);
  }
  spdlog::info("admin API on 127.0.0.1:{}; ready in {}", sim.admin_port(), out_dir);
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  sim.Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gantry-sim: simulated Kubernetes + Kueue worker clusters"};
  std::string config_path, out_dir = "sim-out";
  int clusters = 3;
  uint16_t admin_port = 0;
  app.add_option("--config", config_path, "cluster configuration (YAML)");
  app.add_option("--clusters", clusters, "start N varied clusters c1..cN (without --config)")->check(CLI::Range(1, 10000));
  app.add_option("--out-dir", out_dir, "where kubeconfigs, clusters.d/, admin and ready are written");
  app.add_option("--admin-port", admin_port, "admin API port (0 = free port)");
  CLI::App* ctl = app.add_subcommand("ctl", "operate a running gantry-sim (journal, check, faults)");
  std::string ctl_dir = "sim-out";
  std::vector<std::string> ctl_args;  // the command and its arguments
  ctl->add_option("--out-dir", ctl_dir, "the running simulator's --out-dir");
  ctl->prefix_command();
  CLI11_PARSE(app, argc, argv);
  if (*ctl) {
    ctl_args = ctl->remaining();
    return gantry::sim::RunCtl(ctl_dir, ctl_args);
  }
  return Serve(config_path, clusters, out_dir, admin_port);
}
