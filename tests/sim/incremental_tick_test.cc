// The tick works from indexes, not by walking the store: these tests hold
// its results to what a full recount of the store says, and check that the
// retries it no longer makes on every tick still happen when they matter.
#include <catch2/catch.hpp>

#include "cluster_state.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;
using testing::MakeJob;
using testing::MakeWorkload;

using testing::kGpu;

struct Fixture : testing::ClusterFixture {
  const ResourceInfo& cqs = ResourceByPlural("clusterqueues");
  const ResourceInfo& lqs = ResourceByPlural("localqueues");

  int64_t Rv() { return state.Summary()["resourceVersion"].get<int64_t>(); }
};

struct Counts {
  int64_t pending = 0, reserving = 0, admitted = 0;
  bool operator==(const Counts&) const = default;
};

// The queue counts by the rule Kueue's status follows, from a full list.
Counts Recount(Fixture& f, const std::string& ns_queue) {
  Counts c;
  auto list = f.state.List(f.wl, "kueue.x-k8s.io/v1beta2", "", LabelSelector{}, 0, "");
  for (const json& w : (*list)["items"]) {
    if (HasCondition(w, "Finished")) continue;
    if (!ns_queue.empty() && w["metadata"]["namespace"].get<std::string>() + "/" +
                                     w["spec"].value("queueName", "") != ns_queue) {
      continue;
    }
    if (HasCondition(w, "QuotaReserved")) {
      ++c.reserving;
      if (HasCondition(w, "Admitted")) ++c.admitted;
    } else {
      ++c.pending;
    }
  }
  return c;
}

Counts StatusCounts(const json& queue) {
  const json& st = queue["status"];
  return {st["pendingWorkloads"].get<int64_t>(), st["reservingWorkloads"].get<int64_t>(),
          st["admittedWorkloads"].get<int64_t>()};
}

void CheckQueueStatus(Fixture& f) {
  CHECK(StatusCounts(f.Get(f.cqs, "cluster-queue", "")) == Recount(f, ""));
  for (const auto& [ns, name] : f.state.config().local_queues) {
    INFO(ns << "/" << name);
    CHECK(StatusCounts(f.Get(f.lqs, name, ns)) == Recount(f, ns + "/" + name));
  }
}

TEST_CASE("queue status follows every kind of Workload change", "[sim][tick]") {
  Fixture f;
  REQUIRE(f.state.config().cluster_queue == "cluster-queue");
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 8)).ok());
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("b", 2, 8)).ok());           // does not fit beside a
  REQUIRE(f.state.Create(f.wl, "team-b", MakeWorkload("c", 2, 8, "team-b")).ok());  // nor does c
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("lost", 1, 1, "nowhere")).ok());
  f.TickAfter(10);
  CheckQueueStatus(f);
  CHECK(StatusCounts(f.Get(f.cqs, "cluster-queue", "")) == Counts{3, 1, 1});

  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "a", "ua", "1s")).ok());
  f.TickAfter(1000);  // a finishes; b (16 GPUs) fits the freed quota
  CheckQueueStatus(f);
  CHECK(HasCondition(f.Get(f.wl, "b"), "Admitted"));

  REQUIRE(f.state.Evict("team-a", "b").ok());
  f.TickAfter(10);
  CheckQueueStatus(f);
  CHECK(HasCondition(f.Get(f.wl, "c", "team-b"), "Admitted"));

  // Deactivated through the API: no longer a candidate, still pending.
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("idle", 1, 1)).ok());
  REQUIRE(f.state.Patch(f.wl, "team-a", "idle", "merge", {{"spec", {{"active", false}}}}, false).ok());
  REQUIRE(f.state.Delete(f.wl, "team-b", "c", "").ok());
  f.TickAfter(10);
  CheckQueueStatus(f);
  CHECK_FALSE(HasCondition(f.Get(f.wl, "idle"), "QuotaReserved"));
  CHECK(f.ReservedGpus() == 0);
}

TEST_CASE("a tick with nothing due and nothing changed writes nothing", "[sim][tick]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 8)).ok());
  f.TickAfter(10);
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "a", "ua", "1s")).ok());
  f.TickAfter(10);
  int64_t rv = f.Rv();
  for (int i = 0; i < 50; ++i) f.TickAfter(10);  // 510 ms of the 1 s run
  CHECK(f.Rv() == rv);
  f.TickAfter(500);  // due: the job, the Workload and the queues change
  CHECK(f.Rv() > rv);
  CHECK(HasCondition(f.Get(f.wl, "a"), "Finished"));
}

