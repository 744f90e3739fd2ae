// Fleet with a fake prober, a fake clock and the real SQLite store.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "fleet_fixture.h"
#include "log_capture.h"

namespace gantry::inventory {

TEST_CASE("fleet health, capacity and a persisted outage start", "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", false}};
  {
    Fleet fleet(prober, *store, clock, options);
    CHECK(fleet.Start().empty());
    fleet.ProbeAllNow();
    auto c1 = fleet.Cluster("c1");
    REQUIRE(c1);
    CHECK(c1->health.state == HealthState::kReady);
    REQUIRE(c1->capacity);
    CHECK(c1->capacity->quota.at("nvidia.com/gpu").nominal_milli == 32'000);
    auto c2 = fleet.Cluster("c2");
    CHECK(c2->health.state == HealthState::kNotReady);
    CHECK(c2->health.first_lost_ms == 1'000'000);
    CHECK(c2->health.last_error.find("refused") != std::string::npos);
    // The placement view: c1 Ready with fresh capacity, c2 not Ready.
    auto snap = fleet.Snapshot(clock.NowMillis());
    REQUIRE(snap.size() == 2);
    CHECK(snap[0].health == placement::ClusterHealth::kReady);
    CHECK_FALSE(snap[0].capacity.stale);
    CHECK(snap[1].health == placement::ClusterHealth::kNotReady);
    // Capacity goes stale when nobody refreshes it.
    CHECK(fleet.Snapshot(clock.NowMillis() + options.stale_after_ms + 1)[0].capacity.stale);
    // Lost once NotReady longer than the timeout.
    CHECK(fleet.Snapshot(1'000'000 + options.lost_timeout_ms + 1)[1].health == placement::ClusterHealth::kLost);
    fleet.Stop();
  }
  // A restart keeps c2's outage start: the lost timeout is not reset.
  REQUIRE(testing::WaitFor([&] { return store->LoadOutages()->count("c2") == 1; }));
  clock.Advance(60'000);
  {
    Fleet fleet(prober, *store, clock, options);
    fleet.Start();
    CHECK(fleet.Cluster("c2")->health.first_lost_ms == 1'000'000);
    fleet.ProbeAllNow();
    CHECK(fleet.Cluster("c2")->health.first_lost_ms == 1'000'000);
    // Recovery clears the persisted outage.
    prober.up["c2"] = true;
    fleet.ProbeAllNow();
    CHECK(fleet.Cluster("c2")->health.state == HealthState::kReady);
    CHECK_FALSE(fleet.Cluster("c2")->health.first_lost_ms.has_value());
    fleet.Stop();
  }
  CHECK(testing::WaitFor([&] { return store->LoadOutages()->empty(); }));
}

TEST_CASE("a cluster out of reach is probed again when its outage reaches the lost timeout, whatever its backoff",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.lost_timeout_ms = 3'000;
  options.backoff = {10'000, 60'000, Jitter::kNone};  // next at +10 s, past the timeout
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}};
  Fleet fleet(prober, *store, clock, options);
  CHECK(fleet.Start().empty());
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'000'000; }));
  // Its verdict needs a failed probe at the timeout: one falls due then,
  // not after the backoff's 10 s.
  clock.Advance(3'000);
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'003'000; }));
  CHECK(fleet.Cluster("c1")->health.ShownLostForMs() == 3'000);
  fleet.Stop();
}

TEST_CASE("a step back of the wall clock does not stop the probes: they fall due on the monotonic clock, and what "
          "they find is dated on the wall",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.backoff = {10'000, 60'000, Jitter::kNone};
  options.failure_threshold = 1;
  FakeClock clock(1'000'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  Fleet fleet(prober, *store, clock, options);
  CHECK(fleet.Start().empty());
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.state == HealthState::kReady; }));
  REQUIRE(prober.Probes("c1") == 1);
  // An hour back (NTP, a resumed VM): on the wall clock, the next probe
  // would be an hour and an interval away, and an outage unseen as long.
  clock.StepWall(-3'600'000);
  prober.up["c1"] = false;
  clock.Advance(options.probe_interval_ms);
  REQUIRE(testing::WaitFor([&] { return prober.Probes("c1") == 2; }));
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.state == HealthState::kNotReady; }));
  CHECK(fleet.Cluster("c1")->health.first_lost_ms == clock.NowMillis());
  CHECK(clock.NowMillis() == 1'000'000'000 - 3'600'000 + options.probe_interval_ms);
  fleet.Stop();
}

TEST_CASE("a cluster out of reach is probed at least five times within its lost timeout: one back for a moment is "
          "seen",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.lost_timeout_ms = 10'000;
  options.backoff = {10'000, 60'000, Jitter::kNone};  // alone, the next would be at the timeout
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}};
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'000'000; }));
  clock.Advance(2'000);
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'002'000; }));
  // Back for a moment: the next probe, 2 s on, sees it.
  prober.up["c1"] = true;
  clock.Advance(2'000);
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.state == HealthState::kReady; }));
  CHECK_FALSE(fleet.Cluster("c1")->health.first_lost_ms.has_value());
  fleet.Stop();
}

TEST_CASE("a Ready cluster's first failed probe is confirmed a second later before it is NotReady, since that "
          "first failure",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.backoff = {10'000, 60'000, Jitter::kNone};
  REQUIRE(options.failure_threshold == 2);  // the default
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  Fleet fleet(prober, *store, clock, options);
  CHECK(fleet.Start().empty());
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.state == HealthState::kReady; }));
  prober.up["c1"] = false;
  clock.Advance(options.probe_interval_ms);
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'005'000; }));
  CHECK(fleet.Cluster("c1")->health.state == HealthState::kReady);
  CHECK(fleet.Snapshot(clock.NowMillis())[0].health == placement::ClusterHealth::kReady);
  // Probed again after doubt_probe_ms, not after the backoff's 10 s.
  clock.Advance(options.doubt_probe_ms);
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'006'000; }));
  const ClusterHealth h = fleet.Cluster("c1")->health;
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.since_ms == 1'005'000);
  CHECK(h.first_lost_ms == 1'005'000);
  CHECK(fleet.Snapshot(clock.NowMillis())[0].health == placement::ClusterHealth::kNotReady);
  // The outage's start was saved at its first failure.
  CHECK(testing::WaitFor([&] {
    auto saved = store->LoadOutages();
    return saved.ok() && saved->count("c1") && saved->at("c1").first_lost_ms == 1'005'000;
  }));
  fleet.Stop();
}

TEST_CASE("a doubted cluster's outage is not kept in the store for a restart to find",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_interval_ms = 3'600'000;  // probed here only
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  prober.slow_clock = &clock;
  prober.slow_ms = 0;  // the clock stands still: c1's confirming probe never falls due
  {
    Fleet fleet(prober, *store, clock, options);
    REQUIRE(fleet.Start().empty());
    fleet.ProbeAllNow();
    prober.up["c1"] = false;
    prober.slow["c2"] = true;
    fleet.ProbeAllNow();  // c1 (probed first) doubted; c2 NotReady at once
    REQUIRE(fleet.Cluster("c1")->health.Doubted());
    REQUIRE(fleet.Cluster("c2")->health.state == HealthState::kNotReady);
    fleet.Stop();
  }
  // The store writes in order: once c2's outage is there, c1's doubt would
  // be too had it been written.
  REQUIRE(testing::WaitFor([&] { return store->LoadOutages()->count("c2") == 1; }));
  CHECK(store->LoadOutages()->count("c1") == 0);  // a restart restores no outage of c1
}

