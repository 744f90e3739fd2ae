#include "simulator.h"

#include <filesystem>

#include <fmt/format.h>

#include "output_files.h"

namespace gantry::sim {

Simulator::Simulator(SimConfig config, SimulatorOptions options)
    : config_(std::move(config)), options_(std::move(options)) {}

Simulator::~Simulator() { Stop(); }

uint16_t Simulator::admin_port() const { return admin_server_ ? admin_server_->port() : 0; }

Status Simulator::Start() {
  GANTRY_RETURN_IF_ERROR(MakeDirs(options_.out_dir + "/clusters.d"));
  std::error_code ec;
  std::filesystem::remove(options_.out_dir + "/ready", ec);
  for (const ClusterConfig& c : config_.clusters) {
    clusters_.push_back(std::make_unique<SimCluster>(c, &journal_, &clock_));
  }
  // Certificates take a few ms each; start the listeners in parallel when many.
  std::vector<Status> results(clusters_.size());
  std::vector<std::thread> starters;
  for (std::size_t i = 0; i < clusters_.size(); ++i) {
    starters.emplace_back([this, i, &results] { results[i] = clusters_[i]->Start(); });
  }
  for (auto& t : starters) t.join();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) return Status(results[i].code(), fmt::format("cluster {}: {}", clusters_[i]->name(), results[i].message()));
  }
  std::vector<SimCluster*> raw;
  for (auto& c : clusters_) raw.push_back(c.get());
  admin_api_ = std::make_unique<AdminApi>(&journal_, raw);
  http::ServerOptions opts;
  opts.port = options_.admin_port;
  opts.server_name = "gantry-sim-admin";
  admin_server_ = std::make_unique<http::Server>(
      opts, [this](http::Request req, http::Responder respond) { admin_api_->Handle(std::move(req), std::move(respond)); });
  GANTRY_RETURN_IF_ERROR(admin_server_->Start());
  ticker_ = std::thread([this] { TickLoop(); });
  return WriteFiles();
}

Status Simulator::WriteFiles() {
  std::string dir = std::filesystem::absolute(options_.out_dir).string();
  for (const auto& c : clusters_) {
    std::string kubeconfig = fmt::format("{}/{}.kubeconfig", dir, c->name());
    GANTRY_RETURN_IF_ERROR(WriteFileAtomic(kubeconfig, KubeconfigYaml(c->name(), c->server_url(), c->certs().ca_pem, c->token())));
    GANTRY_RETURN_IF_ERROR(WriteFileAtomic(fmt::format("{}/clusters.d/{}.yaml", dir, c->name()),
                                           ClusterEntryYaml(c->config(), kubeconfig)));
  }
  GANTRY_RETURN_IF_ERROR(WriteFileAtomic(dir + "/admin", fmt::format("{}\n", admin_server_->port())));
  return WriteFileAtomic(dir + "/ready", fmt::format("{} clusters\n", clusters_.size()));
}

void Simulator::TickLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    for (auto& c : clusters_) c->Tick();
    lock.lock();
    cv_.wait_for(lock, options_.tick, [this] { return stopping_; });
  }
}

void Simulator::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (admin_server_) admin_server_->Stop(std::chrono::milliseconds(0));
  for (auto& c : clusters_) c->Shutdown();
  std::error_code ec;
  std::filesystem::remove(options_.out_dir + "/ready", ec);
}

}  // namespace gantry::sim
