// KubeProber against real gantry-sim clusters over HTTPS: quota read back,
// a certificate from another CA refused, a bad token refused, a stalled
// server cut off by the deadline.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "gantry/common/clock.h"
#include "gantry/inventory/exec_credential.h"
#include "gantry/inventory/kubeconfig.h"
#include "gantry/inventory/token_source.h"
#include "gantry/job/quantity.h"
#include "gantry/kube/kube_prober.h"
#include "gantry/placement/place.h"
#include "process.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

std::string Sim() { return std::string(GANTRY_BIN_DIR "/gantry-sim"); }

inventory::ClusterConfig ConfigFor(const std::string& dir, const std::string& name) {
  inventory::ClusterConfig c;
  c.name = name;
  c.kubeconfig = dir + "/" + name + ".kubeconfig";
  return c;
}

// A ClusterQueueList of one ClusterQueue per entry of `memory`, each with
// that nominalQuota of memory and 1 of it reserved.
nlohmann::json ClusterQueueList(const std::vector<nlohmann::json>& memory) {
  nlohmann::json items = nlohmann::json::array();
  for (std::size_t i = 0; i < memory.size(); ++i) {
    nlohmann::json res = {{"name", "memory"}, {"nominalQuota", memory[i]}};
    items.push_back(
        {{"metadata", {{"name", "cq-" + std::to_string(i)}}},
         {"spec",
          {{"resourceGroups", {{{"flavors", {{{"name", "default"}, {"resources", {res}}}}}}}}}},
         {"status",
          {{"pendingWorkloads", 1},
           {"flavorsReservation",
            {{{"name", "default"}, {"resources", {{{"name", "memory"}, {"total", "1"}}}}}}}}}});
  }
  return {{"kind", "ClusterQueueList"}, {"items", items}};
}

}  // namespace

