// The real kubectl against a simulated cluster (skipped where kubectl is absent).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "sim_e2e_util.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

TEST_CASE("kubectl talks to gantry-sim", "[sim][kubectl]") {
  if (gantry::testing::Run({"sh", "-c", "command -v kubectl"}).code != 0) {
    WARN("kubectl is not on the PATH: skipping the kubectl test");
    return;
  }
  SimProcess sim(1);
  std::string kc = sim.dir() + "/c1.kubeconfig";
  auto kubectl = [&](std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), {"kubectl", "--kubeconfig", kc, "--request-timeout=10s"});
    return gantry::testing::Run(args, {{"HOME", sim.dir()}}, stdin_text);
  };
  auto cq = kubectl({"get", "clusterqueues"});
  INFO(cq.err);
  CHECK(cq.code == 0);
  CHECK(cq.out.find("cluster-queue") != std::string::npos);

  json wl = testing::MakeWorkload("from-kubectl", 1, 1);
  wl["metadata"]["namespace"] = "team-a";
  auto created = kubectl({"create", "--validate=false", "-f", "-"}, wl.dump());
  INFO(created.err);
  CHECK(created.code == 0);
  CHECK(created.out.find("from-kubectl") != std::string::npos);

  auto list = kubectl({"get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"});
  INFO(list.err);
  REQUIRE(list.code == 0);
  json items = json::parse(list.out)["items"];
  REQUIRE(items.size() == 1);
  CHECK(items[0]["metadata"]["name"] == "from-kubectl");

  CHECK(kubectl({"get", "jobs", "-A"}).code == 0);
  auto raw = kubectl({"get", "--raw", "/apis/kueue.x-k8s.io/v1beta2"});
  CHECK(raw.out.find("APIResourceList") != std::string::npos);

  auto deleted = kubectl({"delete", "workload", "-n", "team-a", "from-kubectl"});
  INFO(deleted.err);
  CHECK(deleted.code == 0);
  CHECK(deleted.out.find("deleted") != std::string::npos);
  CHECK(kubectl({"get", "workload", "-n", "team-a", "from-kubectl"}).code != 0);
}

}  // namespace
}  // namespace gantry::sim
