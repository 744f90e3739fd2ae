// Placement by LocalQueue end to end: gantry reads each simulated cluster's
// LocalQueues and sends a job's Workload copy only where its LocalQueue
// exists (elsewhere Kueue would leave it pending for ever), saying why in
// the Nominated event; a job whose LocalQueue exists nowhere waits, never
// Unschedulable (an operator may create it).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "dispatch_fixture.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

// Three CPU clusters; team-a's LocalQueue exists in c2 only.
constexpr const char* kTeamAOnlyInC2 = R"(clusters:
- {name: c1, localQueues: [team-b/team-b]}
- {name: c2, localQueues: [team-a/team-a, team-b/team-b]}
- {name: c3, localQueues: [team-b/team-b]}
)";

// The message of the job's first event of that reason ("" when none).
std::string EventMessage(DispatchFleet& fleet, const std::string& ns, const std::string& name,
                         const std::string& reason) {
  for (const nlohmann::json& e : fleet.Events(ns, name)) {
    if (e.value("reason", "") == reason) return e.value("message", "");
  }
  return "";
}

}  // namespace

TEST_CASE("a job whose LocalQueue exists in one of three clusters gets its one copy there and runs there",
          "[e2e][dispatch][queues]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTeamAOnlyInC2;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  REQUIRE(fleet.Submit("team-a", SimJobYaml("placed", "team-a", 2, 0, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "placed", {"Succeeded", "Failed", "Unschedulable"}, seconds(40)));
  const nlohmann::json job = fleet.Job("team-a", "placed");
  INFO(job["status"].dump());
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["cluster"] == "c2");
  CHECK(job["status"]["epoch"] == 1);

  // No copy, and no job, was ever created in c1 or c3.
  CHECK(fleet.RemoteCalls("c2", "create", 201) >= 2);  // its Workload, then its Job
  CHECK(fleet.RemoteCalls("c1", "create", 201) == 0);
  CHECK(fleet.RemoteCalls("c3", "create", 201) == 0);
  std::vector<std::string> where;
  for (const nlohmann::json& row : fleet.RemoteObjects("team-a", "placed")) where.push_back(row.value("cluster", ""));
  CHECK(std::all_of(where.begin(), where.end(), [](const std::string& c) { return c == "c2"; }));

  // The nomination says why the others were left out.
  const std::string nominated = EventMessage(fleet, "team-a", "placed", "Nominated");
  CHECK_THAT(nominated, Catch::StartsWith("epoch 1: Workload copies to c2; left out: "));
  for (const char* c : {"c1", "c3"}) {
    CHECK_THAT(nominated, Catch::Contains(std::string(c) + ": LocalQueue team-a/team-a does not exist here"));
  }
  CHECK(fleet.Runs(fleet.Uid("team-a", "placed")).size() == 1);

  // A job whose LocalQueue exists nowhere waits for one to be created: not Unschedulable.
  REQUIRE(fleet.Submit("team-c", SimJobYaml("queueless", "team-c", 1, 0, "1s")) == 201);
  const bool waits = WaitFor([&] {
    const nlohmann::json j = fleet.Job("team-c", "queueless");
    return j.is_object() && j["status"].value("phase", "") != "" && !j["status"].value("message", "").empty();
  }, seconds(20));
  const nlohmann::json queueless = fleet.Job("team-c", "queueless");
  INFO(queueless["status"].dump());
  REQUIRE(waits);
  CHECK(queueless["status"]["phase"] == "Queued");
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a job waiting for its LocalQueue goes where an operator creates it, without waiting for a resync",
          "[e2e][dispatch][queues]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = R"(clusters:
- {name: c1, localQueues: [team-b/team-b]}
- {name: c2, localQueues: [team-b/team-b]}
)";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("patient", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(WaitFor([&] {
    const nlohmann::json j = fleet.Job("team-a", "patient");
    return j.is_object() && j["status"].value("phase", "") == "Queued" && !j["status"].value("message", "").empty();
  }, seconds(20)));

  // The LocalQueue appears in c2: the job's next pass would be a resync
  // (30 s) away; the probe that sees the LocalQueue wakes it.
  REQUIRE(fleet.Ctl({"local-queue", "c2", "team-a/team-a"}).code == 0);
  CHECK(fleet.WaitPhase("team-a", "patient", {"Running", "Succeeded"}, seconds(12)));
  const nlohmann::json job = fleet.Job("team-a", "patient");
  INFO(job["status"].dump());
  CHECK(job["status"]["cluster"] == "c2");
  CHECK(fleet.RemoteCalls("c1", "create", 201) == 0);
}

