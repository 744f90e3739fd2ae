// Dispatch scenarios end to end: whole gangs, Unschedulable, two clusters
// admitting at once, cancel in every phase, and a removed, cordoned or capacity-unreadable cluster.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "dispatch_fixture.h"
#include "gantry/http/client.h"
#include "gantry/kube/kube_client.h"

namespace gantry::testing {
namespace {

const char* kTwoClusters = kTwoH100Clusters;

DispatchFleetOptions TwoClusters() {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoClusters;
  return o;
}

// One simulated cluster, and these lines in gantry.yaml.
DispatchFleetOptions OneCluster(const std::string& daemon_yaml) {
  DispatchFleetOptions o;
  o.sim_config_yaml = "clusters:\n- {name: c1}\n";
  o.daemon_config_yaml = daemon_yaml;
  return o;
}

const char* kListTrainJob = "genericKinds:\n- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob}";

// A Kubeflow TrainJob of `nodes` pods that runs for `duration` in gantry-sim.
// It has no adapter, so its pod sets are given.
std::string TrainJobYaml(const std::string& name, int nodes, const std::string& duration) {
  return fmt::format(R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {{name: {0}, namespace: team-a}}
spec:
  queue: team-a
  template:
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    metadata:
      annotations: {{sim.gantry.dev/duration: "{2}"}}
    spec:
      trainer: {{numNodes: {1}}}
  podSets:
  - name: node
    count: {1}
    template:
      spec:
        containers:
        - {{name: trainer, image: registry.example.com/train:1, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
)",
                     name, nodes, duration);
}

// What one simulated cluster holds of gantry's objects.
struct RemoteCounts {
  int workloads = 0;
  int jobs = 0;
};

RemoteCounts Remote(DispatchFleet& fleet, const std::string& cluster) {
  RemoteCounts out{-1, -1};
  auto client = fleet.RemoteClient(cluster);
  if (!client) return out;
  kube::ListOptions opts;
  opts.label_selector = "kueue.x-k8s.io/multikueue-origin=gantry";
  auto w = client->List("/apis/kueue.x-k8s.io/v1beta2/workloads", opts);
  auto j = client->List("/apis/batch/v1/jobs", opts);
  if (!w.ok() || !j.ok() || !w->ok() || !j->ok()) return out;
  out.workloads = static_cast<int>(w->body["items"].size());
  out.jobs = static_cast<int>(j->body["items"].size());
  return out;
}

bool RemoteEmpty(DispatchFleet& fleet, std::initializer_list<const char*> clusters) {
  for (const char* c : clusters) {
    RemoteCounts r = Remote(fleet, c);
    if (r.workloads != 0 || r.jobs != 0) return false;
  }
  return true;
}

std::string GpuJob(const std::string& name, int pods, int gpus, const std::string& duration,
                   const std::string& extra = "") {
  return SimJobYaml(name, "team-a", pods, gpus, duration, extra);
}

int Runs(DispatchFleet& fleet, const std::string& uid) {
  int n = 0;
  for (auto& run : fleet.Journal()) n += run.value("jobUid", "") == uid;
  return n;
}

int Cancel(DispatchFleet& fleet, const std::string& name) {
  return Cli(fleet.url(), {"cancel", name, "-n", "team-a"}).code;
}

// The reason of team-a/name's OwnerUnreachable condition ("" when it has none).
std::string OwnerUnreachableReason(DispatchFleet& fleet, const std::string& name) {
  auto j = fleet.Job("team-a", name);
  if (!j.is_object()) return std::string();
  for (const auto& c : j["status"].value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == "OwnerUnreachable") return c.value("reason", "");
  }
  return std::string();
}

// team-a/name, held in c1 while c1 kept gantry from listing, finished there
// at epoch 1, its condition lifted, and ran once.
void CheckFinishedOnceInC1(DispatchFleet& fleet, const std::string& name) {
  REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded", "Failed"}, std::chrono::seconds(40)));
  auto held = fleet.Job("team-a", name);
  CHECK(held["status"]["phase"] == "Succeeded");
  CHECK(held["status"]["cluster"] == "c1");
  CHECK(held["status"]["epoch"] == 1);
  CHECK(OwnerUnreachableReason(fleet, name).empty());
  CHECK(Runs(fleet, fleet.Uid("team-a", name)) == 1);
}

}  // namespace

TEST_CASE("a gang waits whole for one cluster, never split, too big for any is Unschedulable at once",
          "[e2e][dispatch][gang]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // 12 of 16 GPUs busy in each cluster: 8 free in total, 4 in each.
  REQUIRE(fleet.Submit("team-a", GpuJob("block-1", 2, 6, "4s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.Submit("team-a", GpuJob("block-2", 2, 6, "4s", "  placement: {clusters: [c2]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "block-1", {"Running"}));
  REQUIRE(fleet.WaitPhase("team-a", "block-2", {"Running"}));
  // 2 pods x 4 GPUs: fits the free sum, not any one cluster.
  REQUIRE(fleet.Submit("team-a", GpuJob("gang", 2, 4, "500ms")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "gang", {"Nominating"}));
  // 40 GPUs: more than either cluster's nominal quota. The tenant is told
  // as it submits, each cluster's reason with it.
  const std::string huge_file = fleet.dir().File("huge.yaml");
  WriteFile(huge_file, GpuJob("huge", 5, 8, "1s"));
  const RunResult submitted = Cli(fleet.url(), {"submit", "-f", huge_file, "-n", "team-a"});
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.code == 0);
  CHECK_THAT(submitted.err, Catch::Contains("no configured cluster can ever run this job as a whole (c1: ") &&
                                Catch::Contains("it will be Unschedulable"));
  REQUIRE(fleet.WaitPhase("team-a", "huge", {"Unschedulable"}, std::chrono::seconds(15)));
  auto huge = fleet.Job("team-a", "huge");
  CHECK_THAT(huge["status"].value("message", ""), Catch::Contains("c1:") && Catch::Contains("c2:"));
  // While the blockers run, the gang has copies in both clusters and no lease.
  CHECK(fleet.Phase("team-a", "gang") == "Nominating");
  CHECK(fleet.Job("team-a", "gang")["status"].value("cluster", "") == "");
  REQUIRE(fleet.WaitPhase("team-a", "gang", {"Succeeded"}, std::chrono::seconds(60)));
  std::string uid = fleet.Job("team-a", "gang")["metadata"]["uid"];
  CHECK(Runs(fleet, uid) == 1);  // one run, in one cluster: the whole gang
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("two clusters admitting the same job at once: one lease, one run, the other copy gone",
          "[e2e][dispatch][lease]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  for (int i = 0; i < 10; ++i) {
    REQUIRE(fleet.Submit("team-a", GpuJob(fmt::format("race-{}", i), 1, 1, "300ms")) == 201);
  }
  for (int i = 0; i < 10; ++i) {
    std::string name = fmt::format("race-{}", i);
    REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded"}, std::chrono::seconds(60)));
    auto job = fleet.Job("team-a", name);
    CHECK(Runs(fleet, job["metadata"]["uid"]) == 1);
    int leases = 0;
    for (auto& e : fleet.Events("team-a", name)) leases += e.value("reason", "") == "LeaseTaken";
    CHECK(leases == 1);
  }
  CHECK(fleet.Ctl({"check"}).code == 0);
  // Finished jobs leave nothing behind in either cluster.
  CHECK(WaitFor([&] { return RemoteEmpty(fleet, {"c1", "c2"}); }, std::chrono::seconds(20)));
}

TEST_CASE("cancel while nominating, while running, and while the owner is partitioned", "[e2e][dispatch][cancel]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  // Nominating: every GPU is taken, so the copies wait in both clusters.
  REQUIRE(fleet.Submit("team-a", GpuJob("hog-1", 2, 8, "60s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.Submit("team-a", GpuJob("hog-2", 2, 8, "60s", "  placement: {clusters: [c2]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "hog-1", {"Running"}));
  REQUIRE(fleet.WaitPhase("team-a", "hog-2", {"Running"}));
  REQUIRE(fleet.Submit("team-a", GpuJob("waiting", 1, 8, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "waiting", {"Nominating"}));
  REQUIRE(Cancel(fleet, "waiting") == 0);
  REQUIRE(fleet.WaitPhase("team-a", "waiting", {"Cancelled"}, std::chrono::seconds(20)));

  // Running: the remote job is deleted and its run ends.
  REQUIRE(Cancel(fleet, "hog-2") == 0);
  REQUIRE(fleet.WaitPhase("team-a", "hog-2", {"Cancelled"}, std::chrono::seconds(20)));
  std::string hog2 = fleet.Job("team-a", "hog-2")["metadata"]["uid"];
  CHECK(WaitFor([&] {
    for (auto& run : fleet.Journal()) {
      if (run.value("jobUid", "") == hog2) return run.contains("endMs");
    }
    return false;
  }, std::chrono::seconds(10)));
  CHECK(WaitFor([&] { return RemoteEmpty(fleet, {"c2"}); }, std::chrono::seconds(20)));

  // Owner partitioned: Cancelling until the cluster answers again.
  REQUIRE(fleet.Ctl({"partition", "c1"}).code == 0);
  REQUIRE(Cancel(fleet, "hog-1") == 0);
  REQUIRE(WaitFor([&] {
    auto j = fleet.Job("team-a", "hog-1");
    return j.is_object() && j["status"]["phase"] == "Cancelling" &&
           j["status"].value("message", "").find("c1") != std::string::npos;
  }, std::chrono::seconds(30)));
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "hog-1", {"Cancelled"}, std::chrono::seconds(30)));
  CHECK(WaitFor([&] { return RemoteEmpty(fleet, {"c1", "c2"}); }, std::chrono::seconds(20)));
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a same-named object gantry did not create is never adopted: the job fails and names it",
          "[e2e][dispatch][name]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // c1's GPUs are all taken: the victim's copy waits there, not admitted.
  REQUIRE(fleet.Submit("team-a", GpuJob("hog", 2, 8, "60s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "hog", {"Running"}));
  REQUIRE(fleet.Submit("team-a", GpuJob("victim", 1, 8, "1s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "victim", {"Nominating"}));
  const std::string name = RemoteName("victim", fleet.Uid("team-a", "victim"));
  const std::string path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/" + name;
  REQUIRE(PollFor([&] { return fleet.RemoteGet("c1", path).status == 200; }, std::chrono::seconds(20)));

  // Someone else's Workload takes the name: gantry's copy is deleted and a
  // same-named one without gantry's labels is created in its place. (Should
  // gantry re-create its copy in between, the create finds it: try again.)
  auto client = fleet.RemoteClient("c1");
  REQUIRE(client);
  nlohmann::json foreign = fleet.RemoteGet("c1", path).body;
  foreign.erase("status");
  foreign["metadata"] = {{"name", name}, {"namespace", "team-a"}, {"labels", {{"owner", "someone-else"}}}};
  bool replaced = false;
  for (int attempt = 0; attempt < 10 && !replaced; ++attempt) {
    (void)client->Delete(path);
    auto created = client->Create("/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads", foreign);
    replaced = created.ok() && created->status == 201;
  }
  REQUIRE(replaced);

  // gantry's next create of its copy meets the name taken by an object
  // without its origin label: the job fails with a message naming it, and
  // the other object is left as it is.
  // (Within the expectation's 10 s lapse and a retry, when gantry had not
  // yet read its create's answer as the copy went.)
  REQUIRE(fleet.WaitPhase("team-a", "victim", {"Failed"}, std::chrono::seconds(40)));
  auto job = fleet.Job("team-a", "victim");
  const std::string message = job["status"].value("message", "");
  CHECK(message.find(name) != std::string::npos);
  CHECK(message.find("c1") != std::string::npos);
  CHECK(message.find("not created by gantry") != std::string::npos);
  int taken = 0;
  for (auto& e : fleet.Events("team-a", "victim")) taken += e.value("reason", "") == "NameTaken";
  CHECK(taken == 1);
  auto still = fleet.RemoteGet("c1", path);
  REQUIRE(still.status == 200);
  CHECK(still.body["metadata"]["labels"].value("owner", "") == "someone-else");
  CHECK_FALSE(still.body["metadata"]["labels"].contains("kueue.x-k8s.io/multikueue-origin"));
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a cluster removed from the inventory counts as lost: its Requeue job moves at once",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", GpuJob("mover", 1, 1, "3s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Running"}));
  std::string owner = fleet.Job("team-a", "mover")["status"]["cluster"];
  std::string other = owner == "c1" ? "c2" : "c1";
  // The operator deletes the owner's file and reloads the inventory.
  REQUIRE(std::remove((fleet.sim_dir() + "/clusters.d/" + owner + ".yaml").c_str()) == 0);
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(WaitFor([&] {
    auto j = fleet.Job("team-a", "mover");
    return j.is_object() && j["status"]["epoch"] == 2 && j["status"].value("cluster", "") == other;
  }, std::chrono::seconds(20)));
  bool lost_event = false;
  for (auto& e : fleet.Events("team-a", "mover")) {
    lost_event |= e.value("reason", "") == "ClusterLost" &&
                  e.value("message", "").find("removed from the inventory") != std::string::npos;
  }
  CHECK(lost_event);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Succeeded"}, std::chrono::seconds(30)));
}

TEST_CASE("a cordoned cluster takes no new job, keeps its running one, and takes work again when uncordoned",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string c1_file = fleet.sim_dir() + "/clusters.d/c1.yaml";
  const std::string c1_config = ReadFile(c1_file);
  REQUIRE(!c1_config.empty());

  REQUIRE(fleet.Submit("team-a", GpuJob("runner", 1, 1, "4s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Running"}));

  // The operator cordons c1 (a flag in its inventory entry) and reloads.
  WriteFile(c1_file, c1_config + "cordoned: true\n");
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(WaitFor([&] {
    auto clusters = Cli(fleet.url(), {"clusters"});
    return clusters.out.find("Cordoned") != std::string::npos;
  }, std::chrono::seconds(10)));

  // A job only c1 may run waits, with a reason, and nothing is sent to c1.
  REQUIRE(fleet.Submit("team-a", GpuJob("waiter", 1, 1, "1s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(WaitFor([&] {
    auto j = fleet.Job("team-a", "waiter");
    return j.is_object() && !j["status"].value("message", "").empty();
  }, std::chrono::seconds(10)));
  auto waiting = fleet.Job("team-a", "waiter");
  CHECK(waiting["status"]["phase"] == "Queued");
  CHECK(waiting["status"].value("message", "").find("waiting") != std::string::npos);
  // A job that may run anywhere goes to c2.
  REQUIRE(fleet.Submit("team-a", GpuJob("free", 1, 1, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "free", {"Succeeded"}, std::chrono::seconds(30)));
  CHECK(fleet.Job("team-a", "free")["status"]["cluster"] == "c2");

  // Cordoning does not drain: the running job finishes where it is, once.
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Succeeded"}, std::chrono::seconds(30)));
  auto runner = fleet.Job("team-a", "runner");
  CHECK(runner["status"]["cluster"] == "c1");
  CHECK(runner["status"]["epoch"] == 1);
  CHECK(fleet.Job("team-a", "waiter")["status"]["phase"] == "Queued");

  // Uncordoned: the waiting job is dispatched to c1 and runs.
  WriteFile(c1_file, c1_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(fleet.WaitPhase("team-a", "waiter", {"Succeeded"}, std::chrono::seconds(30)));
  CHECK(fleet.Job("team-a", "waiter")["status"]["cluster"] == "c1");
  CHECK(Runs(fleet, fleet.Uid("team-a", "waiter")) == 1);
  CHECK(Runs(fleet, fleet.Uid("team-a", "runner")) == 1);
}

TEST_CASE("a copy waiting in a cluster when it is cordoned is withdrawn: the job is not admitted there until uncordoned",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string c1_file = fleet.sim_dir() + "/clusters.d/c1.yaml";
  const std::string c1_config = ReadFile(c1_file);
  REQUIRE(!c1_config.empty());
  // c1 full; a job only c1 may run waits there for admission.
  REQUIRE(fleet.Submit("team-a", GpuJob("blocker", 2, 8, "3s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "blocker", {"Running"}));
  REQUIRE(fleet.Submit("team-a", GpuJob("pinned", 1, 8, "500ms", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "pinned", {"Nominating"}));

  // Cordoned while its copy waits: the copy goes, the job waits Queued.
  WriteFile(c1_file, c1_config + "cordoned: true\n");
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(fleet.WaitPhase("team-a", "pinned", {"Queued"}, std::chrono::seconds(15)));
  CHECK(Count(Reasons(fleet, "team-a", "pinned"), "Cordoned") == 1);
  // The daemon's log tells the operator's change and its reload.
  const std::string log = fleet.daemon().process().Stderr();
  CHECK(log.find("inventory: cluster c1 is cordoned") != std::string::npos);
  CHECK(log.find("POST /api/v1/clusters:reload: inventory reloaded: 2 cluster(s), 0 file(s) refused") !=
        std::string::npos);
  REQUIRE(WaitFor([&] {
    for (const auto& o : fleet.RemoteObjects("team-a", "pinned")) {
      if (o.value("kind", "") == "Workload" && o.contains("observed")) return false;
    }
    return true;
  }, std::chrono::seconds(15)));
  // c1 frees up: nothing of the job's is there to be admitted.
  REQUIRE(fleet.WaitPhase("team-a", "blocker", {"Succeeded"}, std::chrono::seconds(30)));
  CHECK(fleet.Phase("team-a", "pinned") == "Queued");
  CHECK(Count(Reasons(fleet, "team-a", "pinned"), "LeaseTaken") == 0);

  // Uncordoned: dispatched again, at the next epoch, and runs once.
  WriteFile(c1_file, c1_config);
  REQUIRE(fleet.ReloadClusters() == 200);
  REQUIRE(fleet.WaitPhase("team-a", "pinned", {"Succeeded"}, std::chrono::seconds(30)));
  CHECK(fleet.Job("team-a", "pinned")["status"]["epoch"] == 2);
  CHECK(Runs(fleet, fleet.Uid("team-a", "pinned")) == 1);
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("a cluster whose ClusterQueues gantry may not list stays Ready: its running job is followed to its end",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", GpuJob("runner", 1, 1, "4s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Running"}));

  // RBAC drift: gantry's token may no longer list ClusterQueues in c1.
  REQUIRE(fleet.Ctl({"forbid", "c1", "clusterqueues"}).code == 0);
  REQUIRE(WaitFor([&] {
    return Cli(fleet.url(), {"clusters"}).out.find("Ready,CapacityUnreadable") != std::string::npos;
  }, std::chrono::seconds(20)));
  auto c1 = fleet.Cluster("c1");
  REQUIRE(c1.is_object());
  CHECK(c1["status"]["health"] == "Ready");
  CHECK(c1["status"].value("capacityError", "").find("403") != std::string::npos);
  CHECK_FALSE(c1["status"].contains("credentialsRefused"));

  // Its job is followed as before: it finishes there, once.
  REQUIRE(fleet.WaitPhase("team-a", "runner", {"Succeeded", "Failed"}, std::chrono::seconds(30)));
  auto runner = fleet.Job("team-a", "runner");
  CHECK(runner["status"]["phase"] == "Succeeded");
  CHECK(runner["status"]["cluster"] == "c1");
  CHECK(runner["status"]["epoch"] == 1);

  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  CHECK(WaitFor([&] {
    auto c = fleet.Cluster("c1");
    return c.is_object() && c["status"]["health"] == "Ready" && !c["status"].contains("capacityError");
  }, std::chrono::seconds(20)));
  CHECK(Runs(fleet, fleet.Uid("team-a", "runner")) == 1);
}

TEST_CASE("a job waiting for the one cluster whose quota was never readable is dispatched once it can be read",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  // A daemon that has never read c1's ClusterQueues.
  REQUIRE(fleet.Ctl({"forbid", "c1", "clusterqueues"}).code == 0);
  fleet.RestartDaemon(false);
  REQUIRE(fleet.ok());
  REQUIRE(WaitFor([&] {
    return Cli(fleet.url(), {"clusters"}).out.find("Ready,CapacityUnreadable") != std::string::npos;
  }, std::chrono::seconds(20)));
  REQUIRE(fleet.Submit("team-a", GpuJob("waiting", 1, 1, "1s", "  placement: {clusters: [c1]}")) == 201);
  const bool waits = WaitFor([&] {
    auto j = fleet.Job("team-a", "waiting");
    return j.is_object() && j["status"]["phase"] == "Queued" && !j["status"].value("message", "").empty();
  }, std::chrono::seconds(10));
  INFO(fleet.Job("team-a", "waiting")["status"].dump());
  REQUIRE(waits);
  // Readable again: the job is looked at at once, not at its next resync (30 s).
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  CHECK(fleet.WaitPhase("team-a", "waiting", {"Running", "Succeeded"}, std::chrono::seconds(10)));
  CHECK(fleet.Job("team-a", "waiting")["status"]["cluster"] == "c1");
}

// gantry_cluster_view_behind_seconds{cluster} from the daemon's /metrics
// (-1 when absent or unreadable).
double ViewBehindSeconds(DispatchFleet& fleet, const std::string& cluster) {
  auto client = http::Client::Create(fleet.url());
  if (!client.ok()) return -1;
  auto metrics = (*client)->Do("GET", "/metrics");
  if (!metrics.ok() || metrics->status != 200) return -1;
  const std::string prefix = "gantry_cluster_view_behind_seconds{cluster=\"" + cluster + "\"} ";
  const std::size_t at = metrics->body.find(prefix);
  return at == std::string::npos ? -1 : std::stod(metrics->body.substr(at + prefix.size()));
}

TEST_CASE("a cluster whose watches broke and cannot relist shows as behind in gantry clusters and on /metrics",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  CHECK(ViewBehindSeconds(fleet, "c1") == 0);
  CHECK_FALSE(fleet.Cluster("c1")["status"].contains("viewBehind"));

  // Every request to c1 fails from now on, and its open watches are cut:
  // their relists fail, so nothing gantry sees there is current.
  REQUIRE(fleet.Ctl({"errors", "c1", "1.0", "500"}).code == 0);
  REQUIRE(fleet.Ctl({"kill-watches", "c1"}).code == 0);
  REQUIRE(WaitFor([&] { return fleet.Cluster("c1")["status"].contains("viewBehind"); }, std::chrono::seconds(20)));
  const nlohmann::json status = fleet.Cluster("c1")["status"];
  CHECK(status.value("viewBehind", "").find("workloads") != std::string::npos);
  CHECK(status.contains("viewBehindSince"));
  CHECK_FALSE(fleet.Cluster("c2")["status"].contains("viewBehind"));
  CHECK(PollFor([&] { return ViewBehindSeconds(fleet, "c1") >= 1; }, std::chrono::seconds(10)));
  CHECK(ViewBehindSeconds(fleet, "c2") == 0);
  auto clusters = Cli(fleet.url(), {"clusters"});
  INFO(clusters.out);
  CHECK(clusters.out.find("ViewBehind") != std::string::npos);

  // Answering again, c1 relists and is current.
  REQUIRE(fleet.Ctl({"errors", "c1", "0"}).code == 0);
  CHECK(WaitFor([&] { return !fleet.Cluster("c1")["status"].contains("viewBehind"); }, std::chrono::seconds(30)));
  CHECK(ViewBehindSeconds(fleet, "c1") == 0);
}

TEST_CASE("an owner whose first list of Jobs fails after a restart holds its job with the error, then lets it finish",
          "[e2e][dispatch][inventory][recovery]") {
  DispatchFleetOptions o = TwoClusters();
  o.daemon_config_yaml = "listErrorsToldAfterSeconds: 2\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", GpuJob("held", 1, 1, "15s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "held", {"Running"}));

  // c1's Jobs answer 500 to every request (a broken conversion webhook, say),
  // and the daemon restarts: its first lists of them there fail, for longer
  // than listErrorsToldAfterSeconds. Before, the cluster stayed unsynced and
  // the job waited without a word.
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobs=500"}).code == 0);
  fleet.RestartDaemon(true);
  REQUIRE(fleet.ok());
  REQUIRE(WaitFor([&] { return OwnerUnreachableReason(fleet, "held") == "WatchRefused"; }, std::chrono::seconds(30)));
  auto clusters = Cli(fleet.url(), {"clusters"});
  INFO(clusters.out);
  CHECK(clusters.out.find("Ready,WatchRefused") != std::string::npos);
  CHECK(clusters.out.find("listing jobs answered 500") != std::string::npos);
  CHECK(fleet.Phase("team-a", "held") == "Running");  // held, not moved

  // Answering again: the condition is lifted and the job finishes there, once.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  CheckFinishedOnceInC1(fleet, "held");
}

TEST_CASE("a cluster that refuses gantry a watch of Workloads holds its job with a condition, then lets it finish",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // Long enough to outlast the relist that is refused (on 2 busy cores).
  REQUIRE(fleet.Submit("team-a", GpuJob("held", 1, 1, "12s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "held", {"Running"}));

  // RBAC drift: gantry's token may no longer list Workloads in c1. The open
  // watch is cut, and its relist refused.
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads"}).code == 0);
  REQUIRE(fleet.Ctl({"kill-watches", "c1"}).code == 0);
  REQUIRE(WaitFor([&] { return OwnerUnreachableReason(fleet, "held") == "WatchRefused"; }, std::chrono::seconds(20)));
  auto clusters = Cli(fleet.url(), {"clusters"});
  CHECK(clusters.out.find("Ready,WatchRefused") != std::string::npos);
  CHECK(clusters.out.find("listing workloads answered 403") != std::string::npos);
  CHECK(fleet.Phase("team-a", "held") == "Running");  // held, not moved
  // It takes nothing new meanwhile: a job free to go anywhere goes to c2.
  REQUIRE(fleet.Submit("team-a", GpuJob("elsewhere", 1, 1, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "elsewhere", {"Succeeded"}, std::chrono::seconds(30)));
  CHECK(fleet.Job("team-a", "elsewhere")["status"]["cluster"] == "c2");

  // Allowed again: the condition is lifted and the job finishes there, once.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  CheckFinishedOnceInC1(fleet, "held");
  CHECK(Cli(fleet.url(), {"clusters"}).out.find("WatchRefused") == std::string::npos);
}

TEST_CASE("an owner that forbids gantry to create the job's kind: the job runs elsewhere at the next epoch",
          "[e2e][dispatch][inventory]") {
  // c1 admits at once, c2 after 2 s: c1 takes the lease first.
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // RBAC (or a policy webhook) lets gantry list Jobs in c1 but not create them.
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobs:create"}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("moved", "team-a", 1, 0, "4s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "moved", {"Running"}, std::chrono::seconds(40)));
  // While it runs elsewhere, gantry explain tells why c1 is left out.
  auto explained = Cli(fleet.url(), {"explain", "moved", "-n", "team-a"});
  INFO(explained.out);
  CHECK(explained.out.find("refused the job") != std::string::npos);
  CHECK(explained.out.find("cluster c1 refused Job") != std::string::npos);
  REQUIRE(fleet.WaitPhase("team-a", "moved", {"Failed", "Succeeded"}, std::chrono::seconds(40)));
  auto moved = fleet.Job("team-a", "moved");
  CHECK(moved["status"]["phase"] == "Succeeded");
  CHECK(moved["status"]["cluster"] == "c2");
  CHECK(moved["status"]["epoch"] == 2);
  int refused = 0;
  for (const auto& e : fleet.Events("team-a", "moved")) {
    if (e.value("reason", "") != "JobRefused") continue;
    ++refused;
    CHECK(e.value("cluster", "") == "c1");
    CHECK(e.value("type", "") == "Warning");
    CHECK(e.value("message", "").find("cluster c1 refused Job") != std::string::npos);
    CHECK(e.value("message", "").find("403") != std::string::npos);
  }
  CHECK(refused == 1);
  CHECK(fleet.RemoteCalls("c1", "create", 403) == 1);  // epoch 2 left c1 out
  CHECK(Runs(fleet, fleet.Uid("team-a", "moved")) == 1);
  // Its epoch-1 copy in c1 is withdrawn: it holds no quota there.
  const std::string remote = RemoteName("moved", fleet.Uid("team-a", "moved"));
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", remote); }, std::chrono::seconds(20)));

  // A job only c1 may take fails with c1's answer, as a job whose every
  // candidate refuses its Workload copy does, rather than go round again.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("pinned", "team-a", 1, 0, "1s", "  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "pinned", {"Failed", "Succeeded"}, std::chrono::seconds(40)));
  auto pinned = fleet.Job("team-a", "pinned");
  CHECK(pinned["status"]["phase"] == "Failed");
  const std::string message = pinned["status"].value("message", "");
  INFO(message);
  CHECK(message.find("every cluster that can take the job refused to create it") != std::string::npos);
  CHECK(message.find("cluster c1 refused Job") != std::string::npos);
  CHECK(message.find("403") != std::string::npos);
  CHECK(Count(Reasons(fleet, "team-a", "pinned"), "JobRefused") == 1);
  for (const auto& e : fleet.Events("team-a", "pinned")) {  // promises no dispatch that does not come
    if (e.value("reason", "") != "JobRefused") continue;
    CHECK(e.value("message", "").find("else the job waits or fails") != std::string::npos);
  }
  CHECK(Runs(fleet, fleet.Uid("team-a", "pinned")) == 0);
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
}

TEST_CASE("jobs submitted while no cluster is configured wait with a reason and run once clusters are added",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // The operator empties the inventory. A reload keeps it as it was (a
  // directory being swapped looks so); the daemon started again on it has
  // no cluster.
  const std::string dir = fleet.sim_dir() + "/clusters.d/";
  std::map<std::string, std::string> files;
  for (const char* c : {"c1", "c2"}) {
    files[c] = ReadFile(dir + c + ".yaml");
    REQUIRE(!files[c].empty());
    REQUIRE(std::remove((dir + c + ".yaml").c_str()) == 0);
  }
  CHECK(fleet.ReloadClusters() == 422);
  CHECK(fleet.Cluster("c1")["status"].value("health", "") == "Ready");
  fleet.RestartDaemon(false);
  REQUIRE(fleet.ok());

  // Accepted, stored and told why nothing happens.
  for (const char* name : {"early-1", "early-2", "early-3"}) {
    REQUIRE(fleet.Submit("team-a", GpuJob(name, 1, 1, "1s")) == 201);
  }
  for (const char* name : {"early-1", "early-2", "early-3"}) {
    auto j = fleet.Job("team-a", name);
    REQUIRE(j.is_object());
    CHECK(j["status"]["phase"] == "Queued");
    CHECK(j["status"].value("message", "") == "no clusters known yet");
  }

  // The clusters come back: every waiting job runs, once, without a resync.
  for (const auto& [c, text] : files) WriteFile(dir + c + ".yaml", text);
  REQUIRE(fleet.ReloadClusters() == 200);
  for (const char* name : {"early-1", "early-2", "early-3"}) {
    REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded"}, std::chrono::seconds(20)));
    CHECK(Runs(fleet, fleet.Uid("team-a", name)) == 1);
  }
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("finishedRetentionSeconds: a finished job keeps its objects in its cluster, across a restart, then they go",
          "[e2e][dispatch][retention]") {
  DispatchFleet fleet(OneCluster("finishedRetentionSeconds: 12"));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  // A job's own setting takes the place of the daemon's 12 s: this one's
  // objects go as soon as it finished.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("gone", "team-a", 1, 0, "1s", "  finishedRetentionSeconds: 0")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "gone", {"Succeeded"}, std::chrono::seconds(30)));
  CHECK(fleet.Job("team-a", "gone")["spec"].value("finishedRetentionSeconds", -1) == 0);
  CHECK(PollFor([&] { return RemoteEmpty(fleet, {"c1"}); }, std::chrono::seconds(6)));

  REQUIRE(fleet.Submit("team-a", SimJobYaml("kept", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "kept", {"Succeeded"}, std::chrono::seconds(30)));
  const auto finished_at = std::chrono::steady_clock::now();
  nlohmann::json job = fleet.Job("team-a", "kept");
  CHECK(job["status"].contains("completionTime"));
  RunResult status = Cli(fleet.url(), {"status", "kept", "-n", "team-a"});
  CHECK(status.code == 0);
  CHECK_THAT(status.out, Catch::Contains("Completed:"));
  bool retained_event = false;
  for (auto& e : fleet.Events("team-a", "kept")) retained_event |= e.value("reason", "") == "Retained";
  CHECK(retained_event);

  // A restart in the middle of the retention keeps it: it counts from the
  // stored completion time.
  fleet.RestartDaemon(true);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // Checked well inside the 12 s (the restart takes about a second).
  REQUIRE(std::chrono::steady_clock::now() - finished_at < std::chrono::seconds(8));
  RemoteCounts during = Remote(fleet, "c1");
  CHECK(during.workloads == 1);
  CHECK(during.jobs == 1);
  CHECK(fleet.Phase("team-a", "kept") == "Succeeded");

  // Then withdrawn like any finished job.
  CHECK(PollFor([&] { return RemoteEmpty(fleet, {"c1"}); }, std::chrono::seconds(40)));
  CHECK(fleet.Ctl({"check"}).code == 0);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a generic kind in genericKinds is watched: it goes Running, finishes, and is withdrawn like a Job",
          "[e2e][dispatch][generic]") {
  DispatchFleet fleet(OneCluster(kListTrainJob));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  REQUIRE(fleet.Submit("team-a", TrainJobYaml("tj", 2, "2s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "tj", {"Succeeded"}, std::chrono::seconds(30)));
  std::vector<std::string> reasons;
  for (auto& e : fleet.Events("team-a", "tj")) reasons.push_back(e.value("reason", ""));
  // Seen running (only a watched kind can be), then finished: by its own
  // Complete condition, or by its Workload's Finished when that event comes
  // in first (the simulator writes both at once, on two watch streams).
  CHECK(std::count(reasons.begin(), reasons.end(), "Started") == 1);
  CHECK_THAT(fleet.Job("team-a", "tj")["status"].value("message", ""),
             Catch::Contains("JobsCompleted") || Catch::Contains("Job finished successfully"));
  CHECK(Runs(fleet, fleet.Uid("team-a", "tj")) == 1);

  // Withdrawn: the TrainJob as well as its Workload.
  auto client = fleet.RemoteClient("c1");
  REQUIRE(client);
  auto left = [&] {
    kube::ListOptions opts;
    opts.label_selector = "kueue.x-k8s.io/multikueue-origin=gantry";
    auto t = client->List("/apis/trainer.kubeflow.org/v1alpha1/trainjobs", opts);
    auto w = client->List("/apis/kueue.x-k8s.io/v1beta2/workloads", opts);
    if (!t.ok() || !w.ok() || !t->ok() || !w->ok()) return -1;
    return static_cast<int>(t->body["items"].size() + w->body["items"].size());
  };
  CHECK(PollFor([&] { return left() == 0; }, std::chrono::seconds(20)));
  CHECK(fleet.Ctl({"check"}).code == 0);

  // A kind the daemon does not watch is refused at the door, naming the
  // field: unwatched, it would never show Running and would stay behind.
  const std::string widget = fleet.sim_dir() + "/widget.yaml";
  WriteFile(widget, R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {name: w, namespace: team-a}
spec:
  queue: team-a
  template: {apiVersion: example.com/v1, kind: Widget, spec: {}}
  podSets:
  - name: main
    template:
      spec:
        containers:
        - {name: c, image: registry.example.com/w:1, resources: {requests: {cpu: "1", memory: 1Gi}}}
)");
  RunResult refused = Cli(fleet.url(), {"submit", "-f", widget});
  CHECK(refused.code == 1);
  CHECK_THAT(refused.out + refused.err, Catch::Contains("spec.template.kind") && Catch::Contains("genericKinds"));
  CHECK(fleet.Phase("team-a", "w").empty());  // nothing stored
}

TEST_CASE("a job whose kind leaves genericKinds: its document still answers, and the daemon warns",
          "[e2e][dispatch][generic]") {
  DispatchFleet fleet(OneCluster(kListTrainJob));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string doc = TrainJobYaml("long-tj", 1, "60s");
  REQUIRE(fleet.Submit("team-a", doc) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "long-tj", {"Running"}, std::chrono::seconds(30)));

  // The operator takes the kind out of gantry.yaml while the job runs.
  fleet.SetDaemonConfig("");
  fleet.RestartDaemon(false);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  CHECK(fleet.Submit("team-a", doc) == 200);  // the stored job, as any resubmission
  // Unwatched now: the daemon says so, naming the kind and the fix.
  CHECK(PollFor([&] { return fleet.daemon().process().Stderr().find("not in genericKinds") != std::string::npos; },
                std::chrono::seconds(20)));
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("an Unschedulable job runs once a worker's ClusterQueue quota is raised to fit it, with no reload",
          "[e2e][dispatch][quota]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // c2's quota cut for maintenance; the probes read it.
  REQUIRE(fleet.Ctl({"quota", "c2", "nvidia.com/gpu=8"}).code == 0);
  REQUIRE(WaitFor([&] {
    return fleet.Cluster("c2").dump().find("\"nominal\":\"8\"") != std::string::npos;
  }, std::chrono::seconds(10)));
  // 2 pods x 8 GPUs, only in c2: more than its quota now.
  REQUIRE(fleet.Submit("team-a", GpuJob("wide", 2, 8, "500ms", "  placement: {clusters: [c2]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "wide", {"Unschedulable"}, std::chrono::seconds(15)));
  // The quota back (an edit of its ClusterQueue): the next probe reads
  // it, and the job is judged again.
  REQUIRE(fleet.Ctl({"quota", "c2", "nvidia.com/gpu=16"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "wide", {"Succeeded"}, std::chrono::seconds(40)));
  CHECK(fleet.Job("team-a", "wide")["status"]["cluster"] == "c2");
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("an Unschedulable job is queued again and runs once a reload gives it a cluster",
          "[e2e][dispatch][inventory]") {
  DispatchFleet fleet(TwoClusters());
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", GpuJob("mars", 1, 1, "1s", "  placement: {regions: [mars-1]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "mars", {"Unschedulable"}));
  // The same document again: judged again (Queued, then the same verdict).
  const std::string doc = fleet.dir().File("mars.yaml");
  WriteFile(doc, GpuJob("mars", 1, 1, "1s", "  placement: {regions: [mars-1]}"));
  auto again = Cli(fleet.url(), {"submit", "-f", doc, "-n", "team-a"});
  INFO(again.out << again.err);
  CHECK(again.code == 0);
  CHECK_THAT(again.out, Catch::Contains("unchanged; queued to be judged again"));
  REQUIRE(WaitFor([&] { return Count(Reasons(fleet, "team-a", "mars"), "Unschedulable") == 2; }));
  CHECK(Count(Reasons(fleet, "team-a", "mars"), "Resubmitted") == 1);
  CHECK(fleet.Phase("team-a", "mars") == "Unschedulable");
  // The operator corrects c1's region and reloads the inventory.
  const std::string c1_file = fleet.sim_dir() + "/clusters.d/c1.yaml";
  std::string config = ReadFile(c1_file);
  const std::size_t at = config.find("region: ");
  REQUIRE(at != std::string::npos);
  config.replace(at, config.find('\n', at) - at, "region: mars-1");
  WriteFile(c1_file, config);
  // One cluster's line, or none.
  auto one = Cli(fleet.url(), {"clusters", "c1"});
  CHECK(one.code == 0);
  CHECK(one.out.find("c1 ") != std::string::npos);
  CHECK(one.out.find("c2 ") == std::string::npos);
  CHECK(Cli(fleet.url(), {"clusters", "nope"}).code == 1);
  auto reloaded = Cli(fleet.url(), {"reload"});  // POST /api/v1/clusters:reload
  CHECK(reloaded.code == 0);
  CHECK_THAT(reloaded.out, Catch::Contains("inventory reloaded"));
  REQUIRE(fleet.WaitPhase("team-a", "mars", {"Succeeded"}, std::chrono::seconds(30)));
  CHECK(fleet.Job("team-a", "mars")["status"]["cluster"] == "c1");
  bool requeued = false;
  for (auto& e : fleet.Events("team-a", "mars")) requeued |= e.value("reason", "") == "Requeued";
  CHECK(requeued);
  CHECK(fleet.Ctl({"check"}).code == 0);
  // Every event, oldest first.
  auto events = Cli(fleet.url(), {"events", "team-a/mars"});
  INFO(events.out);
  CHECK(events.code == 0);
  const std::size_t submitted = events.out.find("Submitted"), resubmitted = events.out.find("Resubmitted"),
                    succeeded = events.out.find("Succeeded");
  CHECK(submitted < resubmitted);
  CHECK(resubmitted < succeeded);
  CHECK(succeeded != std::string::npos);
  // A file the reload refuses is named, with why, and the exit is not 0.
  WriteFile(fleet.sim_dir() + "/clusters.d/broken.yaml", "name: [unclosed\n");
  auto refused = Cli(fleet.url(), {"reload"});
  INFO(refused.err);
  CHECK(refused.code != 0);
  CHECK_THAT(refused.err, Catch::Contains("broken.yaml: line 2: invalid YAML"));
  CHECK(refused.err.find("broken.yaml") == refused.err.rfind("broken.yaml"));  // named once
  REQUIRE(std::remove((fleet.sim_dir() + "/clusters.d/broken.yaml").c_str()) == 0);
}

}  // namespace gantry::testing
