// Preemption within the ClusterQueue through a whole simulated cluster, its
// Kubernetes API answered in process (KubeApi, no sockets) on a fake clock:
// a Workload behind a closed preemption gate waits and evicts nothing; the
// status patch that opens the gate (as gantry sends it) wakes admission, and
// the next pass evicts the newest lower-priority Workload and admits it.
// With a victimStopDelay, the victim's quota is held that long and the
// preemptor waits for it (WaitingForPreemptedWorkloads).
// Every Workload version written is checked against the Kueue CRD's schema.
#include <catch2/catch.hpp>

#include "crd_schema.h"
#include "kube_api.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;
using testing::MakeJob;
using testing::MakeWorkload;

const std::string kWorkloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";
const std::string kJobs = "/apis/batch/v1/namespaces/team-a/jobs";
const char* const kGate = "gantry.dev/preemption";

ClusterConfig WithPolicy(PreemptionPolicy policy, int64_t victim_stop_delay_ms) {
  ClusterConfig c = testing::SmallCluster("c1", 2);  // 16 GPUs
  c.within_cluster_queue = policy;
  c.victim_stop_delay_ms = victim_stop_delay_ms;
  return c;
}

struct Fixture : testing::ClusterFixture {
  explicit Fixture(PreemptionPolicy policy = PreemptionPolicy::kLowerPriority, int64_t victim_stop_delay_ms = 0)
      : ClusterFixture(WithPolicy(policy, victim_stop_delay_ms)), api(&state) {
    WatchRequest req;
    req.resource = &wl;
    req.api_version = "kueue.x-k8s.io/v1beta2";
    req.stream = stream = std::make_shared<http::ResponseStream>();
    state.Watch(req);
  }

  http::Response Do(const std::string& method, const std::string& path, const json& body = nullptr,
                    const std::string& content_type = "application/json") {
    http::Request req;
    req.method = method;
    req.target = req.path = path;
    req.headers["content-type"] = content_type;
    if (!body.is_null()) req.body = body.dump();
    return api.Handle(req);
  }
  // Creates Workload `name` (one pod, 8 GPUs) and its job (running 10 min
  // once admitted), and lets a pass admit it.
  void Run(const std::string& name, int priority = 0) {
    REQUIRE(Do("POST", kWorkloads, MakeWorkload(name, 1, 8, "team-a", priority)).status == 201);
    REQUIRE(Do("POST", kJobs, MakeJob("job-" + name, name, "uid-" + name, "10m")).status == 201);
    state.Tick();
    REQUIRE(HasCondition(Get(wl, name), "Admitted"));
  }
  // The Workload watch events since the last call; each object one the CRD accepts.
  std::vector<json> Events() {
    std::vector<json> out = testing::StreamEvents(stream);
    for (const json& e : out) {
      json o = e["object"];
      o["metadata"] = {{"name", o["metadata"]["name"]}, {"namespace", o["metadata"]["namespace"]}};
      INFO(o.dump(2));
      CHECK(gantry::testing::Joined(validator.Validate(o, gantry::testing::WorkloadSchema("v1beta2"))) == "");
    }
    return out;
  }
  // Condition `type` of Workload `name`: {status, reason, message}; "" each when absent.
  std::vector<std::string> Cond(const std::string& name, const std::string& type) {
    for (const json& c : Get(wl, name)["status"].value("conditions", json::array())) {
      if (c["type"] == type) return {c["status"], c["reason"], c["message"]};
    }
    return {"", "", ""};
  }
  bool Suspended(const std::string& job) { return Get(jobs, job)["spec"]["suspend"] == true; }

  KubeApi api;
  std::shared_ptr<http::ResponseStream> stream;
  gantry::testing::SchemaValidator validator;
};

json GatedWorkload(const std::string& name, int priority) {
  json w = MakeWorkload(name, 1, 8, "team-a", priority);
  w["metadata"]["labels"]["gantry.dev/job-uid"] = "uid-" + name;
  w["spec"]["preemptionGates"] = json::array({{{"name", kGate}}});
  return w;
}

