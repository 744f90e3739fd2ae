// Decide() for an owned job whose Workload the owner's Kueue evicted and
// admitted again before gantry saw it evicted (Evicted back to False,
// reason QuotaReserved): the job started over in place, which an
// at-most-once job must not do.
#include <catch2/catch.hpp>

#include "decide_world.h"

namespace gantry::dispatch {
using namespace decide_world;

namespace {

constexpr int64_t kCreated = 1'700'000'000'000;  // the real job's creationTimestamp

// A Running job of policy at epoch 2 in c1: its Workload admitted, its
// Evicted condition last changed at evicted_changed_ms (0: never).
World RunningIn(const std::string& policy, int64_t evicted_changed_ms) {
  World w;
  w.spec = Spec(policy);
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  ObservedWorkload& wl = w.Workload("c1", 2);
  wl.quota_reserved = wl.admitted = true;
  wl.evicted_changed_ms = evicted_changed_ms;
  w.RemoteJob("c1", 2, RemoteJobState::kRunning).created_ms = kCreated;
  return w;
}

}  // namespace

TEST_CASE("an at-most-once job evicted and admitted again in place since its job was created fails",
          "[dispatch][decide][evicted]") {
  for (const char* policy : {"Fail", "Wait"}) {
    for (int64_t changed : {kCreated, kCreated + 60'000}) {
      INFO(policy << ", Evicted changed " << (changed - kCreated) / 1000 << " s after the job's creation");
      World w = RunningIn(policy, changed);
      Plan p = Decide(w.Input());
      REQUIRE(p.write);
      REQUIRE(p.write->phase);
      CHECK(*p.write->phase == JobPhase::kFailed);
      REQUIRE_FALSE(p.write->events.empty());
      CHECK(p.write->events.front().reason == "Evicted");
      CHECK_THAT(*p.write->message, Catch::Contains("admitted it again"));
      CHECK(Count(p, Verb::kDelete, "Job", "c1") == 1);  // the run started over is stopped
    }
  }
}

TEST_CASE("an eviction before the job was created, or a Requeue job's, leaves the run alone",
          "[dispatch][decide][evicted]") {
  // Evicted and admitted again while only a copy (before the lease): the
  // job was created after, nothing ran twice.
  for (int64_t changed : {int64_t{0}, kCreated - 1'000}) {
    World w = RunningIn("Fail", changed);
    Plan p = Decide(w.Input());
    CHECK((!p.write || !p.write->phase));
    CHECK(Count(p, Verb::kDelete, "Job") == 0);
  }
  // A Requeue job may run again: Kueue's rerun in place stands.
  World w = RunningIn("Requeue", kCreated + 60'000);
  Plan p = Decide(w.Input());
  CHECK((!p.write || !p.write->phase));
  CHECK(Count(p, Verb::kDelete, "Job") == 0);
}

TEST_CASE("a job that finished unseen and whose job was deleted is told from its Workload, not as JobGone",
          "[dispatch][decide][evicted]") {
  World w;
  w.spec = Spec("Fail");
  w.OwnedBy(JobPhase::kRunning, "c1", 2);
  ObservedWorkload& wl = w.Workload("c1", 2);
  wl.quota_reserved = wl.admitted = wl.finished = true;
  wl.reason = "Succeeded";
  Plan p = Decide(w.Input());
  REQUIRE(p.write);
  REQUIRE(p.write->phase);
  CHECK(*p.write->phase == JobPhase::kSucceeded);
}

}  // namespace gantry::dispatch