TEST_CASE("a Ready cluster whose probe waited out its deadline with no answer is NotReady at once: no flake",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_interval_ms = 3'600'000;  // probed here only
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  prober.slow_clock = &clock;
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->health.state == HealthState::kReady);
  prober.slow["c1"] = true;
  fleet.ProbeAllNow();
  const ClusterHealth h = fleet.Cluster("c1")->health;
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.consecutive_failures == 1);
  CHECK(h.first_lost_ms == 1'000'000);  // when the probe went out: no answer since
  CHECK(h.since_ms == 1'000'000);
  CHECK(h.last_failure_ms == 1'005'000);  // and none until it gave up
  fleet.Stop();
}

namespace {

// The real store, but what it kept of the clusters cannot be read: the
// outages (when outages_fail) or the identities.
class UnreadableState final : public ClusterStateStore {
 public:
  UnreadableState(ClusterStateStore& real, bool outages_fail) : real_(real), outages_fail_(outages_fail) {}
  Result<std::map<std::string, ClusterOutage>> LoadOutages() override {
    if (outages_fail_) return Status::Io("disk I/O error");
    return real_.LoadOutages();
  }
  void SaveOutage(std::string cluster, std::optional<ClusterOutage> outage, std::string last_error,
                  StoreCallback<bool> done) override {
    real_.SaveOutage(std::move(cluster), outage, std::move(last_error), std::move(done));
  }
  Result<std::map<std::string, int64_t>> LoadWatchRefusals() override { return real_.LoadWatchRefusals(); }
  void SaveWatchRefusal(std::string cluster, std::optional<int64_t> since_ms, StoreCallback<bool> done) override {
    real_.SaveWatchRefusal(std::move(cluster), since_ms, std::move(done));
  }
  Result<std::map<std::string, std::string>> LoadClusterIds() override {
    if (!outages_fail_) return Status::Io("disk I/O error");
    return real_.LoadClusterIds();
  }
  void SaveClusterId(std::string cluster, std::optional<std::string> cluster_id, StoreCallback<bool> done) override {
    real_.SaveClusterId(std::move(cluster), std::move(cluster_id), std::move(done));
  }

 private:
  ClusterStateStore& real_;
  bool outages_fail_;
};

}  // namespace

TEST_CASE("a start that cannot read what the store kept of the clusters says so, for the daemon to refuse it",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  {
    Fleet fleet(prober, *store, clock, options);
    REQUIRE(fleet.Start().empty());
    CHECK(fleet.StateStatus().ok());
  }
  const int probed = prober.Probes("c1");
  const bool outages_fail = GENERATE(true, false);
  UnreadableState broken(*store, outages_fail);
  Fleet fleet(prober, broken, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.Stop();
  CHECK(prober.Probes("c1") == probed);  // nothing probed: the daemon stops there
  CHECK_FALSE(fleet.StateStatus().ok());
  CHECK_THAT(fleet.StateStatus().message(),
             Catch::Contains(outages_fail ? "persisted outages" : "persisted identities") &&
                 Catch::Contains("disk I/O error"));
  CHECK(fleet.DirStatus().ok());  // the directory itself was listed
}

TEST_CASE("a NotReady cluster that fails for another reason says so in the log: once a reason and not at "
          "every probe",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_interval_ms = 3'600'000;  // probed here only
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  prober.slow_clock = &clock;
  testing::LogCapture capture;
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->health.state == HealthState::kReady);
  prober.slow["c1"] = true;  // no answer: NotReady at once
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->health.state == HealthState::kNotReady);
  fleet.ProbeAllNow();  // the same failure again
  prober.slow["c1"] = false;
  prober.up["c1"] = false;  // now refused at once
  fleet.ProbeAllNow();
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->health.state == HealthState::kNotReady);
  fleet.Stop();
  const std::string log = capture.Text();
  CHECK(testing::Occurrences(log, "cluster c1 is NotReady: GET /readyz: no answer within 5000 ms") == 1);
  CHECK(testing::Occurrences(log, "cluster c1 is still NotReady") == 1);
  CHECK(testing::Occurrences(log, "for another reason now: connect: connection refused") == 1);
}

TEST_CASE("a silent cluster's probe shows the outage to the end of its wait, and the one that finds it lost goes "
          "so that it ends at the lost timeout, not a deadline past it",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.lost_timeout_ms = 10'000;
  options.backoff = {3'000, 60'000, Jitter::kNone};
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}};
  prober.slow["c1"] = true;  // each probe waits out 5 s, then fails
  prober.slow_clock = &clock;
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  // Sent at +0, given up at +5 s: no answer since it went out.
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'005'000; }));
  CHECK(fleet.Cluster("c1")->health.first_lost_ms == 1'000'000);
  CHECK(fleet.Cluster("c1")->health.ShownLostForMs() == 5'000);
  // The next goes at +5.1 s, not after the 3 s backoff (sent at +8 s, it
  // would end at +13 s): it ends at +10.1 s, and shows the cluster lost.
  clock.Advance(100);
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'010'100; }));
  CHECK(fleet.Cluster("c1")->health.ShownLostForMs() == 10'100);
  CHECK(prober.Probes("c1") == 2);
  fleet.Stop();
}

TEST_CASE("a silent probe shows at most one probe deadline of silence: a pause of the daemon's host while it "
          "waited is not the cluster's",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.lost_timeout_ms = 15'000;
  options.probe_interval_ms = 3'600'000;  // probed here only
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  prober.slow_clock = &clock;
  prober.slow_ms = 20'000;  // the probe's 5 s, and the host stopped for 15 s meanwhile
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->health.state == HealthState::kReady);
  prober.slow["c1"] = true;
  fleet.ProbeAllNow();
  const ClusterHealth h = fleet.Cluster("c1")->health;
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.ShownLostForMs() == options.probe_deadline_ms);  // not 20 s, past the lost timeout
  CHECK(h.first_lost_ms == 1'015'000);  // its last deadline: the 5 s before it gave up
  fleet.Stop();
}

TEST_CASE("a cluster that refuses gantry after a silent probe is not probed over and over near clusterLostTimeout",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.lost_timeout_ms = 10'000;
  options.backoff = {3'000, 60'000, Jitter::kNone};
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  prober.refuses = {{"c1", true}};
  prober.slow["c1"] = true;  // the first probe waits out 5 s; the others are refused at once
  prober.slow_clock = &clock;
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'005'000; }));
  prober.slow["c1"] = false;
  clock.Advance(3'000);
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.credentials_refused; }));
  const int probes = prober.Probes("c1");
  // Refusing, it is lost only after credentialsRefusedTimeout: nothing is
  // due before the backoff's 3 s (a stale wait of the silent probe sent one
  // probe after another until clusterLostTimeout, the fake clock standing
  // still short of it).
  CHECK_FALSE(testing::WaitFor([&] { return prober.Probes("c1") > probes + 3; }, std::chrono::milliseconds(500)));
  fleet.Stop();
}

TEST_CASE("a cluster out of reach is probed at once when asked (ProbeSoon), not at its backed-off probe",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.backoff = {30'000, 60'000, Jitter::kNone};
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}};
  Fleet fleet(prober, *store, clock, options);
  CHECK(fleet.Start().empty());
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.last_failure_ms == 1'000'000; }));
  prober.up["c1"] = true;
  clock.Advance(1'000);  // its next probe is 29 s away
  CHECK(testing::WaitFor([&] { return fleet.ProbeSoon("c1"); }));  // (once the first probe's worker let go)
  REQUIRE(testing::WaitFor([&] { return fleet.Cluster("c1")->health.state == HealthState::kReady; }));
  CHECK(fleet.Cluster("c1")->health.since_ms == 1'001'000);
  CHECK_FALSE(fleet.ProbeSoon("c1"));  // Ready: nothing to bring forward
  CHECK_FALSE(fleet.ProbeSoon("c9"));  // not in the inventory
  fleet.Stop();
}