// gantry's patch that opens its gate (dispatch/remote_objects.cc).
json OpenGate() {
  return {{"status",
           {{"preemptionGates",
             json::array({{{"name", kGate}, {"position", "Open"}, {"lastTransitionTime", "2026-12-03T04:00:00Z"}}})}}}};
}

const std::string kGatedMessage =
    "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more "
    "needed; preemption is gated (closed: gantry.dev/preemption)";

TEST_CASE("a gated Workload waits, and once gantry opens its gate it preempts the newest lower-priority one",
          "[sim][preemption]") {
  Fixture f;
  f.Run("low-a");
  f.TickAfter(1'000);
  f.Run("low-b");  // the newer: the one to go
  REQUIRE(f.Do("POST", kWorkloads, GatedWorkload("vip", 100)).status == 201);
  f.state.Tick();

  // Closed gate: pending, saying why; nothing evicted, however long it waits.
  for (int i = 0; i < 2; ++i) {
    CHECK(f.Cond("vip", "QuotaReserved") == std::vector<std::string>{"False", "PreemptionGated", kGatedMessage});
    CHECK(HasCondition(f.Get(f.wl, "low-a"), "Admitted"));
    CHECK(HasCondition(f.Get(f.wl, "low-b"), "Admitted"));
    CHECK_FALSE(f.Suspended("job-low-b"));
    for (const Run& r : f.journal.Snapshot()) CHECK(r.end_ms == 0);
    f.TickAfter(60'000);
  }
  CHECK(f.ReservedGpus() == 16);
  f.Events();

  // gantry opens the gate: a merge patch of the status subresource.
  http::Response patched = f.Do("PATCH", kWorkloads + "/vip/status", OpenGate(), "application/merge-patch+json");
  INFO(patched.body);
  REQUIRE(patched.status == 200);
  CHECK(json::parse(patched.body)["status"]["preemptionGates"] == OpenGate()["status"]["preemptionGates"]);
  std::vector<json> events = f.Events();
  REQUIRE(events.size() == 1);
  CHECK(events[0]["type"] == "MODIFIED");
  CHECK(events[0]["object"]["metadata"]["name"] == "vip");
  CHECK(events[0]["object"]["status"]["preemptionGates"][0]["position"] == "Open");
  CHECK(events[0]["object"]["spec"]["preemptionGates"] == json::array({{{"name", kGate}}}));  // spec untouched
  CHECK_FALSE(HasCondition(f.Get(f.wl, "vip"), "QuotaReserved"));  // not before the next pass

  // The next tick, with no time passing: the patch woke the admission pass.
  f.state.Tick();
  const int64_t now = f.clock.NowMillis();
  const std::string message = "Preempted to accommodate a workload (UID: " +
                              f.Get(f.wl, "vip")["metadata"]["uid"].get<std::string>() +
                              ", JobUID: UNKNOWN) due to prioritization in the ClusterQueue";
  CHECK(f.Cond("low-b", "Evicted") == std::vector<std::string>{"True", "Preempted", message});
  CHECK(f.Cond("low-b", "QuotaReserved") == std::vector<std::string>{"False", "Preempted", message});
  CHECK(f.Cond("low-b", "Admitted") == std::vector<std::string>{"False", "Preempted", message});
  CHECK(f.Cond("low-b", "Preempted") == std::vector<std::string>{"True", "InClusterQueue", message});
  CHECK_FALSE(f.Get(f.wl, "low-b")["status"].contains("admission"));
  CHECK(f.Suspended("job-low-b"));
  CHECK(HasCondition(f.Get(f.wl, "low-a"), "Admitted"));  // one victim is enough
  CHECK_FALSE(f.Suspended("job-low-a"));
  CHECK(f.Cond("vip", "QuotaReserved")[0] == "True");
  CHECK(f.Cond("vip", "Admitted")[0] == "True");
  CHECK(f.ReservedGpus() == 16);

  // The victim's eviction was written before the preemptor's admission.
  events = f.Events();
  std::vector<std::string> order;
  for (const json& e : events) order.push_back(e["object"]["metadata"]["name"]);
  CHECK(order == std::vector<std::string>{"low-b", "vip"});

  // The journal: low-b's run stopped now, low-a's runs on; vip's job runs once created.
  REQUIRE(f.Do("POST", kJobs, MakeJob("job-vip", "vip", "uid-vip", "10m")).status == 201);
  std::vector<Run> runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].job_uid == "uid-low-a");
  CHECK(runs[0].end_ms == 0);
  CHECK(runs[1].job_uid == "uid-low-b");
  CHECK(runs[1].end_ms == now);
  CHECK(runs[1].end_reason == "Evicted");  // as for any eviction
  CHECK(runs[2].job_uid == "uid-vip");
  CHECK(runs[2].end_ms == 0);
  CHECK(CheckRuns(runs).empty());

  // The victim does not come back: it waits no more (as after ctl evict).
  f.TickAfter(60'000);
  CHECK(f.Cond("low-b", "QuotaReserved")[0] == "False");
  CHECK(f.journal.Snapshot().size() == 3);
}

TEST_CASE("with victimStopDelay the preemptor waits until its victim has released its quota",
          "[sim][preemption]") {
  Fixture f(PreemptionPolicy::kLowerPriority, 3'000);
  f.Run("low-a");
  f.TickAfter(1'000);
  f.Run("low-b");  // the newer: the one to go
  const json low_a = f.Get(f.wl, "low-a");
  REQUIRE(f.Do("POST", kWorkloads, MakeWorkload("vip", 1, 8, "team-a", 100)).status == 201);
  REQUIRE(f.Do("POST", kJobs, MakeJob("job-vip", "vip", "uid-vip", "10m")).status == 201);
  f.Events();
  f.state.Tick();
  const int64_t evicted_ms = f.clock.NowMillis();

  // The victim is evicted at once, in Kueue's words, its run stopped...
  const std::string preempted = "Preempted to accommodate a workload (UID: " +
                                f.Get(f.wl, "vip")["metadata"]["uid"].get<std::string>() +
                                ", JobUID: UNKNOWN) due to prioritization in the ClusterQueue";
  CHECK(f.Cond("low-b", "Evicted") == std::vector<std::string>{"True", "Preempted", preempted});
  CHECK(f.Cond("low-b", "QuotaReserved") == std::vector<std::string>{"False", "Preempted", preempted});
  CHECK(f.Cond("low-b", "Preempted") == std::vector<std::string>{"True", "InClusterQueue", preempted});
  CHECK(f.Suspended("job-low-b"));
  std::vector<Run> runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].job_uid == "uid-low-b");
  CHECK(runs[1].end_ms == evicted_ms);
  CHECK(runs[1].end_reason == "Evicted");
  // ...but its quota is held while it stops: the preemptor waits for it.
  const std::vector<std::string> waiting = {
      "False", "WaitingForPreemptedWorkloads",
      "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more "
      "needed. Pending the preemption of 1 workload(s)"};
  CHECK(f.Cond("vip", "QuotaReserved") == waiting);
  CHECK(f.Cond("vip", "Admitted")[0].empty());
  CHECK(f.ReservedGpus() == 16);
  const json cq = f.Get(ResourceByPlural("clusterqueues"), "cluster-queue", "");
  CHECK(cq["status"]["flavorsReservation"][0]["resources"].dump().find(R"("total":"16")") != std::string::npos);
  std::vector<std::string> order;
  for (const json& e : f.Events()) order.push_back(e["object"]["metadata"]["name"]);
  CHECK(order == std::vector<std::string>{"low-b", "vip"});  // the eviction first

  // +1 s, a pass forced (a quota write marks admission dirty): still waiting,
  // and low-a, which would make room too, is left alone.
  f.clock.Advance(1'000);
  f.state.SetQuota(f.state.config().quota);
  f.state.Tick();
  CHECK(f.Cond("vip", "QuotaReserved") == waiting);
  CHECK(f.Get(f.wl, "low-a") == low_a);
  CHECK(f.ReservedGpus() == 16);

  // Still held 1 ms before the delay is up; released on time, with no event
  // to wake admission but its own deadline.
  f.TickAfter(1'999);
  CHECK(f.Cond("vip", "QuotaReserved") == waiting);
  f.TickAfter(1);
  CHECK(f.clock.NowMillis() == evicted_ms + 3'000);
  CHECK(f.Cond("vip", "QuotaReserved")[0] == "True");
  CHECK(f.Cond("vip", "Admitted")[0] == "True");
  CHECK(f.ReservedGpus() == 16);  // low-a and vip
  runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 3);
  CHECK(runs[2].job_uid == "uid-vip");
  CHECK(runs[2].start_ms == evicted_ms + 3'000);
  CHECK(CheckRuns(runs).empty());

  // The victim does not come back; low-a was never touched.
  f.TickAfter(60'000);
  CHECK(f.Cond("low-b", "QuotaReserved")[0] == "False");
  CHECK(f.Cond("low-b", "Evicted")[0] == "True");
  CHECK(f.journal.Snapshot().size() == 3);
  CHECK(f.Get(f.wl, "low-a") == low_a);
  CHECK_FALSE(f.Suspended("job-low-a"));
  f.Events();
}

TEST_CASE("a victim deleted while it stops keeps its quota until it has stopped, and a new one of its name is another",
          "[sim][preemption]") {
  // As in Kueue, whose finalizer keeps a deleted Workload, and its quota in
  // use, until its pods are gone (gantry deletes an evicted copy at once).
  Fixture f(PreemptionPolicy::kLowerPriority, 3'000);
  f.Run("low-a");
  f.Run("low-b");
  REQUIRE(f.Do("POST", kWorkloads, MakeWorkload("vip", 1, 8, "team-a", 100)).status == 201);
  f.state.Tick();
  const int64_t evicted_ms = f.clock.NowMillis();
  REQUIRE(f.Cond("vip", "QuotaReserved")[1] == "WaitingForPreemptedWorkloads");
  REQUIRE(f.Do("DELETE", kWorkloads + "/low-b").status == 200);
  f.state.Tick();
  CHECK(f.Cond("vip", "QuotaReserved")[1] == "WaitingForPreemptedWorkloads");  // still waiting for it
  CHECK(f.ReservedGpus() == 16);
  // A new Workload of the victim's name (gantry's next epoch) is another
  // holder: it waits, and does not take the stopping one's quota for its own.
  REQUIRE(f.Do("POST", kWorkloads, MakeWorkload("low-b", 1, 8, "team-a", 0)).status == 201);
  f.TickAfter(1'000);
  CHECK(f.Cond("low-b", "QuotaReserved")[0] == "False");
  CHECK(f.Cond("vip", "QuotaReserved")[1] == "WaitingForPreemptedWorkloads");
  CHECK(f.ReservedGpus() == 16);
  f.TickAfter(evicted_ms + 3'000 - f.clock.NowMillis());  // stopped: its quota is the preemptor's
  CHECK(f.Cond("vip", "QuotaReserved")[0] == "True");
  CHECK(f.Cond("vip", "Admitted")[0] == "True");
  CHECK(f.Cond("low-b", "QuotaReserved")[0] == "False");
  CHECK(f.ReservedGpus() == 16);
  CHECK(HasCondition(f.Get(f.wl, "low-a"), "Admitted"));
}

TEST_CASE("with withinClusterQueue Never a higher-priority Workload waits and evicts nothing", "[sim][preemption]") {
  Fixture f(PreemptionPolicy::kNever);
  f.Run("low-a");
  f.Run("low-b");
  REQUIRE(f.Do("POST", kWorkloads, MakeWorkload("vip", 1, 8, "team-a", 100)).status == 201);
  f.TickAfter(60'000);
  CHECK(f.Cond("vip", "QuotaReserved") ==
        std::vector<std::string>{"False", "Pending",
                                 "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu "
                                 "in flavor h100, 8 more needed"});
  CHECK_FALSE(HasCondition(f.Get(f.wl, "low-a"), "Evicted"));
  CHECK_FALSE(HasCondition(f.Get(f.wl, "low-b"), "Evicted"));
}

TEST_CASE("gantry-sim ctl evict keeps its own message and shares the eviction", "[sim][preemption]") {
  Fixture f;
  f.Run("a");
  REQUIRE(f.state.Evict("team-a", "a").ok());
  const std::string message = "Preempted to accommodate a workload (simulated)";
  CHECK(f.Cond("a", "Evicted") == std::vector<std::string>{"True", "Preempted", message});
  CHECK(f.Cond("a", "QuotaReserved") == std::vector<std::string>{"False", "Preempted", message});
  CHECK(f.Cond("a", "Preempted")[0].empty());  // not the scheduler's preemption
  CHECK(f.Suspended("job-a"));
  CHECK(f.journal.Snapshot().at(0).end_reason == "Evicted");
  CHECK(f.ReservedGpus() == 0);
  f.Events();
}

TEST_CASE("a write of the main resource cannot change status", "[sim][preemption]") {
  Fixture f;
  // No status yet: the patch's is dropped, its labels kept.
  REQUIRE(f.Do("POST", kWorkloads, GatedWorkload("w", 0)).status == 201);
  json patch = OpenGate();
  patch["metadata"] = {{"labels", {{"team", "x"}}}};
  REQUIRE(f.Do("PATCH", kWorkloads + "/w", patch, "application/merge-patch+json").status == 200);
  json w = f.Get(f.wl, "w");
  CHECK(w["metadata"]["labels"]["team"] == "x");
  CHECK_FALSE(w.contains("status"));
  // A status: kept as it was.
  f.state.Tick();
  const json before = f.Get(f.wl, "w")["status"];
  REQUIRE(HasCondition(f.Get(f.wl, "w"), "Admitted"));
  patch["status"]["conditions"] = json::array();
  REQUIRE(f.Do("PATCH", kWorkloads + "/w", patch, "application/merge-patch+json").status == 200);
  CHECK(f.Get(f.wl, "w")["status"] == before);
  json ops = json::array({{{"op", "add"}, {"path", "/status/preemptionGates"}, {"value", json::array()}}});
  REQUIRE(f.Do("PATCH", kWorkloads + "/w", ops, "application/json-patch+json").status == 200);
  CHECK(f.Get(f.wl, "w")["status"] == before);
  f.Events();
}

TEST_CASE("preemption gates through the API: refused in v1beta2 when invalid, kept unchecked in v1beta1",
          "[sim][preemption][validation]") {
  Fixture f;
  json bad = GatedWorkload("bad", 0);
  bad["spec"]["preemptionGates"] = json::array({{{"name", ""}}});
  http::Response r = f.Do("POST", kWorkloads, bad);
  CHECK(r.status == 422);
  CHECK_THAT(r.body, Catch::Contains("spec.preemptionGates[0].name"));
  // v1beta1 has no such field: stored as given, as any field it does not know.
  r = f.Do("POST", "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads", bad);
  CHECK(r.status == 201);
  CHECK(f.Get(f.wl, "bad")["spec"]["preemptionGates"] == bad["spec"]["preemptionGates"]);

  REQUIRE(f.Do("POST", kWorkloads, GatedWorkload("w", 0)).status == 201);
  json ajar = OpenGate();
  ajar["status"]["preemptionGates"][0]["position"] = "Ajar";
  r = f.Do("PATCH", kWorkloads + "/w/status", ajar, "application/merge-patch+json");
  CHECK(r.status == 422);
  CHECK_THAT(r.body, Catch::Contains("status.preemptionGates[0].position: Unsupported value"));
}

}  // namespace
}  // namespace gantry::sim