TEST_CASE("a job created before its Workload is adopted once the Workload is admitted", "[sim][tick]") {
  Fixture f;
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-early", "early", "ue")).ok());
  f.TickAfter(10);
  CHECK(f.Get(f.jobs, "job-early")["spec"]["suspend"] == true);
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("early", 1, 8)).ok());
  f.TickAfter(10);  // admitted, then adopted in the same tick
  CHECK(f.Get(f.jobs, "job-early")["spec"]["suspend"] == false);
  CHECK(f.Get(f.wl, "early")["metadata"]["ownerReferences"][0]["name"] == "job-early");
  REQUIRE(f.journal.Snapshot().size() == 1);
}

TEST_CASE("a job patched to name an admitted Workload adopts it", "[sim][tick]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("w", 1, 8)).ok());
  auto job = MakeJob("job-w", "w", "uw");
  job["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"] = "not-yet";
  REQUIRE(f.state.Create(f.jobs, "team-a", job).ok());
  f.TickAfter(10);
  CHECK(f.journal.Snapshot().empty());
  // Pointed at the admitted Workload by a patch: retried on the next pass.
  REQUIRE(f.state.Patch(f.jobs, "team-a", "job-w", "merge",
                        {{"metadata", {{"annotations", {{"kueue.x-k8s.io/prebuilt-workload-name", "w"}}}}}}, false)
              .ok());
  f.TickAfter(10);
  CHECK(f.journal.Snapshot().size() == 1);
  CHECK(f.Get(f.jobs, "job-w")["spec"]["suspend"] == false);
}

TEST_CASE("runs due in one tick all finish, at that tick", "[sim][tick]") {
  Fixture f;
  for (const char* name : {"x", "y", "z"}) {
    REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload(name, 1, 1)).ok());
  }
  f.TickAfter(10);
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-z", "z", "uz", "300ms")).ok());
  f.clock.Advance(100);
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-x", "x", "ux", "200ms")).ok());
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-y", "y", "uy", "1s")).ok());
  f.TickAfter(250);  // 350 ms after the first start: z and x are due, y is not
  auto runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 3);
  for (const Run& r : runs) {
    INFO(r.name);
    if (r.name == "job-y") {
      CHECK(r.end_ms == 0);
    } else {
      CHECK(r.end_ms == f.clock.NowMillis());
      CHECK(r.end_reason == "Succeeded");
    }
  }
}

TEST_CASE("a Workload admitted again after a status patch is counted once", "[sim][tick]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 8)).ok());
  f.TickAfter(10);
  REQUIRE(f.state.Patch(f.wl, "team-a", "a", "merge", {{"status", {{"conditions", json::array()}}}}, true).ok());
  f.TickAfter(10);
  CHECK(HasCondition(f.Get(f.wl, "a"), "Admitted"));
  auto reserved_in_status = [&] {
    json cq = f.Get(f.cqs, "cluster-queue", "");
    for (const json& r : cq["status"]["flavorsReservation"][0]["resources"]) {
      if (r["name"] == kGpuResource) return r["total"].get<std::string>();
    }
    return std::string("?");
  };
  CHECK(reserved_in_status() == "8");
  CHECK(f.ReservedGpus() == 8);
  REQUIRE(f.state.Delete(f.wl, "team-a", "a", "").ok());
  f.TickAfter(10);
  CHECK(reserved_in_status() == "0");
}

TEST_CASE("a Workload whose pod sets shrink is admitted with its new demand", "[sim][tick]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("big", 3, 8)).ok());  // 24 > 16
  f.TickAfter(10);
  CHECK_FALSE(HasCondition(f.Get(f.wl, "big"), "QuotaReserved"));
  json smaller = {{"spec", {{"podSets", MakeWorkload("big", 2, 8)["spec"]["podSets"]}}}};
  REQUIRE(f.state.Patch(f.wl, "team-a", "big", "merge", smaller, false).ok());
  f.TickAfter(10);
  CHECK(HasCondition(f.Get(f.wl, "big"), "Admitted"));
  CHECK(f.ReservedGpus() == 16);
}

}  // namespace
}  // namespace gantry::sim

