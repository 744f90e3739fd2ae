// A database restored from a copy taken before its jobs were dispatched:
// the store is behind the clusters, where those jobs run since. The runs of
// that lost history are taken back (StoreBehind), never deleted and started
// again: an at-most-once job runs once.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <string>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
namespace fs = std::filesystem;

bool HasEvent(DispatchFleet& fleet, const std::string& ns, const std::string& name, const std::string& reason) {
  for (const json& e : fleet.Events(ns, name)) {
    if (e.value("reason", "") == reason) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a database restored from a copy taken before a job's dispatch: its run takes the lease, not run again",
          "[e2e][recovery][restore]") {
  DispatchFleetOptions o;
  o.clusters = 2;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // No cluster has a LocalQueue for team-late yet: the job waits, Queued.
  REQUIRE(fleet.Submit("team-late", SimJobYaml("once", "team-late", 1, 0, "15s", "  onClusterLoss: Fail")) == 201);
  REQUIRE(fleet.WaitPhase("team-late", "once", {"Queued"}, seconds(20)));
  const std::string uid = fleet.Uid("team-late", "once");
  // The backup: the daemon stopped, its database copied with its -wal.
  const fs::path data = fleet.dir().File("data");
  const fs::path backup = fleet.dir().File("backup");
  fleet.StopDaemon(false);
  fs::create_directories(backup);
  for (const char* f : {"gantry.db", "gantry.db-wal"}) {
    if (fs::exists(data / f)) fs::copy_file(data / f, backup / f);
  }
  fleet.StartDaemon();
  REQUIRE(fleet.ok());
  // Since the backup: c2 gets the queue, and the job runs there at epoch 1.
  REQUIRE(fleet.Ctl({"local-queue", "c2", "team-late/team-late"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-late", "once", {"Running"}, seconds(30)));
  REQUIRE(fleet.Job("team-late", "once")["status"].value("cluster", "") == "c2");
  // The restore: the daemon stopped at once, the WAL removed, the copy put back.
  fleet.StopDaemon(true);
  for (const char* f : {"gantry.db", "gantry.db-wal", "gantry.db-shm"}) fs::remove(data / f);
  for (const char* f : {"gantry.db", "gantry.db-wal"}) {
    if (fs::exists(backup / f)) fs::copy_file(backup / f, data / f);
  }
  fleet.StartDaemon();
  REQUIRE(fleet.ok());
  // The run in c2 takes the lease, and the job finishes as it does, once.
  REQUIRE(WaitFor([&] { return HasEvent(fleet, "team-late", "once", "StoreBehind"); }, seconds(30)));
  const json job = fleet.Job("team-late", "once");
  INFO(job.dump());
  CHECK(job["status"].value("cluster", "") == "c2");
  CHECK(job["status"].value("epoch", 0) == 1);
  REQUIRE(fleet.WaitPhase("team-late", "once", {"Succeeded"}, seconds(60)));
  CHECK(fleet.Runs(uid).size() == 1);
  const RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

}  // namespace gantry::testing
