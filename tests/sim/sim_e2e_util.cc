#include "sim_e2e_util.h"

#include <csignal>
#include <fstream>

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

namespace gantry::sim {

SimProcess::SimProcess(int clusters, const std::string& config_yaml) {
  std::vector<std::string> argv = {GANTRY_BIN_DIR "/gantry-sim", "--out-dir", dir()};
  if (config_yaml.empty()) {
    argv.insert(argv.end(), {"--clusters", std::to_string(clusters)});
  } else {
    gantry::testing::WriteFile(tmp_.path() + "/sim.yaml", config_yaml);
    argv.insert(argv.end(), {"--config", tmp_.path() + "/sim.yaml"});
  }
  process_ = std::make_unique<gantry::testing::Process>(argv, tmp_.path());
  bool ready = gantry::testing::WaitFor([&] { return std::ifstream(dir() + "/ready").good(); });
  if (!ready) FAIL("gantry-sim did not become ready: " << process_->Stderr());
}

SimProcess::~SimProcess() {
  process_->Signal(SIGTERM);
  process_->Wait(std::chrono::seconds(5));
}

ClusterClient SimProcess::Connect(const std::string& cluster) const {
  YAML::Node kc = YAML::LoadFile(dir() + "/" + cluster + ".kubeconfig");
  ClusterClient out;
  out.server = kc["clusters"][0]["cluster"]["server"].as<std::string>();
  out.token = kc["users"][0]["user"]["token"].as<std::string>();
  std::string b64 = kc["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>();
  auto decoded = gantry::testing::Run({"base64", "-d"}, {}, b64);
  http::ClientOptions opts;
  opts.ca_pem = decoded.out;
  auto client = http::Client::Create(out.server, opts);
  REQUIRE(client.ok());
  out.client = std::move(*client);
  return out;
}

int SimProcess::Admin(const std::string& dir, const std::string& method, const std::string& target) {
  std::ifstream f(dir + "/admin");
  int port = 0;
  f >> port;
  auto client = http::Client::Create("http://127.0.0.1:" + std::to_string(port));
  if (!client.ok()) return 0;
  auto r = (*client)->Do(method, target);
  return r.ok() ? r->status : 0;
}

}  // namespace gantry::sim