namespace gantry::sim {
namespace {

// A TrainJob in the shape gantry's generic adapter writes: suspended, naming
// its prebuilt Workload.
json MakeTrainJob(const std::string& name, const std::string& workload, json trainer) {
  json j = MakeJob(name, workload, "u-" + name);
  j["apiVersion"] = "trainer.kubeflow.org/v1alpha1";
  j["kind"] = "TrainJob";
  j["spec"] = {{"suspend", true}, {"trainer", std::move(trainer)}};
  return j;
}

TEST_CASE("a TrainJob is adopted, runs and completes like a Job", "[sim][tick]") {
  Fixture f;
  const ResourceInfo& trainjobs = ResourceByPlural("trainjobs");
  REQUIRE(f.state.Create(trainjobs, "team-a", MakeTrainJob("tj", "w", {{"numNodes", 2}})).ok());
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("w", 1, 8)).ok());
  f.TickAfter(10);  // admitted, then adopted in the same tick
  CHECK(f.Get(trainjobs, "tj")["spec"]["suspend"] == false);
  CHECK(f.Get(f.wl, "w")["metadata"]["ownerReferences"][0]["kind"] == "TrainJob");
  f.TickAfter(1000);  // MakeJob's 1 s run
  CHECK(HasCondition(f.Get(trainjobs, "tj"), "Complete"));
  CHECK(HasCondition(f.Get(f.wl, "w"), "Finished"));
  auto runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].kind == "TrainJob");
}

TEST_CASE("a runnable object of the wrong shape is refused at create and patch, never run", "[sim][tick]") {
  Fixture f;
  const ResourceInfo& trainjobs = ResourceByPlural("trainjobs");
  const ResourceInfo& jobsets = ResourceByPlural("jobsets");
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("w", 1, 8)).ok());
  struct Case {
    const ResourceInfo* res;
    json object;
    const char* field;
  };
  json bad_spec = MakeJob("j1", "w", "u1");
  bad_spec["spec"] = "run";
  json bad_parallelism = MakeJob("j2", "w", "u2");
  bad_parallelism["spec"]["parallelism"] = "2";
  json bad_suspend = MakeJob("j3", "w", "u3");
  bad_suspend["spec"]["suspend"] = "true";
  json nulls = MakeJob("j4", "w", "u5");  // null is unset, as the apiserver reads it
  nulls["spec"]["suspend"] = nullptr;
  nulls["spec"]["completions"] = nullptr;
  json bad_jobset = MakeJob("js", "w", "u4");
  bad_jobset["apiVersion"] = "jobset.x-k8s.io/v1alpha2";
  bad_jobset["kind"] = "JobSet";
  bad_jobset["spec"] = {{"suspend", true}, {"replicatedJobs", {{{"replicas", 1}, {"template", "x"}}}}};
  const Case cases[] = {
      {&f.jobs, bad_spec, "spec: must be an object"},
      {&f.jobs, bad_parallelism, "spec.parallelism: must be an integer >= 0"},
      {&f.jobs, bad_suspend, "spec.suspend: must be a boolean"},
      {&f.jobs, nulls, ""},
      {&trainjobs, MakeTrainJob("t1", "w", nullptr), ""},  // no trainer: one node
      {&trainjobs, MakeTrainJob("t2", "w", "big"), "spec.trainer: must be an object"},
      {&trainjobs, MakeTrainJob("t3", "w", {{"numNodes", "2"}}), "spec.trainer.numNodes: must be an integer >= 0"},
      {&jobsets, bad_jobset, "spec.replicatedJobs[0].template: must be an object"},
  };
  for (const Case& c : cases) {
    INFO(c.object.dump());
    auto created = f.state.Create(*c.res, "team-a", c.object);
    if (std::string(c.field).empty()) {
      CHECK(created.ok());
      continue;
    }
    REQUIRE_FALSE(created.ok());
    CHECK(created.status().code() == Code::kInvalidArgument);
    CHECK_THAT(created.status().message(), Catch::Contains(c.field) && Catch::Contains("is invalid"));
  }
  // A patch that would break a stored one is refused the same way.
  auto patched = f.state.Patch(trainjobs, "team-a", "t1", "merge", {{"spec", {{"trainer", {{"numNodes", -1}}}}}}, false);
  REQUIRE_FALSE(patched.ok());
  CHECK_THAT(patched.status().message(), Catch::Contains("spec.trainer.numNodes"));
  f.TickAfter(10);  // one of the good ones runs (the Workload takes one job); nothing threw
  CHECK(f.journal.Snapshot().size() == 1);
  f.TickAfter(1000);  // it finishes; nothing threw
  CHECK(f.journal.Snapshot().size() == 1);
}

}  // namespace
}  // namespace gantry::sim
