// terminationGrace: a deleted job's pods outlive its delete. With
// propagationPolicy Background the object goes at once and the run ends
// later; with Foreground the object stays, marked for deletion, until the
// run ends. 0 (the default): the run ends with the delete.
#include <catch2/catch.hpp>

#include "gantry/common/json_path.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;
using testing::ClusterFixture;
using testing::MakeJob;
using testing::MakeWorkload;

ClusterConfig WithGrace(int64_t grace_ms) {
  ClusterConfig c = testing::SmallCluster("c1", 2);
  c.termination_grace_ms = grace_ms;
  return c;
}

// job-a running (adopted by its admitted Workload a) since 100 ms ago.
void Running(ClusterFixture& f) {
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 8)).ok());
  f.state.Tick();
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "a", "ua", "1h")).ok());
  f.TickAfter(100);
  REQUIRE(f.journal.Snapshot().size() == 1);
}

}  // namespace

TEST_CASE("terminationGrace, Background: the job goes at once, its run ends a grace later", "[sim][delete]") {
  ClusterFixture f(WithGrace(3'000));
  Running(f);
  const int64_t deleted_at = f.clock.NowMillis();
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-a", "Background").ok());
  CHECK_FALSE(f.state.Get(f.jobs, "team-a", "job-a").ok());
  f.TickAfter(2'900);
  CHECK(f.journal.Snapshot().at(0).end_ms == 0);  // its pods still stopping
  f.TickAfter(200);
  const Run run = f.journal.Snapshot().at(0);
  CHECK(run.end_reason == "Deleted");
  CHECK(run.end_ms >= deleted_at + 3'000);
}

TEST_CASE("terminationGrace, Foreground: the job stays marked for deletion until its run ends, then goes",
          "[sim][delete]") {
  ClusterFixture f(WithGrace(3'000));
  Running(f);
  auto answer = f.state.Delete(f.jobs, "team-a", "job-a", "Foreground");
  REQUIRE(answer.ok());
  const json marked = f.Get(f.jobs, "job-a");
  CHECK(JsonAt(marked, {"metadata", "deletionTimestamp"}) != nullptr);
  CHECK(marked["metadata"]["finalizers"] == json::array({"foregroundDeletion"}));
  CHECK(json::parse(*answer)["metadata"].contains("deletionTimestamp"));  // the answer is the object as marked
  // Deleted in the foreground again meanwhile: nothing changes, it goes when its pods do.
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-a", "Foreground").ok());
  f.TickAfter(2'900);
  CHECK(f.state.Get(f.jobs, "team-a", "job-a").ok());
  CHECK(f.journal.Snapshot().at(0).end_ms == 0);
  f.TickAfter(200);
  CHECK_FALSE(f.state.Get(f.jobs, "team-a", "job-a").ok());
  CHECK_FALSE(f.state.Get(f.wl, "team-a", "a").ok());  // garbage-collected with its owner
  CHECK(f.journal.Snapshot().at(0).end_reason == "Deleted");
}

TEST_CASE("terminationGrace, Foreground: a job with no run going (suspended) goes at once", "[sim][delete]") {
  ClusterFixture f(WithGrace(3'000));
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-w", "nowhere", "uw")).ok());  // its Workload is not there
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-w", "Foreground").ok());
  CHECK_FALSE(f.state.Get(f.jobs, "team-a", "job-w").ok());
}

TEST_CASE("no terminationGrace (the default): a Foreground delete ends the run and removes the job at once",
          "[sim][delete]") {
  ClusterFixture f;
  Running(f);
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-a", "Foreground").ok());
  CHECK_FALSE(f.state.Get(f.jobs, "team-a", "job-a").ok());
  CHECK(f.journal.Snapshot().at(0).end_reason == "Deleted");
}

TEST_CASE("terminationGrace: an evicted job's run ends a grace later, and a foreground delete meanwhile waits for it",
          "[sim][delete]") {
  ClusterFixture f(WithGrace(3'000));
  Running(f);
  const int64_t evicted_at = f.clock.NowMillis();
  REQUIRE(f.state.Evict("team-a", "a").ok());
  CHECK(f.Get(f.jobs, "job-a")["spec"]["suspend"] == true);
  f.TickAfter(1'000);
  CHECK(f.journal.Snapshot().at(0).end_ms == 0);  // suspended, its pods still stopping
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-a", "Foreground").ok());
  CHECK(f.state.Get(f.jobs, "team-a", "job-a").ok());
  f.TickAfter(2'100);
  CHECK_FALSE(f.state.Get(f.jobs, "team-a", "job-a").ok());
  const Run run = f.journal.Snapshot().at(0);
  CHECK(run.end_reason == "Evicted");
  CHECK(run.end_ms >= evicted_at + 3'000);
}

TEST_CASE("terminationGrace: a foreground deletion asked again in the background goes at once, its run a grace "
          "after the first delete",
          "[sim][delete]") {
  ClusterFixture f(WithGrace(3'000));
  Running(f);
  const int64_t deleted_at = f.clock.NowMillis();
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-a", "Foreground").ok());
  f.TickAfter(1'000);
  REQUIRE(f.state.Delete(f.jobs, "team-a", "job-a", "Background").ok());
  CHECK_FALSE(f.state.Get(f.jobs, "team-a", "job-a").ok());
  // Created again under the same name meanwhile: the end of the first's
  // run leaves the second alone.
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "b", "ua2", "1h")).ok());
  f.TickAfter(2'100);
  CHECK(f.journal.Snapshot().at(0).end_ms >= deleted_at + 3'000);
  CHECK(f.state.Get(f.jobs, "team-a", "job-a").ok());
}

TEST_CASE("terminationGrace: a job re-admitted while its evicted run's pods still stop starts only once they "
          "are gone",
          "[sim][delete]") {
  ClusterConfig c = WithGrace(3'000);
  c.admission_checks.push_back({"provisioning", CheckState::kReady, 0});
  ClusterFixture f(c);
  Running(f);
  // The check turns Retry: Kueue evicts the Workload, requeues it, and admits it again.
  REQUIRE(f.state.SetCheckState("team-a", "a", "provisioning", CheckState::kRetry).ok());
  for (int i = 0; i < 20; ++i) f.TickAfter(100);
  CHECK(f.journal.Snapshot().size() == 1);
  for (int i = 0; i < 15; ++i) f.TickAfter(100);
  const std::vector<Run> runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].start_ms >= runs[0].end_ms);
  CHECK(CheckRuns(runs).empty());
}

}  // namespace gantry::sim