TEST_CASE("clusters whose probes wait out their deadline take all probe workers but one: the Ready ones are "
          "still probed",
          "[inventory][fleet]") {
  // A zone's clusters cut off at once: each probe waits for its connect's
  // deadline. The Ready clusters' readings must not go stale meanwhile.
  FleetDir fleet_dir({"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_workers = 4;
  options.backoff = {1'000, 1'000, Jitter::kNone};
  FakeClock clock(1'000'000);
  FakeProber prober;
  for (const char* c : {"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08"}) prober.up[c] = false;
  prober.up["c09"] = true;
  prober.up["c10"] = true;
  Fleet fleet(prober, *store, clock, options);
  CHECK(fleet.Start().empty());
  // Every first verdict in before the probes block: a first probe still
  // under way (the cluster neither Ready nor NotReady) would block as one
  // of the Ready ones' probes, in the worker kept for them.
  REQUIRE(testing::WaitFor([&] {
    for (const char* c : {"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08"}) {
      if (fleet.Cluster(c)->health.state != HealthState::kNotReady) return false;
    }
    return fleet.Cluster("c09")->health.state == HealthState::kReady &&
           fleet.Cluster("c10")->health.state == HealthState::kReady;
  }));
  for (const char* c : {"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08"}) prober.blocks[c] = true;
  const int c09 = prober.Probes("c09"), c10 = prober.Probes("c10");
  clock.Advance(10'000);  // every cluster due
  CHECK(testing::WaitFor([&] { return prober.Probes("c09") > c09 && prober.Probes("c10") > c10; }));
  CHECK(prober.Blocked() <= 3);
  prober.Release();
  fleet.Stop();
}

TEST_CASE("a cluster whose ClusterQueues may not be listed stays Ready, its last reading going stale",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_interval_ms = 3'600'000;  // probed here only: each probe's verdict counts
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->capacity);

  clock.Advance(10'000);
  prober.forbids_queues["c1"] = true;
  fleet.ProbeAllNow();
  // One reading worse than the last: taken only if the next says the same.
  CHECK(fleet.Cluster("c1")->capacity_error.empty());
  CHECK(fleet.Snapshot(clock.NowMillis())[0].capacity.stale == false);
  fleet.ProbeAllNow();
  auto c1 = fleet.Cluster("c1");
  CHECK(c1->health.state == HealthState::kReady);  // its jobs are followed as usual
  CHECK_FALSE(c1->health.credentials_refused);
  CHECK(c1->capacity_error.find("403") != std::string::npos);
  REQUIRE(c1->capacity);  // the last reading is kept, from its time
  CHECK(c1->capacity->quota.at("nvidia.com/gpu").nominal_milli == 32'000);
  CHECK(c1->capacity_at_ms == 1'000'000);
  auto snap = fleet.Snapshot(clock.NowMillis());  // 10 s old, yet stale: unreadable now
  CHECK(snap[0].health == placement::ClusterHealth::kReady);
  CHECK(snap[0].capacity.stale);
  CHECK(snap[0].capacity.age_ms < options.stale_after_ms);

  // Gone out of reach: the outage is the story, not the permission.
  prober.up["c1"] = false;
  fleet.ProbeAllNow();
  CHECK_FALSE(fleet.Cluster("c1")->capacity_error.empty());  // one failed probe: what it read stands
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->health.state == HealthState::kNotReady);
  CHECK(fleet.Cluster("c1")->capacity_error.empty());
  prober.up["c1"] = true;
  fleet.ProbeAllNow();  // back: its first reading is taken as it is
  CHECK_FALSE(fleet.Cluster("c1")->capacity_error.empty());

  prober.forbids_queues["c1"] = false;
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c1")->capacity_error.empty());
  CHECK(fleet.Cluster("c1")->capacity_at_ms == clock.NowMillis());
  fleet.Stop();
}

TEST_CASE("a cluster that refuses the credentials is lost only after refused_timeout_ms", "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  options.lost_timeout_ms = 60'000;
  options.refused_timeout_ms = 3'600'000;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  prober.refuses = {{"c1", true}};
  {
    Fleet fleet(prober, *store, clock, options);
    fleet.Start();
    fleet.ProbeAllNow();
    auto c1 = fleet.Cluster("c1");
    CHECK(c1->health.state == HealthState::kNotReady);
    CHECK(c1->health.credentials_refused);
    CHECK(c1->health.first_lost_ms == 1'000'000);
    CHECK(c1->health.last_error == "/readyz answered 401");
    // Past clusterLostTimeout: not lost; past the refused timeout: lost.
    CHECK(fleet.Snapshot(1'000'000 + 10 * 60'000)[0].health == placement::ClusterHealth::kNotReady);
    CHECK(fleet.Snapshot(1'000'000 + 3'600'000)[0].health == placement::ClusterHealth::kLost);
    fleet.Stop();
  }
  // The outage start is kept across a restart, as for any outage.
  REQUIRE(testing::WaitFor([&] { return store->LoadOutages()->count("c1") == 1; }));
  options.refused_timeout_ms = 0;  // never lost while it refuses
  {
    Fleet fleet(prober, *store, clock, options);
    fleet.Start();
    fleet.ProbeAllNow();
    CHECK(fleet.Cluster("c1")->health.first_lost_ms == 1'000'000);
    CHECK(fleet.Snapshot(1'000'000 + 100 * 3'600'000LL)[0].health == placement::ClusterHealth::kNotReady);
    prober.refuses["c1"] = false;
    fleet.ProbeAllNow();
    CHECK(fleet.Cluster("c1")->health.state == HealthState::kReady);
    fleet.Stop();
  }
  CHECK(testing::WaitFor([&] { return store->LoadOutages()->empty(); }));
}

TEST_CASE("an outage's kind survives a restart: after refusals, a timeout starts the clock afresh",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  options.lost_timeout_ms = 60'000;
  options.refused_timeout_ms = 0;  // never lost while it refuses
  constexpr int64_t kT0 = 1'000'000, kHours2 = 2 * 3'600'000;
  FakeClock clock(kT0);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  prober.refuses = {{"c1", true}, {"c2", true}};
  {
    Fleet fleet(prober, *store, clock, options);
    fleet.Start();
    fleet.ProbeAllNow();  // both refuse from kT0
    clock.Advance(kHours2);
    prober.up["c1"] = false;  // c1 stops answering before the restart
    fleet.ProbeAllNow();
    CHECK(fleet.Cluster("c1")->health.first_lost_ms == kT0 + kHours2);
    fleet.Stop();
  }
  REQUIRE(testing::WaitFor([&] {
    auto outages = store->LoadOutages();
    return outages->count("c1") && outages->at("c1") == ClusterOutage{kT0 + kHours2, false};
  }));
  prober.up["c2"] = false;  // c2 stops answering during the restart
  clock.Advance(30'000);
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  fleet.ProbeAllNow();
  // Both have been out of reach for at most 30 s: neither is lost, though
  // their outages began two hours ago with refusals.
  CHECK(fleet.Cluster("c1")->health.first_lost_ms == kT0 + kHours2);
  CHECK(fleet.Cluster("c2")->health.first_lost_ms == clock.NowMillis());
  for (const auto& c : fleet.Snapshot(clock.NowMillis())) {
    INFO(c.name);
    CHECK(c.health == placement::ClusterHealth::kNotReady);
  }
  fleet.Stop();
}

TEST_CASE("a reload says which clusters it added and removed, and a removed one whose API server an added one "
          "names",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  InventoryChange none;
  fleet.Reload(&none);
  CHECK(none.empty());
  CHECK(none.Describe().empty());
  // c1's entry renamed c1b: the same kubeconfig, so the same API server.
  WriteCluster(dir.path(), "c1b", ServerOf("c1"));
  std::filesystem::remove(dir.File("clusters.d/c1.yaml"));
  InventoryChange renamed;
  fleet.Reload(&renamed);
  CHECK(renamed.added == std::vector<std::string>{"c1b"});
  CHECK(renamed.removed == std::vector<std::string>{"c1"});
  REQUIRE(renamed.same_server.size() == 1);
  CHECK(renamed.same_server[0] == std::make_pair(std::string("c1"), std::string("c1b")));
  const std::string said = renamed.Describe();
  CHECK_THAT(said, Catch::StartsWith("added c1b; removed c1 (the jobs each owned are treated as lost"));
  CHECK_THAT(said, Catch::Contains("c1b names the API server c1 named"));
  fleet.Stop();
}

TEST_CASE("two entries that reach one API server: the one that reached it before keeps it, the other is held and "
          "the load says why",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  auto held = [&](const std::string& name) {
    auto view = fleet.Cluster(name);
    REQUIRE(view);
    return view->config_error;
  };
  SECTION("an entry added with another's API server (an entry copied under a new name) is held") {
    WriteCluster(dir.path(), "c1b", ServerOf("c1"));
    auto errors = fleet.Reload();
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0].status.message(),
               Catch::Contains("c1b.yaml: its kubeconfig reaches the API server " + ServerOf("c1") +
                               ", as that of cluster c1 does"));
    CHECK_THAT(errors[0].status.message(), Catch::Contains("held and c1 kept"));
    CHECK_THAT(held("c1b"), Catch::Contains("as that of cluster c1 does"));
    CHECK(held("c1").empty());
    CHECK(held("c2").empty());
    CHECK_FALSE(fleet.Credentials("c1b"));  // not probed, not watched
    CHECK(fleet.Credentials("c1"));
    SECTION("given its own server, it loads, and the reload says so") {
      WriteCluster(dir.path(), "c1b");
      InventoryChange change;
      CHECK(fleet.Reload(&change).empty());
      CHECK(change.Describe() == "changed c1b (no longer held: its file loads)");
      CHECK(held("c1b").empty());
      CHECK(fleet.Credentials("c1b"));
    }
  }
  SECTION("an entry whose kubeconfig is replaced by another's (one port spelt out, a host in capitals) is held") {
    const std::string c1 = ServerOf("c1");
    const std::string upper = "https://LOCALHOST" + c1.substr(std::string("https://127.0.0.1").size());
    WriteCluster(dir.path(), "c1", upper);
    WriteCluster(dir.path(), "c2", "https://localhost" + c1.substr(std::string("https://127.0.0.1").size()) + "/");
    REQUIRE(fleet.Reload().size() == 2);  // neither reached localhost before: both held
    CHECK_FALSE(held("c1").empty());
    CHECK_FALSE(held("c2").empty());
    WriteCluster(dir.path(), "c1");
    WriteCluster(dir.path(), "c2");
    CHECK(fleet.Reload().empty());
    CHECK(held("c1").empty());
    CHECK(held("c2").empty());
  }
  SECTION("at a start with two entries for one server, both are held") {
    fleet.Stop();
    WriteCluster(dir.path(), "c2", ServerOf("c1"));
    Fleet again(prober, *store, clock, options);
    CHECK(again.Start().size() == 2);
    CHECK_FALSE(again.Cluster("c1")->config_error.empty());
    CHECK_FALSE(again.Cluster("c2")->config_error.empty());
    again.Stop();
  }
  fleet.Stop();
}

TEST_CASE("a cluster that leaves the inventory leaves its outage behind", "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}, {"c2", false}};
  {
    Fleet fleet(prober, *store, clock, options);
    fleet.Start();
    fleet.ProbeAllNow();
    std::filesystem::remove(dir.File("clusters.d/c1.yaml"));
    fleet.Reload();  // c1 removed: its row goes
    REQUIRE(testing::WaitFor([&] { return store->LoadOutages()->count("c1") == 0; }));
    fleet.Stop();
  }
  REQUIRE(testing::WaitFor([&] { return store->LoadOutages()->count("c2") == 1; }));
  std::filesystem::remove(dir.File("clusters.d/c2.yaml"));
  clock.Advance(3'600'000);
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();  // without c2: its outage is over for gantry
  REQUIRE(testing::WaitFor([&] { return store->LoadOutages()->empty(); }));
  // Both added back an hour later, still down: fresh outages, not lost at once.
  WriteCluster(dir.path(), "c1");
  WriteCluster(dir.path(), "c2");
  fleet.Reload();
  fleet.ProbeAllNow();
  for (const char* name : {"c1", "c2"}) {
    INFO(name);
    CHECK(fleet.Cluster(name)->health.first_lost_ms == clock.NowMillis());
  }
  fleet.Stop();
}

TEST_CASE("a kubeconfig broken at a reload keeps the last good credentials, and one broken from the start is no outage",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  std::ofstream(dir.File("c2.kubeconfig")) << "apiVersion: v1\nkind: Config\nclusters: [\n";  // broken at start
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c1")->health.state == HealthState::kReady);
  // c2: nothing to probe with, but nothing known of it either: no outage,
  // no clusterLostTimeout running for the jobs it may own.
  auto c2 = fleet.Cluster("c2");
  CHECK_FALSE(c2->credentials_error.empty());
  CHECK(c2->health.state == HealthState::kUnknown);
  CHECK_FALSE(c2->health.first_lost_ms.has_value());

  // An operator's typo in c1's kubeconfig, and a reload.
  std::ofstream(dir.File("c1.kubeconfig")) << "apiVersion: v1\nkind: Config\nusers: {{\n";
  fleet.Reload();
  clock.Advance(60'000);
  fleet.ProbeAllNow();
  auto c1 = fleet.Cluster("c1");
  CHECK(fleet.Credentials("c1").has_value());
  CHECK(c1->credentials_error.empty());
  CHECK_FALSE(c1->credentials_warning.empty());
  CHECK(c1->health.state == HealthState::kReady);
  CHECK_FALSE(c1->health.first_lost_ms.has_value());
  // Fixed: the warning goes.
  WriteCluster(dir.path(), "c1");
  fleet.Reload();
  CHECK(fleet.Cluster("c1")->credentials_warning.empty());
  fleet.Stop();
}

TEST_CASE("a token file rotated to what is no token is a credentials warning of its cluster until it holds one",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  std::ofstream(dir.File("c1.token")) << "token-one\n";
  std::ofstream(dir.File("c1.kubeconfig")) << R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: ")" << ServerOf("c1") << R"("}}]
users: [{name: u, user: {tokenFile: c1.token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)";
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}};
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  auto token = [&] { return fleet.Credentials("c1")->token_source->Token(); };
  REQUIRE(*token() == "token-one");
  CHECK(fleet.Cluster("c1")->credentials_warning.empty());
  {
    std::ofstream(dir.File("c1.token")) << "token-two\nImpersonate-User: admin\n";
  }
  std::filesystem::last_write_time(dir.File("c1.token"),
                                   std::filesystem::last_write_time(dir.File("c1.token")) + std::chrono::seconds(5));
  CHECK(*token() == "token-one");  // the token read before
  CHECK_THAT(fleet.Cluster("c1")->credentials_warning, Catch::Contains("c1.token") &&
                                                           Catch::Contains("the token read before is sent"));
  CHECK(fleet.Clusters()[0].credentials_warning == fleet.Cluster("c1")->credentials_warning);
  {
    std::ofstream(dir.File("c1.token")) << "token-three\n";
  }
  std::filesystem::last_write_time(dir.File("c1.token"),
                                   std::filesystem::last_write_time(dir.File("c1.token")) + std::chrono::seconds(10));
  CHECK(*token() == "token-three");
  CHECK(fleet.Cluster("c1")->credentials_warning.empty());
  fleet.Stop();
}

TEST_CASE("a kubeconfig that loads again starts its cluster's outage clock afresh: nothing was seen meanwhile",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}, {"c2", true}};  // c1 never answers in this test
  RunBefore(fleet_dir, prober, clock, "c1");

  // Restarted an hour later with c1's kubeconfig broken: its outage is
  // restored, but no probe runs, so no clusterLostTimeout does either.
  const std::string good = testing::ReadFile(dir.File("c1.kubeconfig"));
  std::ofstream(dir.File("c1.kubeconfig")) << "apiVersion: v1\nkind: Config\nclusters: [\n";
  clock.Advance(3'600'000);
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  fleet.ProbeAllNow();
  REQUIRE_FALSE(fleet.Cluster("c1")->Usable());
  CHECK(fleet.Cluster("c1")->health.first_lost_ms == 1'000'000);

  // Mended: the first failed probe starts the clock now. From 1'000'000,
  // the jobs c1 owns would be lost at once, however long it ran meanwhile.
  clock.Advance(60'000);
  testing::WriteFile(dir.File("c1.kubeconfig"), good);
  CHECK(fleet.Reload().empty());
  REQUIRE(fleet.Cluster("c1")->Usable());
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c1")->health.first_lost_ms == clock.NowMillis());
  CHECK(testing::WaitFor([&] {
    auto outages = store->LoadOutages();
    return outages.ok() && outages->count("c1") == 1 && outages->at("c1").first_lost_ms == clock.NowMillis();
  }));
  fleet.Stop();
}

// A prober whose first probe of "slow" reads its answer, then waits until
// the test opens the gate: the background probe still in flight when the
// cluster comes back.
class GatedProber final : public ClusterProber {
 public:
  std::atomic<bool> up{false};
  std::atomic<int> started{0};
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  Result<CapacityReading> Probe(const ClusterConfig&, const ClusterCredentials&) override {
    bool answer = up.load();
    if (started.fetch_add(1) == 0) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return open; });
    }
    if (!answer) return Status::Unavailable("connect: connection refused");
    return CapacityReading{};
  }
  void Open() {
    {
      std::lock_guard lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};

TEST_CASE("a probe on demand is not overwritten by an older probe still in flight", "[inventory][fleet]") {
  FleetDir fleet_dir({"slow"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  GatedProber prober;
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  // The background probe has read "down" and is held.
  REQUIRE(testing::WaitFor([&] { return prober.started.load() == 1; }));
  prober.up = true;
  std::thread on_demand([&] { fleet.ProbeAllNow(); });
  prober.Open();
  on_demand.join();
  // The on-demand probe ran after the stale one, so its answer stands.
  CHECK(prober.started.load() == 2);
  CHECK(fleet.Cluster("slow")->health.state == HealthState::kReady);
  fleet.Stop();
}

TEST_CASE("the fleet's generation changes with a cluster's health, whether its quota can be read, and a reload, "
          "not with every probe",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  fleet.ProbeAllNow();  // Ready, both (the workers' first probes may have been first)
  const uint64_t ready = fleet.Generation();
  fleet.ProbeAllNow();  // nothing changed
  CHECK(fleet.Generation() == ready);
  prober.up["c2"] = false;
  fleet.ProbeAllNow();
  // One failed probe of a Ready cluster is short of failure_threshold (2):
  // nothing placement reads changed.
  REQUIRE(fleet.Cluster("c2")->health.state == HealthState::kReady);
  CHECK(fleet.Generation() == ready);
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c2")->health.state == HealthState::kNotReady);
  const uint64_t c2_down = fleet.Generation();
  CHECK(c2_down != ready);
  prober.up["c2"] = true;
  fleet.ProbeAllNow();
  CHECK(fleet.Generation() != c2_down);
  // Ready all along, its quota unreadable, then readable again: placement
  // reads a cluster whose quota is unreadable as stale, so both count.
  const uint64_t c2_up = fleet.Generation();
  prober.forbids_queues["c2"] = true;
  fleet.ProbeAllNow();
  CHECK(fleet.Generation() == c2_up);  // one reading worse than the last: not taken yet
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c2")->health.state == HealthState::kReady);
  const uint64_t unreadable = fleet.Generation();
  CHECK(unreadable != c2_up);
  fleet.ProbeAllNow();
  CHECK(fleet.Generation() == unreadable);
  prober.forbids_queues["c2"] = false;
  fleet.ProbeAllNow();
  CHECK(fleet.Generation() != unreadable);
  const uint64_t before_reload = fleet.Generation();
  fleet.Reload();
  CHECK(fleet.Generation() != before_reload);
  fleet.Stop();
}

TEST_CASE("fleet reload adds, keeps and removes clusters", "[inventory][fleet]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock;
  FakeProber prober;
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  CHECK(fleet.Clusters().size() == 1);
  WriteCluster(dir.path(), "c2");
  testing::WriteFile(dir.File("clusters.d/c1.yaml"), "name: c1\nkubeconfig: ../c1.kubeconfig\nregion: [broken\n");
  auto errors = fleet.Reload();
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].kept_last_good);
  auto clusters = fleet.Clusters();
  REQUIRE(clusters.size() == 2);
  CHECK(clusters[0].config.region == "eu-central-1");  // c1's last good entry
  // What the operator must fix is shown with the entry in use (gantry
  // clusters: ConfigStale), not only logged.
  CHECK_THAT(clusters[0].config_warning, Catch::Contains("c1.yaml"));
  CHECK(clusters[1].config_warning.empty());
  fleet.Reload();  // still broken: still told
  CHECK_FALSE(fleet.Cluster("c1")->config_warning.empty());
  WriteCluster(dir.path(), "c1");
  fleet.Reload();  // fixed: the warning goes
  CHECK(fleet.Cluster("c1")->config_warning.empty());
  std::filesystem::remove(dir.File("clusters.d/c1.yaml"));
  fleet.Reload();
  CHECK(fleet.Clusters().size() == 1);
  CHECK(fleet.Clusters()[0].config.name == "c2");
}

TEST_CASE("a reload keeps a cluster's token source while its token stays the same", "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock;
  FakeProber prober;
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  auto source = [&](const char* name) {
    auto creds = fleet.Credentials(name);
    REQUIRE(creds);
    REQUIRE(creds->token_source);
    return creds->token_source;
  };
  auto c1 = source("c1"), c2 = source("c2");
  std::string kubeconfig = testing::ReadFile(dir.File("c2.kubeconfig"));
  kubeconfig.replace(kubeconfig.find("not-a-real-token-123"), 20, "not-a-real-token-456");
  testing::WriteFile(dir.File("c2.kubeconfig"), kubeconfig);
  REQUIRE(fleet.Reload().empty());
  CHECK(source("c1") == c1);  // the same source, and whatever it holds
  auto c2_after = source("c2");
  CHECK(c2_after != c2);
  CHECK(c2_after->Token().value() == "not-a-real-token-456");
}

}  // namespace gantry::inventory