// Kueue gives a Workload its WorkloadPriorityClass's value only when it
// builds the Workload from a job; for gantry's prebuilt copies gantry reads
// each cluster's classes and writes the value itself.
TEST_CASE("a job naming a WorkloadPriorityClass goes where the class exists, its copy carrying that cluster's value",
          "[e2e][dispatch][queues]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = R"(clusters:
- {name: c1, localQueues: [team-a/team-a]}
- {name: c2, localQueues: [team-a/team-a]}
- {name: c3, localQueues: [team-a/team-a]}
)";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  std::string yaml = SimJobYaml("urgent", "team-a", 1, 0, "60s");
  const std::string meta = "    metadata:\n      annotations:";
  REQUIRE(yaml.find(meta) != std::string::npos);
  yaml.replace(yaml.find(meta), meta.size(),
               "    metadata:\n      labels: {kueue.x-k8s.io/priority-class: prod}\n      annotations:");

  // No cluster has the class yet: the job waits, it does not fail.
  REQUIRE(fleet.Submit("team-a", yaml) == 201);
  REQUIRE(WaitFor([&] {
    const nlohmann::json j = fleet.Job("team-a", "urgent");
    return j.is_object() && j["status"].value("phase", "") == "Queued" && !j["status"].value("message", "").empty();
  }, seconds(20)));
  CHECK(fleet.RemoteCalls("c1", "create", 201) + fleet.RemoteCalls("c2", "create", 201) +
            fleet.RemoteCalls("c3", "create", 201) ==
        0);

  // An operator creates it in c2, as kubectl would: the probe that reads it
  // wakes the job, which goes there alone.
  auto c2 = fleet.RemoteClient("c2");
  REQUIRE(c2);
  const nlohmann::json wpc = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                              {"kind", "WorkloadPriorityClass"},
                              {"metadata", {{"name", "prod"}}},
                              {"value", 4242}};
  auto created = c2->Create("/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses", wpc);
  REQUIRE(created.ok());
  REQUIRE(created->status == 201);
  REQUIRE(fleet.WaitPhase("team-a", "urgent", {"Running", "Succeeded", "Failed"}, seconds(20)));
  const nlohmann::json job = fleet.Job("team-a", "urgent");
  INFO(job["status"].dump());
  CHECK(job["status"]["cluster"] == "c2");
  CHECK(fleet.RemoteCalls("c1", "create", 201) == 0);
  CHECK(fleet.RemoteCalls("c3", "create", 201) == 0);

  const std::string remote = dispatch::RemoteName("urgent", fleet.Uid("team-a", "urgent"));
  auto copy = fleet.RemoteGet("c2", RemoteWorkloadPath("team-a", remote));
  REQUIRE(copy.status == 200);
  CHECK(copy.body["spec"]["priority"] == 4242);
  CHECK(copy.body["spec"]["priorityClassRef"] ==
        nlohmann::json({{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "prod"}}));
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a request the worker's Kueue excludes by prefix needs no quota there: the job runs there, not Unschedulable",
          "[e2e][dispatch][queues]") {
  DispatchFleetOptions o;
  // c1's Kueue is configured with resources.excludeResourcePrefixes (and its
  // clusters.d file says so); c2's counts every resource.
  o.sim_config_yaml = R"(clusters:
- {name: c1, excludeResourcePrefixes: [ephemeral-storage]}
- {name: c2}
)";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  std::string doc = SimJobYaml("scratch", "team-a", 1, 0, "1s");
  const std::string plain = R"(requests: {cpu: "1", memory: 1Gi})";
  REQUIRE(doc.find(plain) != std::string::npos);
  doc.replace(doc.find(plain), plain.size(), R"(requests: {cpu: "1", memory: 1Gi, ephemeral-storage: 20Gi})");
  REQUIRE(fleet.Submit("team-a", doc) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "scratch", {"Succeeded", "Failed", "Unschedulable"}, seconds(40)));
  const nlohmann::json job = fleet.Job("team-a", "scratch");
  INFO(job["status"].dump());
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["cluster"] == "c1");
  CHECK_THAT(EventMessage(fleet, "team-a", "scratch", "Nominated"),
             Catch::Contains("c2: needs 20Gi ephemeral-storage; ClusterQueue cluster-queue (LocalQueue team-a/team-a) "
                             "has no quota for ephemeral-storage"));
  CHECK(fleet.RemoteCalls("c2", "create", 201) == 0);
  CHECK(fleet.Runs(fleet.Uid("team-a", "scratch")).size() == 1);
}

}  // namespace gantry::testing