TEST_CASE(
    "ClusterQueue quotas too large for int64 saturate, and do not wrap negative or fail the probe",
    "[kube][prober]") {
  // Memory is bytes x 1000: ten 1Pi queues are 1.1e19 milli, past int64.
  inventory::CapacityReading ten =
      kube::ParseClusterQueues(ClusterQueueList(std::vector<nlohmann::json>(10, "1Pi")));
  CHECK(ten.unreadable.empty());
  CHECK(ten.quota.at("memory").nominal_milli == kMaxQuantityMilli);
  CHECK(ten.quota.at("memory").reserved_milli == 10'000);
  CHECK(ten.pending_workloads == 10);
  CHECK(ten.cluster_queues.size() == 10);
  // One "unlimited" placeholder, as a string or a JSON number.
  for (const nlohmann::json& huge : {nlohmann::json("10Pi"), nlohmann::json("1000Pi"),
                                     nlohmann::json("1e30"), nlohmann::json(uint64_t{1} << 63)}) {
    INFO(huge.dump());
    inventory::CapacityReading one = kube::ParseClusterQueues(ClusterQueueList({huge, "1Gi"}));
    CHECK(one.unreadable.empty());
    CHECK(one.quota.at("memory").nominal_milli == kMaxQuantityMilli);
  }
  // Below the limit the sum is exact.
  CHECK(
      kube::ParseClusterQueues(ClusterQueueList({"1Pi", "2Gi"})).quota.at("memory").nominal_milli ==
      ((int64_t{1} << 50) + (int64_t{2} << 30)) * 1000);

  // The cluster stays a candidate for a job that fits: a wrapped sum was
  // clamped to 0 and excluded it on Quota for good.
  placement::ClusterSnapshot cluster;
  cluster.name = "c1";
  cluster.health = placement::ClusterHealth::kReady;
  cluster.capacity.quota = ten.quota;
  placement::JobDemand job;
  job.pod_sets.push_back({"main", 4, {{"memory", (int64_t{64} << 30) * 1000}}});
  placement::Decision d = placement::Place(job, std::span(&cluster, 1));
  CHECK_FALSE(d.unschedulable);
  CHECK(d.candidates == std::vector<std::string>{"c1"});
}

TEST_CASE(
    "a ClusterQueue list that cannot be read is a reading marked unreadable, not a probe error",
    "[kube][prober]") {
  struct Case {
    nlohmann::json list;
    const char* want;  // in `unreadable`
  };
  nlohmann::json bad_reserved = ClusterQueueList({"1Gi"});
  bad_reserved["items"][0]["status"]["flavorsReservation"][0]["resources"][0]["total"] = "lots";
  nlohmann::json bad_pending = ClusterQueueList({"1Gi"});
  bad_pending["items"][0]["status"]["pendingWorkloads"] = "many";
  const Case cases[] = {
      {ClusterQueueList({"1Gi", "plenty"}),
       "ClusterQueue cq-1: nominalQuota of memory: invalid quantity \"plenty\""},
      {ClusterQueueList({"-1Gi"}),
       "ClusterQueue cq-0: nominalQuota of memory: quantity \"-1Gi\" must not be negative"},
      {ClusterQueueList({true}), "nominalQuota of memory: quantity must be a string or a number"},
      {bad_reserved, "ClusterQueue cq-0: total of memory: invalid quantity \"lots\""},
      {bad_pending, "ClusterQueue cq-0: a field of an unexpected type"},
      {nlohmann::json::array(), "not a Kubernetes list"},
      {{{"kind", "Status"}}, "not a Kubernetes list"},
  };
  for (const Case& c : cases) {
    INFO(c.list.dump());
    inventory::CapacityReading r = kube::ParseClusterQueues(c.list);
    CHECK_THAT(r.unreadable, Catch::Contains(c.want));
    CHECK(r.quota.empty());
  }
}

TEST_CASE("only the API server's own 401 or 403 over verified TLS counts as a refusal", "[kube][prober]") {
  const nlohmann::json status401 = {{"kind", "Status"}, {"apiVersion", "v1"}, {"code", 401}, {"reason", "Unauthorized"}};
  const nlohmann::json status403 = {{"kind", "Status"}, {"apiVersion", "v1"}, {"code", 403}, {"reason", "Forbidden"}};
  auto reply = [](int code, nlohmann::json body) {
    kube::KubeReply r;
    r.status = code;
    r.body = std::move(body);
    return r;
  };
  CHECK(kube::RefusalOrOutage(reply(401, status401), true, "x").code() == Code::kUnauthenticated);
  CHECK(kube::RefusalOrOutage(reply(403, status403), true, "x").code() == Code::kPermissionDenied);
  // A proxy's page, another answer, or TLS not verified: an outage.
  CHECK(kube::RefusalOrOutage(reply(401, nullptr), true, "x").code() == Code::kUnavailable);
  CHECK(kube::RefusalOrOutage(reply(403, {{"error", "forbidden"}}), true, "x").code() == Code::kUnavailable);
  CHECK(kube::RefusalOrOutage(reply(503, nullptr), true, "x").code() == Code::kUnavailable);
  CHECK(kube::RefusalOrOutage(reply(401, status401), false, "x").code() == Code::kUnavailable);

  const Status no_token(Code::kUnavailable, "exec plugin aws: exited with code 255");
  auto without = [&](Result<kube::KubeReply> r, bool verified) {
    return kube::WithoutTokenOutcome(r, verified, no_token);
  };
  CHECK(without(reply(200, nullptr), true).code() == Code::kUnauthenticated);
  CHECK(without(reply(401, status401), true).code() == Code::kUnauthenticated);
  CHECK_THAT(without(reply(401, status401), true).message(), Catch::Contains("exited with code 255"));
  // A load balancer answering 5xx in front of a dead cluster: an outage.
  CHECK(without(reply(503, nullptr), true).code() == Code::kUnavailable);
  CHECK_THAT(without(reply(503, nullptr), true).message(), Catch::Contains("answered 503"));
  CHECK(without(reply(401, nullptr), true).code() == Code::kUnavailable);
  CHECK(without(reply(200, nullptr), false).code() == Code::kUnavailable);
  CHECK(without(Status::Deadline("timed out"), true).code() == Code::kDeadlineExceeded);
}

TEST_CASE("a cluster's clock offset is read from the Date of a quick answer", "[kube][prober]") {
  const int64_t sent = *ParseRfc3339("2026-12-07T07:30:00Z");
  // Answered in 200 ms, its Date a minute and a half ahead: the offset is
  // the Date's second, plus half a second, less the round trip's midpoint.
  CHECK(kube::ClockOffsetMs("Mon, 07 Dec 2026 07:31:30 GMT", sent, sent + 200) == 90'400);
  CHECK(kube::ClockOffsetMs("Mon, 07 Dec 2026 07:25:00 GMT", sent, sent + 200) == -299'600);
  CHECK(kube::ClockOffsetMs("Mon, 07 Dec 2026 07:30:00 GMT", sent, sent + 200) == 400);  // in step: within a second
  // Not told: no header, one not read, a round trip longer than the header's resolution.
  CHECK_FALSE(kube::ClockOffsetMs("", sent, sent + 200));
  CHECK_FALSE(kube::ClockOffsetMs("yesterday", sent, sent + 200));
  CHECK_FALSE(kube::ClockOffsetMs("Mon, 07 Dec 2026 07:31:30 GMT", sent, sent + 1'500));
}

TEST_CASE("probing simulated clusters over HTTPS", "[kube][e2e]") {
  if (ReadFile(Sim()).empty()) {
    WARN("gantry-sim was not built: skipping");
    return;
  }
  TempDir dir;
  std::string sim_dir = dir.File("sim");
  Process sim({Sim(), "--clusters", "2", "--out-dir", sim_dir}, dir.path());
  REQUIRE(WaitFor([&] { return !ReadFile(sim_dir + "/ready").empty(); }, std::chrono::seconds(20)));
  auto c1 = inventory::LoadCredentials(ConfigFor(sim_dir, "c1"));
  auto c2 = inventory::LoadCredentials(ConfigFor(sim_dir, "c2"));
  REQUIRE(c1.ok());
  REQUIRE(c2.ok());

  SECTION("reads the ClusterQueue's quota") {
    kube::KubeProber prober;
    auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(reading.ok());
    CHECK(reading->quota.at("nvidia.com/gpu").nominal_milli == 32'000);
    CHECK(reading->quota.at("nvidia.com/gpu").reserved_milli == 0);
    CHECK(reading->cluster_queues == std::vector<std::string>{"cluster-queue"});
    // Its answers carry a Date: its clock, on this machine, is gantry's.
    REQUIRE(reading->clock_offset_ms);
    CHECK(std::abs(*reading->clock_offset_ms) <= 1'500);
    // The ClusterQueue described, and every namespace's LocalQueues mapped to it.
    REQUIRE(reading->queues);
    const placement::ClusterQueues& queues = *reading->queues;
    REQUIRE(queues.by_name.count("cluster-queue"));
    const placement::ClusterQueueInfo& cq = queues.by_name.at("cluster-queue");
    CHECK(cq.activity == placement::QueueActivity::kActive);
    REQUIRE(cq.resources.count("nvidia.com/gpu"));
    CHECK(cq.resources.at("nvidia.com/gpu").at(0).nominal_milli == 32'000);
    CHECK(queues.local_queues_known);
    CHECK(queues.local_queues.at("team-a/team-a") == "cluster-queue");
    CHECK(queues.local_queues.at("default/user-queue") == "cluster-queue");
  }
  SECTION("LocalQueues forbidden to the token: a reading all the same, the mapping unknown") {
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1", "localqueues"}).code == 0);
    kube::KubeProber prober;
    auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(reading.ok());
    CHECK(reading->unreadable.empty());
    CHECK(reading->quota.at("nvidia.com/gpu").nominal_milli == 32'000);
    REQUIRE(reading->queues);
    CHECK_FALSE(reading->queues->local_queues_known);
    CHECK_THAT(reading->queues->local_queues_error, Catch::Contains("forbidden (403"));
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1"}).code == 0);
    auto again = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(again.ok());
    CHECK(again->queues->local_queues_known);
  }
  SECTION("WorkloadPriorityClasses: listed; forbidden, the reading stands with them unknown; a 500 keeps the last") {
    kube::KubeProber prober;
    auto listed = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(listed.ok());
    REQUIRE(listed->queues);
    CHECK(listed->queues->priority_classes_known);  // none made yet: known, and empty
    CHECK(listed->queues->priority_classes.empty());
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1", "workloadpriorityclasses=500"}).code == 0);
    auto passing = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(passing.ok());
    CHECK(passing->queues->priority_classes_known);  // as the last list gave them
    CHECK(passing->queues->stamp == listed->queues->stamp);
    // An entry of the same name that now leads to another server (c2's,
    // after a reload, say) does not borrow c1's classes on a failure there.
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c2", "workloadpriorityclasses=500"}).code == 0);
    auto elsewhere = prober.Probe(ConfigFor(sim_dir, "c1"), *c2);
    REQUIRE(elsewhere.ok());
    CHECK_FALSE(elsewhere->queues->priority_classes_known);
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c2"}).code == 0);
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1", "workloadpriorityclasses"}).code == 0);
    auto forbidden = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(forbidden.ok());
    CHECK(forbidden->unreadable.empty());
    CHECK(forbidden->queues->local_queues_known);
    CHECK_FALSE(forbidden->queues->priority_classes_known);
    CHECK_THAT(forbidden->queues->priority_classes_error, Catch::Contains("forbidden (403"));
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1"}).code == 0);
  }
  SECTION("a ClusterQueue list answering 404 or 500 leaves the cluster up, its capacity unreadable") {
    for (const char* code : {"404", "500"}) {
      INFO(code);
      REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1", std::string("clusterqueues=") + code}).code ==
              0);
      kube::KubeProber prober;
      auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
      REQUIRE(reading.ok());
      CHECK(reading->quota.empty());
      CHECK_THAT(reading->unreadable, Catch::Contains(std::string("answered ") + code));
    }
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1"}).code == 0);
  }
  SECTION("a certificate signed by another CA is refused") {
    inventory::ClusterCredentials wrong = *c1;
    wrong.ca_pem = c2->ca_pem;
    kube::KubeProber prober;
    auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), wrong);
    REQUIRE_FALSE(reading.ok());
    CHECK(reading.status().message().find("handshake") != std::string::npos);
  }
  SECTION("a wrong token is refused, and the token is not in the error") {
    inventory::ClusterCredentials wrong = *c1;
    wrong.token_source = inventory::TokenSource::Static("wrong-token-0123456789");
    kube::KubeProber prober;
    auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), wrong);
    REQUIRE_FALSE(reading.ok());
    CHECK(reading.status().message().find("401") != std::string::npos);
    CHECK(reading.status().message().find("wrong-token") == std::string::npos);
    CHECK(reading.status().code() == Code::kUnauthenticated);  // up, refusing us: not an outage
  }
  SECTION("no token to send: the cluster asked without one answers, so it is up and refuses us") {
    inventory::ExecConfig failing;
    failing.api_version = std::string(inventory::kExecApiV1);
    failing.command = "/bin/false";
    inventory::ClusterCredentials broken = *c1;
    broken.token_source = inventory::TokenSource::FromExec(failing);
    kube::KubeProber prober;
    auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), broken);
    REQUIRE_FALSE(reading.ok());
    CHECK(reading.status().code() == Code::kUnauthenticated);
    CHECK(reading.status().message().find("no token") != std::string::npos);
    CHECK(reading.status().message().find("the cluster answers") != std::string::npos);

    // Partitioned as well: an outage like any other.
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "partition", "c1", "2"}).code == 0);
    kube::KubeProber quick(std::chrono::milliseconds(300));
    auto cut = quick.Probe(ConfigFor(sim_dir, "c1"), broken);
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "heal", "c1"}).code == 0);
    REQUIRE_FALSE(cut.ok());
    CHECK(cut.status().code() != Code::kUnauthenticated);
    CHECK(cut.status().code() != Code::kPermissionDenied);
    CHECK(cut.status().message().find("does not answer") != std::string::npos);
  }
  SECTION("ClusterQueues forbidden to the token (RBAC drift): up and taking it, only without a reading") {
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1", "clusterqueues"}).code == 0);
    kube::KubeProber prober;
    auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(reading.ok());
    CHECK(reading->quota.empty());
    CHECK(reading->unreadable.find("403") != std::string::npos);
    CHECK(reading->unreadable.find("forbidden") != std::string::npos);
    // Other resources are still allowed, and so is everything once allowed again.
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "forbid", "c1"}).code == 0);
    auto again = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    REQUIRE(again.ok());
    CHECK(again->unreadable.empty());
    CHECK(again->quota.at("nvidia.com/gpu").nominal_milli == 32'000);
  }
  SECTION("probes of one cluster from several threads at once each get their answer") {
    // The Fleet's probe workers share one prober, and a reload can overlap
    // two probes of one cluster: they must not share a connection.
    kube::KubeProber prober;
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 25; ++i) {
          auto reading = prober.Probe(ConfigFor(sim_dir, i % 2 ? "c1" : "c2"), i % 2 ? *c1 : *c2);
          if (reading.ok() && reading->quota.count("nvidia.com/gpu")) ++ok;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    CHECK(ok == 100);
  }
  SECTION("a stalled apiserver hits the deadline") {
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "partition", "c1", "2"}).code == 0);
    kube::KubeProber prober(std::chrono::milliseconds(500));
    auto start = std::chrono::steady_clock::now();
    auto reading = prober.Probe(ConfigFor(sim_dir, "c1"), *c1);
    auto took = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(reading.ok());
    CHECK(reading.status().code() == Code::kDeadlineExceeded);
    CHECK(took < std::chrono::seconds(5));
    REQUIRE(Run({Sim(), "ctl", "--out-dir", sim_dir, "heal", "c1"}).code == 0);
  }
}

}  // namespace gantry::testing