namespace gantry::inventory {

TEST_CASE("a stalled cluster does not hold up the probes of the others", "[inventory][fleet]") {
  class StallingProber final : public ClusterProber {
   public:
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    Result<CapacityReading> Probe(const ClusterConfig& config, const ClusterCredentials&) override {
      if (config.name == "c1") {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return release; });
      }
      return CapacityReading{};
    }
  } prober;
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  SystemClock clock;
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  CHECK(testing::WaitFor([&] { return fleet.Cluster("c2")->health.state == HealthState::kReady; }));
  CHECK(fleet.Cluster("c1")->health.state == HealthState::kUnknown);  // still in its probe
  {
    std::lock_guard lock(prober.mu);
    prober.release = true;
  }
  prober.cv.notify_all();
  CHECK(testing::WaitFor([&] { return fleet.Cluster("c1")->health.state == HealthState::kReady; }));
  fleet.Stop();
}

// Reloading the inventory used to release every claim, so a probe in
// flight and a new one ran on one cluster at once, over one shared client
// (the daemon crashed, or read garbage and marked the cluster NotReady).
TEST_CASE("a reload during a probe waits for it, then probes the cluster again at once", "[inventory][fleet]") {
  class GateProber final : public ClusterProber {
   public:
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    std::map<std::string, int> probes;  // started, by cluster
    int in_c1 = 0, max_in_c1 = 0;
    Result<CapacityReading> Probe(const ClusterConfig& config, const ClusterCredentials&) override {
      std::unique_lock lock(mu);
      ++probes[config.name];
      if (config.name == "c1") {
        max_in_c1 = std::max(max_in_c1, ++in_c1);
        cv.wait(lock, [&] { return open; });
        --in_c1;
      }
      cv.notify_all();
      return CapacityReading{};
    }
    int Started(const std::string& name) {
      std::lock_guard lock(mu);
      return probes[name];
    }
  } prober;
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_interval_ms = 3'600'000;  // nothing comes due by itself during the test
  SystemClock clock;
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  REQUIRE(testing::WaitFor([&] { return prober.Started("c1") == 1 && prober.Started("c2") == 1; }));
  // c1's first probe hangs. Two reloads make both clusters due at once; a
  // worker scans c1 before c2, so once c2 has been probed again, any worker
  // that would take c1 a second time has had its turn.
  REQUIRE(fleet.Reload().empty());
  REQUIRE(fleet.Reload().empty());
  REQUIRE(testing::WaitFor([&] { return prober.Started("c2") >= 2; }));
  CHECK(prober.Started("c1") == 1);
  {
    std::lock_guard lock(prober.mu);
    prober.open = true;
  }
  prober.cv.notify_all();
  // Released: c1 is probed again at once, not an hour later.
  CHECK(testing::WaitFor([&] { return prober.Started("c1") == 2; }));
  fleet.Stop();
  CHECK(prober.max_in_c1 == 1);
}

