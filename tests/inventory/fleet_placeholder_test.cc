// A cluster whose file is refused with no last good entry: held in the
// inventory as a placeholder (ClusterView::config_error), not removed.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "fleet_fixture.h"

namespace gantry::inventory {
namespace {

// An edit no release of gantry accepts: an unknown field.
void BreakCluster(const std::string& dir, const std::string& name) {
  std::ofstream(dir + "/clusters.d/" + name + ".yaml", std::ios::app) << "gpuz: 8\n";
}

}  // namespace

TEST_CASE("a cluster whose file is refused at start is held: listed with the error, never probed, its outage kept, "
          "and a normal entry once the file loads",
          "[inventory][fleet][placeholder]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}, {"c2", true}};
  RunBefore(fleet_dir, prober, clock, "c1",
            [](Fleet& before) { REQUIRE(before.Cluster("c1")->health.first_lost_ms == 1'000'000); });

  // While the daemon is down, c1's file gets a field this release refuses,
  // and c1 answers again: only a probe could tell.
  BreakCluster(dir.path(), "c1");
  prober.up["c1"] = true;
  clock.Advance(60'000);
  const int probes = prober.Probes("c1");  // by the daemon before
  Fleet fleet(prober, *store, clock, options);
  auto errors = fleet.Start();
  REQUIRE(errors.size() == 1);
  CHECK_FALSE(errors[0].kept_last_good);

  auto held = fleet.Cluster("c1");
  REQUIRE(held);
  CHECK_FALSE(held->Usable());
  CHECK(held->config.source_file == dir.File("clusters.d/c1.yaml"));
  CHECK(held->config.region.empty());
  CHECK_THAT(held->config_error, Catch::StartsWith("cluster file c1.yaml refused: line 4: "));
  CHECK_THAT(held->config_error, Catch::EndsWith("; its jobs are held until it loads"));
  CHECK(held->credentials_error.empty());
  CHECK_FALSE(fleet.Credentials("c1").has_value());
  // The outage restored as for any cluster at start, and not forgotten.
  CHECK(held->health.state == HealthState::kUnknown);
  CHECK(held->health.first_lost_ms == 1'000'000);
  CHECK(store->LoadOutages()->count("c1") == 1);

  // Never probed, whatever the time: its health stays as it was, so no
  // clusterLostTimeout runs; placement takes nothing of it.
  for (int i = 0; i < 3; ++i) {
    fleet.ProbeAllNow();
    clock.Advance(options.probe_interval_ms);
  }
  CHECK(prober.Probes("c1") == probes);
  held = fleet.Cluster("c1");
  CHECK(held->health.state == HealthState::kUnknown);
  CHECK(held->health.first_lost_ms == 1'000'000);
  const auto snapshot = fleet.Snapshot(clock.NowMillis());
  REQUIRE(snapshot.size() == 2);
  CHECK(snapshot[0].name == "c1");
  CHECK(snapshot[0].health == placement::ClusterHealth::kUnknown);
  CHECK(snapshot[0].config_refused);
  CHECK_FALSE(snapshot[1].config_refused);

  // Still refused at a reload: still held (a placeholder is no last good entry).
  errors = fleet.Reload();
  REQUIRE(errors.size() == 1);
  CHECK_FALSE(errors[0].kept_last_good);
  CHECK_FALSE(fleet.Cluster("c1")->config_error.empty());
  CHECK(fleet.Cluster("c1")->health.first_lost_ms == 1'000'000);

  // Fixed and reloaded: a normal entry, probed at once (by the fleet's own
  // thread, so it may come before or after the checks below). c1 does not
  // answer this time: whichever probe comes first fails.
  prober.up["c1"] = false;
  const uint64_t generation = fleet.Generation();
  WriteCluster(dir.path(), "c1");
  CHECK(fleet.Reload().empty());
  CHECK(fleet.Generation() > generation);
  auto loaded = fleet.Cluster("c1");
  REQUIRE(loaded);
  CHECK(loaded->Usable());
  CHECK(loaded->config.region == "eu-central-1");
  CHECK(fleet.Credentials("c1").has_value());
  // Nothing was learnt of it while held: the outage from before the hold is
  // forgotten, and a first failed probe starts the clock now, not at 1'000'000
  // (its jobs would have been lost at once).
  CHECK(loaded->health.state != HealthState::kReady);
  CHECK(loaded->health.first_lost_ms.value_or(clock.NowMillis()) == clock.NowMillis());
  fleet.ProbeAllNow();
  CHECK(fleet.Cluster("c1")->health.first_lost_ms == clock.NowMillis());
  CHECK(fleet.Cluster("c1")->health.LostForMs(clock.NowMillis()) == 0);
  prober.up["c1"] = true;
  clock.Advance(options.probe_interval_ms);
  fleet.ProbeAllNow();
  CHECK(prober.Probes("c1") > probes);
  CHECK(fleet.Cluster("c1")->health.state == HealthState::kReady);
  CHECK(testing::WaitFor([&] { return store->LoadOutages()->count("c1") == 0; }));
  fleet.Stop();
}

TEST_CASE("a placeholder keeps the health of the entry it replaces, and its file gone removes it",
          "[inventory][fleet][placeholder]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  Fleet fleet(prober, *store, clock, options);
  fleet.Start();
  fleet.ProbeAllNow();
  REQUIRE(fleet.Cluster("c1")->health.state == HealthState::kReady);

  // An operator renames c1's file and breaks it on the way: the new file has
  // no last good entry, and c1's old one is gone.
  const std::string renamed = dir.File("clusters.d/gpu-eu.yaml");
  std::filesystem::rename(dir.File("clusters.d/c1.yaml"), renamed);
  std::ofstream(renamed, std::ios::app) << "cordoned: perhaps\n";
  REQUIRE(fleet.Reload().size() == 1);
  auto held = fleet.Cluster("c1");
  REQUIRE(held);
  CHECK_THAT(held->config_error, Catch::StartsWith("cluster file gpu-eu.yaml refused: "));
  CHECK(held->config.source_file == renamed);
  CHECK(held->health.state == HealthState::kReady);  // as it was: nothing has been seen since
  CHECK_FALSE(fleet.Credentials("c1").has_value());
  // Ready as last seen, but not usable: placement does not take it.
  CHECK(fleet.Snapshot(clock.NowMillis())[0].health == placement::ClusterHealth::kUnknown);
  const int probes = prober.Probes("c1");
  clock.Advance(options.probe_interval_ms);
  fleet.ProbeAllNow();
  CHECK(prober.Probes("c1") == probes);

  std::filesystem::remove(renamed);
  CHECK(fleet.Reload().empty());
  CHECK_FALSE(fleet.Cluster("c1").has_value());
  fleet.Stop();
}

TEST_CASE("a clusters.d that cannot be listed at a reload keeps the clusters held", "[inventory][fleet][placeholder]") {
  FleetDir fleet_dir({"c1", "c2"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", true}, {"c2", true}};
  BreakCluster(dir.path(), "c1");
  Fleet fleet(prober, *store, clock, options);
  REQUIRE(fleet.Start().size() == 1);
  REQUIRE(fleet.Clusters().size() == 2);

  std::filesystem::rename(options.clusters_dir, dir.File("moved"));
  fleet.Reload();
  std::filesystem::rename(dir.File("moved"), options.clusters_dir);
  const auto clusters = fleet.Clusters();
  REQUIRE(clusters.size() == 2);
  CHECK_FALSE(clusters[0].config_error.empty());
  CHECK(clusters[1].Usable());
  fleet.Stop();
}

TEST_CASE("a clusters directory that cannot be listed at start says so, and forgets no cluster's outage",
          "[inventory][fleet][placeholder]") {
  FleetDir fleet_dir({"c1"});
  auto& [dir, store, options] = fleet_dir;
  FakeClock clock(1'000'000);
  FakeProber prober;
  prober.up = {{"c1", false}};
  RunBefore(fleet_dir, prober, clock, "c1", [](Fleet& before) { CHECK(before.DirStatus().ok()); });

  // The directory is replaced by a file (root reads any directory, so no
  // permission bits would do): nothing can be listed.
  std::filesystem::rename(dir.File("clusters.d"), dir.File("clusters.d.old"));
  std::ofstream(dir.File("clusters.d")) << "not a directory\n";
  Fleet fleet(prober, *store, clock, options);
  CHECK(fleet.Start().empty());
  CHECK_FALSE(fleet.DirStatus().ok());
  CHECK_THAT(fleet.DirStatus().message(), Catch::Contains(dir.File("clusters.d")));
  CHECK(fleet.Clusters().empty());
  fleet.Stop();
  // c1 is not gone: its outage stays for the start that can list it. The
  // store writes in order, so once a later write is done, a forgetting
  // queued at Start would have been too.
  std::atomic<bool> written{false};
  store->SaveOutage("c9", std::nullopt, "", [&](Result<bool>) { written = true; });
  REQUIRE(testing::WaitFor([&] { return written.load(); }));
  CHECK(store->LoadOutages()->count("c1") == 1);
}

}  // namespace gantry::inventory
