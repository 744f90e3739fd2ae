// Quota accounting through a whole ClusterState (no HTTP), driven by a fake
// clock: create -> admit, adopt -> run -> finish -> release, delete, evict.
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
  bool Cond(const std::string& name, const std::string& type) { return HasCondition(Get(wl, name), type); }
};

TEST_CASE("quota over create, adopt, finish", "[sim][quota]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 8)).ok());
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("b", 2, 8)).ok());  // 16: does not fit beside a
  f.state.Tick();
  CHECK(f.Cond("a", "Admitted"));
  CHECK_FALSE(f.Cond("b", "QuotaReserved"));
  CHECK(f.ReservedGpus() == 8);

  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "a", "uid-a", "30s")).ok());
  json job = f.Get(f.jobs, "job-a");
  CHECK(job["spec"]["suspend"] == false);
  CHECK(job["status"]["active"] == 1);
  CHECK(f.Get(f.wl, "a")["metadata"]["ownerReferences"][0]["name"] == "job-a");

  f.clock.Advance(29'000);
  f.state.Tick();
  CHECK_FALSE(f.Cond("a", "Finished"));
  f.clock.Advance(1'000);
  f.state.Tick();  // a finishes and releases; b is admitted in the same tick
  CHECK(f.Cond("a", "Finished"));
  CHECK(f.Get(f.jobs, "job-a")["status"]["succeeded"] == 1);
  CHECK(f.Cond("b", "Admitted"));
  CHECK(f.ReservedGpus() == 16);
  auto runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].end_ms - runs[0].start_ms == 30'000);
  CHECK(runs[0].job_uid == "uid-a");
}

TEST_CASE("a job without an admitted Workload stays suspended", "[sim][quota]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("big", 3, 8)).ok());  // 24 > 16
  auto job = MakeJob("job-big", "big", "u");
  job["spec"]["suspend"] = false;
  REQUIRE(f.state.Create(f.jobs, "team-a", job).ok());
  f.state.Tick();
  CHECK(f.Get(f.jobs, "job-big")["spec"]["suspend"] == true);
  CHECK(f.journal.Snapshot().empty());
  f.state.SetQuota({{kGpuResource, 24 * kGpu}});
  f.state.Tick();  // admitted now, and the waiting job is adopted
  CHECK(f.Cond("big", "Admitted"));
  CHECK(f.Get(f.jobs, "job-big")["spec"]["suspend"] == false);
  CHECK(f.journal.Snapshot().size() == 1);
}

TEST_CASE("deleting a Workload or a running job releases quota", "[sim][quota]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 2, 8)).ok());
  f.state.Tick();
  CHECK(f.ReservedGpus() == 16);
  REQUIRE(f.state.Delete(f.wl, "team-a", "a", "").ok());
  CHECK(f.ReservedGpus() == 0);

  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("b", 1, 8)).ok());
  f.state.Tick();
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-b", "b", "ub")).ok());
  f.clock.Advance(100);
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-b", "Background").ok());
  CHECK(f.ReservedGpus() == 0);
  CHECK_FALSE(f.state.Get(f.wl, "team-a", "b").ok());  // garbage-collected with its owner
  auto runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].end_reason == "Deleted");
}

TEST_CASE("eviction releases quota and suspends the job", "[sim][quota]") {
  Fixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 2, 8)).ok());
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("b", 1, 8)).ok());
  f.state.Tick();
  CHECK_FALSE(f.Cond("b", "QuotaReserved"));
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "a", "ua")).ok());
  REQUIRE(f.state.Evict("team-a", "a").ok());
  json a = f.Get(f.wl, "a");
  CHECK(HasCondition(a, "Evicted"));
  CHECK_FALSE(HasCondition(a, "QuotaReserved"));
  CHECK(f.Get(f.jobs, "job-a")["spec"]["suspend"] == true);
  f.state.Tick();
  CHECK(f.Cond("b", "Admitted"));  // the freed quota goes to the next one
  CHECK(f.ReservedGpus() == 8);
  CHECK(f.journal.Snapshot().at(0).end_reason == "Evicted");
  CHECK_FALSE(f.state.Evict("team-a", "a").ok());
}

TEST_CASE("unknown LocalQueue and admission delay", "[sim][quota]") {
  FakeClock clock;
  Journal journal;
  ClusterConfig cfg = testing::SmallCluster();
  cfg.admission_delay_ms = 500;
  ClusterState state(cfg, &journal, &clock);
  const ResourceInfo& wl = ResourceByPlural("workloads");
  REQUIRE(state.Create(wl, "team-a", MakeWorkload("lost", 1, 1, "no-such-queue")).ok());
  REQUIRE(state.Create(wl, "team-a", MakeWorkload("slow", 1, 1)).ok());
  state.Tick();
  CHECK_FALSE(HasCondition(*state.Get(wl, "team-a", "slow"), "QuotaReserved"));
  clock.Advance(500);
  state.Tick();
  CHECK(HasCondition(*state.Get(wl, "team-a", "slow"), "Admitted"));
  json lost = *state.Get(wl, "team-a", "lost");
  CHECK_FALSE(HasCondition(lost, "QuotaReserved"));
  CHECK(lost["status"]["conditions"][0]["message"].get<std::string>().find("no-such-queue") != std::string::npos);
}

}  // namespace
}  // namespace gantry::sim