TEST_CASE("an entry whose probe reads the identity of a cluster another entry reaches is held, until a reload "
          "finds it alone",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2", "c3"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}, {"c3", true}};
  // c2 spells c1's API server another way (its own URL here): the cluster
  // says which it is.
  prober.SetClusterId("c1", "kube-system-uid-a");
  prober.SetClusterId("c2", "kube-system-uid-a");
  prober.SetClusterId("c3", "kube-system-uid-b");
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.ProbeAllNow();
  // The first to read it keeps it (the probes run at once at the start).
  const bool c1_kept = fleet.Cluster("c1")->Usable();
  const std::string kept = c1_kept ? "c1" : "c2";
  const std::string held = c1_kept ? "c2" : "c1";
  INFO("kept " << kept);
  auto k = fleet.Cluster(kept);
  auto h = fleet.Cluster(held);
  CHECK(k->health.state == HealthState::kReady);
  CHECK(k->cluster_id == "kube-system-uid-a");
  CHECK(fleet.Cluster("c3")->health.state == HealthState::kReady);
  CHECK_FALSE(h->Usable());
  CHECK(h->health.state == HealthState::kUnknown);  // never Ready: nothing went through it
  CHECK_THAT(h->config_error, Catch::Contains(held + ".yaml: it reaches the cluster that cluster " + kept +
                                              " reaches (its kube-system Namespace has uid kube-system-uid-a there "
                                              "too)"));
  CHECK_THAT(h->config_error, Catch::Contains("this one is held and " + kept + " kept"));
  // The placement view has it not Ready.
  for (const auto& snap : fleet.Snapshot(clock.NowMillis())) {
    if (snap.name == held) CHECK(snap.health != placement::ClusterHealth::kReady);
  }
  // Held: not probed any more (its probe would read the same, at a cost to
  // the cluster), until a reload; found again then: the same one, as the
  // one kept keeps the identity it read.
  const int probes = prober.Probes(held);
  fleet.ProbeAllNow();
  CHECK(prober.Probes(held) == probes);
  CHECK_FALSE(fleet.Cluster(held)->Usable());
  REQUIRE(fleet.Reload().empty());
  fleet.ProbeAllNow();
  CHECK_FALSE(fleet.Cluster(held)->Usable());
  CHECK(fleet.Cluster(kept)->health.state == HealthState::kReady);
  // Alone once the other entry is gone.
  std::filesystem::remove(dir.File("clusters.d/" + kept + ".yaml"));
  REQUIRE(fleet.Reload().empty());
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster(held)->Usable());
  CHECK(fleet.Cluster(held)->health.state == HealthState::kReady);
  CHECK(fleet.Cluster(held)->cluster_id == "kube-system-uid-a");
  fleet.Stop();
}

