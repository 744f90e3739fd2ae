// A gantry-sim child process for end-to-end tests, and HTTPS clients built
// from the kubeconfigs it writes. The destructor kills the process.
#pragma once

#include <memory>
#include <string>

#include "gantry/http/client.h"
#include "process.h"
#include "test_support.h"

namespace gantry::sim {

struct ClusterClient {
  std::unique_ptr<http::Client> client;
  std::string token;
  std::string server;
};

class SimProcess {
 public:
  // --clusters N, or the given sim.yaml text when config_yaml is non-empty.
  explicit SimProcess(int clusters, const std::string& config_yaml = "");
  ~SimProcess();
  std::string dir() const { return tmp_.path() + "/out"; }
  ClusterClient Connect(const std::string& cluster) const;
  // One admin API call; returns the HTTP status (0 on transport failure).
  static int Admin(const std::string& dir, const std::string& method, const std::string& target);

 private:
  gantry::testing::TempDir tmp_;
  std::unique_ptr<gantry::testing::Process> process_;
};

}  // namespace gantry::sim
