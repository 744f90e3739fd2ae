// Builders shared by the simulator's tests: Workload and Job objects in the
// shapes gantry's dispatcher writes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster_state.h"
#include "gantry/http/message.h"
#include "sim_config.h"

namespace gantry::sim::testing {

// A Workload with one pod set of `count` pods, each asking `gpus` GPUs and 1 cpu.
nlohmann::json MakeWorkload(const std::string& name, int count, int gpus, const std::string& queue = "team-a",
                            int priority = 0);
// A suspended Job that names its prebuilt Workload.
nlohmann::json MakeJob(const std::string& name, const std::string& workload, const std::string& job_uid,
                       const std::string& duration = "1s");
// One H100 cluster: nodes x 8 GPUs, no admission delay, 10 s jobs.
ClusterConfig SmallCluster(const std::string& name = "c1", int nodes = 2);

// The watch events queued on a stream so far, parsed.
std::vector<nlohmann::json> StreamEvents(const std::shared_ptr<http::ResponseStream>& stream);

// One GPU in milli-units (ResourceList values).
inline constexpr int64_t kGpu = 1000;

// One small cluster's whole state (no HTTP) on a fake clock, with the
// resources most tests touch. Tests derive their fixtures from it.
struct ClusterFixture {
  explicit ClusterFixture(ClusterConfig config = SmallCluster("c1", 2))  // 16 GPUs
      : state(std::move(config), &journal, &clock) {}

  FakeClock clock;
  Journal journal;
  ClusterState state;
  const ResourceInfo& wl = ResourceByPlural("workloads");
  const ResourceInfo& jobs = ResourceByPlural("jobs");

  // The stored object, which must exist.
  nlohmann::json Get(const ResourceInfo& res, const std::string& name, const std::string& ns = "team-a");
  // GPUs that admitted Workloads hold.
  int64_t ReservedGpus();
  void TickAfter(int64_t ms) {
    clock.Advance(ms);
    state.Tick();
  }
};

}  // namespace gantry::sim::testing