TEST_CASE("a probe begun before a reload that points the entry at another API server is not taken for the entry: "
          "it starts Unknown, and its own probe reads who it is",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  prober.SetClusterId("c1", "uid-a");
  prober.SetClusterId("c2", "uid-b");
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c2")->health.state == HealthState::kReady);
  // c2's probe hangs; meanwhile its file points it at another server, and
  // the probe (of the old connection) then answers as c1's cluster would.
  prober.blocks["c2"] = true;
  prober.answers_after_block["c2"] = true;
  prober.SetClusterId("c2", "uid-a");
  std::thread probing([&] { fleet.ProbeAllNow(); });
  REQUIRE(testing::WaitFor([&] { return prober.Blocked() == 1; }, std::chrono::seconds(10)));
  WriteCluster(dir.path(), "c2", "https://127.0.0.1:39999");
  REQUIRE(fleet.Reload().empty());
  CHECK(fleet.Cluster("c2")->health.state == HealthState::kUnknown);  // another server: nothing known of it
  // The new server is another address of c2's own cluster, for the probes
  // that begin from now.
  prober.SetClusterId("c2", "uid-b");
  prober.blocks["c2"] = false;
  prober.Release();
  probing.join();
  // What the old connection read (c1's cluster) is dropped: not held for
  // it; its own probe, due at once, reads who it is.
  CHECK(fleet.Cluster("c2")->Usable());
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->Usable());
  CHECK(fleet.Cluster("c2")->health.state == HealthState::kReady);
  CHECK(fleet.Cluster("c2")->cluster_id == "uid-b");
  fleet.Stop();
}

// Two clusters, c1 (identity uid-a) and c2 (uid-b), probed an hour apart
// unless a test probes them.
struct IdentifiedPair {
  FleetDir fleet_dir{"c1", "c2"};
  FakeClock clock{1'000'000};
  FakeProber prober;
  IdentifiedPair() {
    fleet_dir.options.probe_interval_ms = 3'600'000;
    prober.up = {{"c1", true}, {"c2", true}};
    prober.SetClusterId("c1", "uid-a");
    prober.SetClusterId("c2", "uid-b");
  }
  // Started, both probed once: c2 Ready.
  void StartReady(Fleet& fleet) {
    REQUIRE(fleet.Start().empty());
    fleet.ProbeAllNow();
    REQUIRE(fleet.Cluster("c2")->health.state == HealthState::kReady);
  }
  // The daemon's run before the test's: both probed once, and their
  // identities in the store.
  void RunBefore() {
    {
      Fleet fleet(prober, *fleet_dir.store, clock, fleet_dir.options);
      REQUIRE(fleet.Start().empty());
      fleet.ProbeAllNow();
      fleet.Stop();
    }
    REQUIRE(testing::WaitFor([&] { return fleet_dir.store->LoadClusterIds()->size() == 2; }));
  }
  // c2's file points it at another API server, whose probes read identity
  // id ("" = none), and fleet reloads it.
  void PointC2Elsewhere(Fleet& fleet, const std::string& id) {
    WriteCluster(fleet_dir.dir.path(), "c2", "https://127.0.0.1:39999");
    prober.SetClusterId("c2", id);
    REQUIRE(fleet.Reload().empty());
  }
};

