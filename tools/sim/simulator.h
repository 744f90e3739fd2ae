// Simulator: the whole gantry-sim process: every SimCluster, the shared run
// journal, the admin API, the ticker thread that lets time pass, and the
// files in the output directory. Start() writes DIR/ready last.
//
// Thread-safety: Start/Stop from the controlling thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "admin_api.h"
#include "gantry/common/clock.h"
#include "gantry/http/server.h"
#include "journal.h"
#include "sim_cluster.h"
#include "sim_config.h"

namespace gantry::sim {

struct SimulatorOptions {
  std::string out_dir = "sim-out";
  // How often simulated time is looked at (admission, run ends, watch ends).
  std::chrono::milliseconds tick{10};
  uint16_t admin_port = 0;
};

class Simulator {
 public:
  Simulator(SimConfig config, SimulatorOptions options);
  ~Simulator();

  Status Start();
  void Stop();
  const std::vector<std::unique_ptr<SimCluster>>& clusters() const { return clusters_; }
  Journal& journal() { return journal_; }
  uint16_t admin_port() const;

 private:
  Status WriteFiles();
  void TickLoop();

  SimConfig config_;
  SimulatorOptions options_;
  SystemClock clock_;
  Journal journal_;
  std::vector<std::unique_ptr<SimCluster>> clusters_;
  std::unique_ptr<AdminApi> admin_api_;
  std::unique_ptr<http::Server> admin_server_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace gantry::sim