TEST_CASE("an entry pointed at another cluster while the daemon was stopped is held at its first probe, and a "
          "removed entry's identity is forgotten",
          "[inventory][fleet]") {
  IdentifiedPair pair;
  auto& [dir, store, options] = pair.fleet_dir;
  auto& clock = pair.clock;
  auto& prober = pair.prober;
  pair.RunBefore();
  CHECK(store->LoadClusterIds()->at("c2") == "uid-b");
  // Stopped, c2's kubeconfig is pointed at a third cluster.
  prober.SetClusterId("c2", "uid-z");
  {
    Fleet fleet(prober, *store, clock, options);
    REQUIRE(fleet.Start().empty());
    CHECK(fleet.Cluster("c2")->cluster_id == "uid-b");  // before any probe
    fleet.ProbeAllNow();
    CHECK_FALSE(fleet.Cluster("c2")->Usable());
    CHECK_THAT(fleet.Cluster("c2")->config_error, Catch::Contains("uid uid-z, not uid-b"));
    CHECK(fleet.Cluster("c1")->health.state == HealthState::kReady);
    // Removed: its identity goes with it; added back, it takes the one its
    // probe reads.
    std::filesystem::remove(dir.File("clusters.d/c2.yaml"));
    REQUIRE(fleet.Reload().empty());
    REQUIRE(testing::WaitFor([&] { return store->LoadClusterIds()->count("c2") == 0; }));
    WriteCluster(dir.path(), "c2");
    REQUIRE(fleet.Reload().empty());
    fleet.ProbeAllNow();
    CHECK(fleet.Cluster("c2")->Usable());
    CHECK(fleet.Cluster("c2")->cluster_id == "uid-z");
    fleet.Stop();
  }
  CHECK(testing::WaitFor([&] { return store->LoadClusterIds()->count("c2") == 1; }));
  CHECK(store->LoadClusterIds()->at("c2") == "uid-z");
}

TEST_CASE("the identity of an entry whose file is missing at a start is kept until a reload confirms it gone",
          "[inventory][fleet]") {
  IdentifiedPair pair;
  auto& [dir, store, options] = pair.fleet_dir;
  auto& clock = pair.clock;
  auto& prober = pair.prober;
  pair.RunBefore();
  // c2's file is missing at the start (a mount not ready), and comes back
  // at a reload pointing at another cluster.
  const std::string c2_file = testing::ReadFile(dir.File("clusters.d/c2.yaml"));
  std::filesystem::remove(dir.File("clusters.d/c2.yaml"));
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.ProbeAllNow();
  CHECK(store->LoadClusterIds()->count("c2") == 1);
  testing::WriteFile(dir.File("clusters.d/c2.yaml"), c2_file);
  prober.SetClusterId("c2", "uid-z");
  REQUIRE(fleet.Reload().empty());
  fleet.ProbeAllNow();
  CHECK_FALSE(fleet.Cluster("c2")->Usable());
  CHECK_THAT(fleet.Cluster("c2")->config_error, Catch::Contains("uid uid-z, not uid-b"));
  // Removed at a reload: forgotten.
  std::filesystem::remove(dir.File("clusters.d/c2.yaml"));
  REQUIRE(fleet.Reload().empty());
  CHECK(testing::WaitFor([&] { return store->LoadClusterIds()->count("c2") == 0; }));
  fleet.Stop();
}

TEST_CASE("an entry moved to another API server whose probe cannot read its identity there is not Ready",
          "[inventory][fleet]") {
  IdentifiedPair pair;
  auto& [dir, store, options] = pair.fleet_dir;
  auto& clock = pair.clock;
  auto& prober = pair.prober;
  Fleet fleet(prober, *store, clock, options);
  pair.StartReady(fleet);
  // Pointed at a server that does not let gantry read kube-system.
  pair.PointC2Elsewhere(fleet, "");
  for (int i = 0; i < 3; ++i) fleet.ProbeAllNow();
  auto c2 = fleet.Cluster("c2");
  CHECK(c2->health.state != HealthState::kReady);
  CHECK_THAT(c2->health.last_error,
             Catch::Contains("its kube-system Namespace could not be read (no answer), to confirm"));
  // It can read it again, and it is the same cluster: Ready.
  prober.SetClusterId("c2", "uid-b");
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->health.state == HealthState::kReady);
  // Confirmed once, a later probe that cannot read it is answered as before.
  prober.SetClusterId("c2", "");
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->health.state == HealthState::kReady);
  fleet.Stop();
}

TEST_CASE("an entry held for another entry's server whose file then points elsewhere is Ready only once its "
          "identity is read there",
          "[inventory][fleet]") {
  IdentifiedPair pair;
  auto& [dir, store, options] = pair.fleet_dir;
  auto& clock = pair.clock;
  auto& prober = pair.prober;
  Fleet fleet(prober, *store, clock, options);
  pair.StartReady(fleet);
  // Pointed at c1's server at a reload: held, with no credentials (a
  // placeholder), c1 kept.
  WriteCluster(dir.path(), "c2", ServerOf("c1"));
  CHECK_FALSE(fleet.Reload().empty());
  CHECK_FALSE(fleet.Cluster("c2")->Usable());
  CHECK(fleet.Cluster("c1")->Usable());
  // Loads again, pointing at a server that refuses gantry its kube-system
  // read: a refusal, never Ready there.
  prober.forbids_kube_system["c2"] = true;
  pair.PointC2Elsewhere(fleet, "uid-z");
  for (int i = 0; i < 3; ++i) fleet.ProbeAllNow();
  auto c2 = fleet.Cluster("c2");
  CHECK(c2->health.state != HealthState::kReady);
  CHECK(c2->health.credentials_refused);
  CHECK_THAT(c2->health.last_error, Catch::Contains("could not be read (HTTP 403), to confirm"));
  // Read: another cluster, held.
  prober.forbids_kube_system["c2"] = false;
  fleet.ProbeAllNow();
  CHECK_FALSE(fleet.Cluster("c2")->Usable());
  CHECK_THAT(fleet.Cluster("c2")->config_error, Catch::Contains("uid uid-z, not uid-b"));
  fleet.Stop();
}

TEST_CASE("an entry whose kubeconfig keeps its address but changes its credentials is Ready only once its "
          "identity is read there again",
          "[inventory][fleet]") {
  IdentifiedPair pair;
  auto& [dir, store, options] = pair.fleet_dir;
  auto& clock = pair.clock;
  auto& prober = pair.prober;
  Fleet fleet(prober, *store, clock, options);
  pair.StartReady(fleet);
  // A cluster made again at the same address, its new kubeconfig put in
  // place (another token here; another CA likewise), and its kube-system
  // read failing (a 429, a 5xx). (Set first: the reload probes it at once.)
  prober.SetClusterId("c2", "");
  WriteCluster(dir.path(), "c2", ServerOf("c2"), "another-token-456");
  InventoryChange change;
  REQUIRE(fleet.Reload(&change).empty());
  CHECK(change.Describe() == "changed c2 (kubeconfig (client credentials))");
  for (int i = 0; i < 3; ++i) fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->health.state != HealthState::kReady);
  // Read there: another cluster, held.
  prober.SetClusterId("c2", "uid-z");
  fleet.ProbeAllNow();
  CHECK_FALSE(fleet.Cluster("c2")->Usable());
  CHECK_THAT(fleet.Cluster("c2")->config_error, Catch::Contains("uid uid-z, not uid-b"));
  fleet.Stop();
}

TEST_CASE("an entry whose own server shows another identity is held and after a reload is not Ready there on a "
          "probe that reads none",
          "[inventory][fleet]") {
  IdentifiedPair pair;
  auto& [dir, store, options] = pair.fleet_dir;
  auto& clock = pair.clock;
  auto& prober = pair.prober;
  Fleet fleet(prober, *store, clock, options);
  pair.StartReady(fleet);
  // The same address now serves another cluster (a DNS name moved, a
  // cluster made again there): held at its next probe.
  prober.SetClusterId("c2", "uid-z");
  fleet.ProbeAllNow();
  REQUIRE_FALSE(fleet.Cluster("c2")->Usable());
  // A reload releases the hold; a probe that then reads no identity (a 429,
  // a 5xx) does not make it Ready on that cluster. (Set first: the reload
  // probes it at once.)
  prober.SetClusterId("c2", "");
  REQUIRE(fleet.Reload().empty());
  for (int i = 0; i < 3; ++i) fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->config_error.empty());
  CHECK(fleet.Cluster("c2")->health.state != HealthState::kReady);
  // Its own identity read there again: Ready.
  prober.SetClusterId("c2", "uid-b");
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->Usable());
  CHECK(fleet.Cluster("c2")->health.state == HealthState::kReady);
  fleet.Stop();
}

TEST_CASE("an entry whose kubeconfig now reaches another cluster is held until it reaches its own again",
          "[inventory][fleet]") {
  IdentifiedPair pair;
  auto& [dir, store, options] = pair.fleet_dir;
  auto& clock = pair.clock;
  auto& prober = pair.prober;
  Fleet fleet(prober, *store, clock, options);
  pair.StartReady(fleet);
  // c2's file is pointed at a server of a third cluster, which no other
  // entry reaches: a view of it would show every job of c2's gone.
  pair.PointC2Elsewhere(fleet, "uid-z");
  fleet.ProbeAllNow();
  auto held = fleet.Cluster("c2");
  CHECK_FALSE(held->Usable());
  CHECK(held->health.state != HealthState::kReady);
  CHECK(held->cluster_id == "uid-b");  // still the cluster its jobs run in
  CHECK_THAT(held->config_error, Catch::Contains("c2.yaml: it now reaches another cluster than the one cluster c2 "
                                                 "ran its jobs in (its kube-system Namespace has uid uid-z, not "
                                                 "uid-b)"));
  for (const auto& snap : fleet.Snapshot(clock.NowMillis())) {
    if (snap.name == "c2") CHECK(snap.health != placement::ClusterHealth::kReady);
  }
  // A reload that changes nothing holds it again at its next probe.
  REQUIRE(fleet.Reload().empty());
  fleet.ProbeAllNow();
  CHECK_FALSE(fleet.Cluster("c2")->Usable());
  // Its own cluster again (another address of it): Ready, as before. The
  // reload says it looks again.
  prober.SetClusterId("c2", "uid-b");
  InventoryChange change;
  REQUIRE(fleet.Reload(&change).empty());
  CHECK(change.Describe() == "changed c2 (probed again after its hold (held again if the probe reads what held it))");
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->Usable());
  CHECK(fleet.Cluster("c2")->health.state == HealthState::kReady);
  CHECK(fleet.Cluster("c2")->cluster_id == "uid-b");
  CHECK(fleet.Cluster("c1")->health.state == HealthState::kReady);
  fleet.Stop();
}

}  // namespace gantry::inventory

namespace gantry::inventory {

TEST_CASE("a reload keeps what the probes read of a cluster: its identity and its clock's offset",
          "[inventory][fleet]") {
  FleetDir fleet_dir({"c2"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_interval_ms = 3'600'000;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  prober.SetClusterId("c2", "kube-system-uid-a");
  prober.SetClockOffset("c2", -95'000);
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->clock_offset_ms == -95'000);
  // c2 runs jobs; an operator adds c1, another address of the same cluster,
  // and gives c2 a price in the same reload (its entry is read afresh).
  WriteCluster(dir.path(), "c1");
  std::ofstream(dir.File("clusters.d/c2.yaml"), std::ios::app) << "pricePerGPUHour: {onDemand: 2.5}\n";
  prober.SetClusterId("c1", "kube-system-uid-a");
  REQUIRE(fleet.Reload().empty());
  CHECK(fleet.Cluster("c2")->cluster_id == "kube-system-uid-a");  // not read afresh: kept
  CHECK(fleet.Cluster("c2")->clock_offset_ms == -95'000);
  // c1 is probed first (by name): the newcomer is held, c2 keeps its jobs.
  // Had the reload forgotten c2's identity, c1 would have taken it, and c2's
  // own probe would then have held c2.
  prober.SetClockOffset("c2", std::nullopt);  // this probe tells none: the last one stands
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c2")->Usable());
  CHECK(fleet.Cluster("c2")->health.state == HealthState::kReady);
  CHECK_FALSE(fleet.Cluster("c1")->Usable());
  CHECK_THAT(fleet.Cluster("c1")->config_error, Catch::Contains("this one is held and c2 kept"));
  CHECK(fleet.Cluster("c2")->clock_offset_ms == -95'000);
  // Told far off once, and back only well within: a reading near the mark
  // (each is good to about a second) does not warn at every probe.
  CHECK(fleet.Cluster("c2")->clock_offset_far);
  for (const auto& [offset, far] : std::vector<std::pair<int64_t, bool>>{
           {-29'000, true}, {-30'500, true}, {-27'000, false}, {-29'500, false}, {31'000, true}}) {
    INFO(offset);
    prober.SetClockOffset("c2", offset);
    fleet.ProbeAllNow();
    CHECK(fleet.Cluster("c2")->clock_offset_ms == offset);  // the latest reading, always
    CHECK(fleet.Cluster("c2")->clock_offset_far == far);
  }
  fleet.Stop();
}

}  // namespace gantry::inventory

namespace gantry::inventory {

TEST_CASE("a reload names each cluster whose file it changed and what changed in it", "[inventory][fleet]") {
  FleetDir fleet_dir({"c1", "c2", "c3"});
  auto& [dir, store, options] = fleet_dir;
  options.probe_interval_ms = 3'600'000;
  FakeClock clock(1'000'000);
  FakeProber prober;
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().empty());
  std::ofstream(dir.File("clusters.d/c1.yaml"))
      << "name: c1\nkubeconfig: ../c1.kubeconfig\nregion: us-east-1\ncordoned: true\n";
  std::ofstream(dir.File("clusters.d/c2.yaml"), std::ios::app) << "labels: {tier: gold}\n";
  InventoryChange change;
  REQUIRE(fleet.Reload(&change).empty());
  using Changed = std::vector<std::pair<std::string, std::string>>;
  CHECK(change.changed == Changed{{"c1", "cordoned, region eu-central-1 -> us-east-1"}, {"c2", "labels (+tier=gold)"}});
  CHECK(change.Describe() == "changed c1 (cordoned, region eu-central-1 -> us-east-1), c2 (labels (+tier=gold))");
  // Read again as it is: nothing changed.
  InventoryChange none;
  REQUIRE(fleet.Reload(&none).empty());
  CHECK(none.changed.empty());
  CHECK(none.Describe().empty());
  fleet.Stop();
}

}  // namespace gantry::inventory
