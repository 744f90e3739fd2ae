// A candidate cluster that refuses the job's Workload copy (RBAC, a policy
// webhook, a schema it rejects) is one candidate less, not a failed job and
// not a create retried at every pass: the job runs in another, the refusal
// is an event, and only a job that every candidate refuses fails, with each
// cluster's answer. And the time since which a cluster refuses gantry a
// watch is kept across a restart, as an outage's is.
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <sstream>

#include "dispatch_fixture.h"
#include "gantry/common/clock.h"
#include "gantry/http/client.h"

namespace gantry::testing {
namespace {

using std::chrono::seconds;

// Rows in the daemon's cluster_watch_refusals table (-1 when it cannot be read).
int WatchRefusalRows(DispatchFleet& fleet) {
  sqlite3* db = nullptr;
  const std::string path = fleet.dir().File("data") + "/gantry.db";
  int rows = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 1000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM cluster_watch_refusals", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      rows = sqlite3_column_int(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return rows;
}

// What gantry-sim ctl clusters says of cluster (null when it cannot be read).
nlohmann::json SimClusterSummary(DispatchFleet& fleet, const std::string& cluster) {
  RunResult r = fleet.Ctl({"clusters"});
  if (r.code != 0) return nullptr;
  auto all = nlohmann::json::parse(r.out, nullptr, false);
  if (!all.is_array()) return nullptr;
  for (const auto& c : all) {
    if (c.value("name", "") == cluster) return c;
  }
  return nullptr;
}

// Whether gantry-sim holds cluster's watch events back (hold-watches, lose-answer).
bool WatchesHeld(DispatchFleet& fleet, const std::string& cluster) {
  nlohmann::json c = SimClusterSummary(fleet, cluster);
  return c.is_object() && c.value("watchesHeld", false);
}

}  // namespace

TEST_CASE("a candidate that forbids the Workload copy is asked once: the job runs in another cluster",
          "[e2e][dispatch][refusal]") {
  // c1 admits at once, c2 after 2 s: were c1 to take the copy, it would win.
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // 403 (RBAC, a webhook), or 413: the copy is larger than c1 takes.
  const int code = GENERATE(403, 413);
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads:create=" + std::to_string(code)}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("elsewhere", "team-a", 1, 0)) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "elsewhere", {"Succeeded", "Failed"}, seconds(40)));
  auto job = fleet.Job("team-a", "elsewhere");
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["cluster"] == "c2");
  CHECK(job["status"]["epoch"] == 1);
  // One Warning event names c1 and its answer.
  int refused = 0;
  for (const auto& e : fleet.Events("team-a", "elsewhere")) {
    if (e.value("reason", "") != "Refused") continue;
    ++refused;
    CHECK(e.value("cluster", "") == "c1");
    CHECK(e.value("type", "") == "Warning");
    CHECK(e.value("message", "").find(std::to_string(code)) != std::string::npos);
  }
  CHECK(refused == 1);
  // c1 was asked once, not at every pass while c2 took its 2 s to admit.
  CHECK(fleet.RemoteCalls("c1", "create", code) == 1);
  CHECK(fleet.Runs(fleet.Uid("team-a", "elsewhere")).size() == 1);
  CHECK(fleet.Ctl({"check"}).code == 0);

  // Allowed again, c1 takes the next job: a refusal holds for one epoch of one job.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("after", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "after", {"Succeeded", "Failed"}, seconds(40)));
  CHECK(fleet.Job("team-a", "after")["status"]["cluster"] == "c1");
}

TEST_CASE("a refusal is kept across a daemon restart: the refusing cluster is not asked again",
          "[e2e][dispatch][refusal][recovery]") {
  // c2 admits after 5 s: time to restart the daemon while the job nominates.
  DispatchFleetOptions o;
  o.sim_config_yaml = "clusters:\n- {name: c1}\n- {name: c2, jobDuration: 1s, admissionDelay: 5s}\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads:create"}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("kept", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(WaitFor([&] { return Count(Reasons(fleet, "team-a", "kept"), "Refused") == 1; }, seconds(20)));
  REQUIRE(fleet.Phase("team-a", "kept") == "Nominating");
  fleet.RestartDaemon(true);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitPhase("team-a", "kept", {"Succeeded", "Failed"}, seconds(40)));
  auto job = fleet.Job("team-a", "kept");
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["cluster"] == "c2");
  CHECK(job["status"]["epoch"] == 1);
  // The restarted daemon (its counters start at 0) never asked c1.
  CHECK(fleet.RemoteCalls("c1", "create", 403) == 0);
  CHECK(Count(Reasons(fleet, "team-a", "kept"), "Refused") == 1);
}

TEST_CASE("a job whose every candidate refuses its Workload copy fails with each cluster's answer",
          "[e2e][dispatch][refusal]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads:create"}).code == 0);
  REQUIRE(fleet.Ctl({"forbid", "c2", "workloads:create"}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("nowhere", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "nowhere", {"Failed", "Succeeded"}, seconds(30)));
  auto job = fleet.Job("team-a", "nowhere");
  CHECK(job["status"]["phase"] == "Failed");
  const std::string message = job["status"].value("message", "");
  INFO(message);
  CHECK(message.find("every candidate cluster refused") != std::string::npos);
  CHECK(message.find("c1: cluster c1 refused Workload") != std::string::npos);
  CHECK(message.find("c2: cluster c2 refused Workload") != std::string::npos);
  CHECK(message.find("403") != std::string::npos);
  // One event per cluster, and the failure.
  CHECK(Count(Reasons(fleet, "team-a", "nowhere"), "Refused") == 3);
  CHECK(fleet.RemoteCalls("c1", "create", 403) == 1);
  CHECK(fleet.RemoteCalls("c2", "create", 403) == 1);
  CHECK(fleet.Runs(fleet.Uid("team-a", "nowhere")).empty());
}

TEST_CASE("a cluster's watch refusal keeps its start time across a daemon restart", "[e2e][recovery][refusal]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads"}).code == 0);
  auto since = [&] { return fleet.Cluster("c1")["status"].value("watchRefusedSince", ""); };
  std::string before;
  REQUIRE(WaitFor([&] { return !(before = since()).empty(); }, seconds(30)));
  const std::optional<int64_t> before_ms = ParseRfc3339(before);
  REQUIRE(before_ms);
  // Two seconds on (the field has whole seconds), so that a clock started
  // again by the restart would show.
  SystemClock clock;
  REQUIRE(WaitFor([&] { return clock.NowMillis() >= *before_ms + 2'000; }, seconds(10)));
  fleet.RestartDaemon(true);
  REQUIRE(fleet.ok());
  std::string after;
  REQUIRE(WaitFor([&] { return !(after = since()).empty(); }, seconds(30)));
  CHECK(after == before);

  CHECK(WatchRefusalRows(fleet) == 1);

  // Allowed again: no refusal, and its row goes; a new refusal starts a new clock.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  REQUIRE(WaitFor([&] { return !fleet.Cluster("c1")["status"].contains("watchRefused"); }, seconds(30)));
  REQUIRE(WaitFor([&] { return WatchRefusalRows(fleet) == 0; }, seconds(10)));
  REQUIRE(fleet.Ctl({"forbid", "c1", "workloads"}).code == 0);
  std::string again;
  REQUIRE(WaitFor([&] { return !(again = since()).empty(); }, seconds(30)));
  CHECK(ParseRfc3339(again).value_or(0) > *before_ms);
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
}

TEST_CASE("an at-most-once job refused after a create whose answer was lost waits for its owner's view, and runs once",
          "[e2e][dispatch][refusal]") {
  // c1 admits at once, c2 after 2 s: c1 takes the lease.
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  o.daemon_config_yaml = "notFoundConfirmsAfterSeconds: 60\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // c1's apiserver stalls as it creates the real job: the job is there and
  // runs, but gantry gets no answer and its watches show nothing.
  // A typo would never fire: refused.
  CHECK(fleet.Ctl({"lose-answer", "c1", "job:create"}).code != 0);
  CHECK(fleet.Ctl({"lose-answer", "c1", "jobs:frobnicate"}).code != 0);
  REQUIRE(fleet.Ctl({"lose-answer", "c1", "jobs:create"}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("once", "team-a", 1, 0, "3s", "  onClusterLoss: Fail")) == 201);
  const std::string uid = fleet.Uid("team-a", "once");
  // RBAC changes meanwhile, before the daemon's own deadline (10 s) ends its
  // wait for the answer: its create sent again would find its own object.
  REQUIRE(WaitFor([&] { return WatchesHeld(fleet, "c1"); }, seconds(30)));
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobs:create"}).code == 0);
  CHECK(SimClusterSummary(fleet, "c1")["faults"].value("answersHeld", 0) == 1);
  REQUIRE(WaitFor([&] { return fleet.Runs(uid).size() == 1; }, seconds(30)));  // it landed, and runs
  // Then the stalled answer comes, a 503. The create sent again is refused:
  // a refusal judged before the object's existence, which says nothing of
  // the first one.
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  // Moved now, the job would run in c2 as well. It waits, and says why.
  REQUIRE(WaitFor([&] { return Count(Reasons(fleet, "team-a", "once"), "JobRefusedWaiting") == 1; }, seconds(30)));
  auto waiting = fleet.Job("team-a", "once");
  CHECK(waiting["status"]["phase"] == "Admitted");
  CHECK(waiting["status"]["cluster"] == "c1");
  CHECK(waiting["status"].value("message", "").find("went unanswered and may have landed") != std::string::npos);
  // c1's watches come back: the job is seen there, and followed to its end.
  REQUIRE(fleet.Ctl({"hold-watches", "c1", "off"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "once", {"Succeeded", "Failed"}, seconds(40)));
  auto done = fleet.Job("team-a", "once");
  CHECK(done["status"]["phase"] == "Succeeded");
  CHECK(done["status"]["cluster"] == "c1");
  CHECK(done["status"]["epoch"] == 1);
  CHECK(Count(Reasons(fleet, "team-a", "once"), "JobRefused") == 0);
  CHECK(fleet.Runs(uid).size() == 1);
  CHECK(fleet.Ctl({"check"}).code == 0);
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
}

TEST_CASE("a Requeue job refused after a create whose answer was lost moves on but starts elsewhere only once "
          "its first run is seen and fenced",
          "[e2e][dispatch][refusal]") {
  // c1 admits at once, c2 after 2 s: c1 takes the lease.
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  o.daemon_config_yaml = "notFoundConfirmsAfterSeconds: 60\n";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // As above: c1 creates the real job, which runs, but its answer is held
  // and its watches show nothing; then c1 forbids the create sent again.
  REQUIRE(fleet.Ctl({"lose-answer", "c1", "jobs:create"}).code == 0);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("again", "team-a", 1, 0, "12s", "  onClusterLoss: Requeue")) == 201);
  const std::string uid = fleet.Uid("team-a", "again");
  // Its deletes (of the job and of its copy) are forbidden too: nothing
  // ends that run before c1 shows it.
  REQUIRE(WaitFor([&] { return WatchesHeld(fleet, "c1"); }, seconds(30)));
  REQUIRE(fleet.Ctl({"forbid", "c1", "jobs:create,jobs:delete,workloads:delete"}).code == 0);
  REQUIRE(WaitFor([&] { return fleet.Runs(uid).size() == 1; }, seconds(30)));
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  // The refusal moves the job (it may run again, not twice at once): c2
  // takes the lease of epoch 2, and its run waits for c1's view.
  REQUIRE(WaitFor(
      [&] {
        auto job = fleet.Job("team-a", "again");
        return job["status"].value("cluster", "") == "c2" && job["status"].value("epoch", 0) == 2;
      },
      seconds(30)));
  CHECK(Count(Reasons(fleet, "team-a", "again"), "JobRefused") == 1);
  CHECK(fleet.Runs(uid).size() == 1);
  // c1's watches come back: its run of epoch 1 is seen and deleted, and
  // only then does the job start in c2.
  REQUIRE(fleet.Ctl({"forbid", "c1"}).code == 0);
  REQUIRE(fleet.Ctl({"hold-watches", "c1", "off"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "again", {"Succeeded", "Failed"}, seconds(60)));
  auto done = fleet.Job("team-a", "again");
  CHECK(done["status"]["phase"] == "Succeeded");
  CHECK(done["status"]["cluster"] == "c2");
  CHECK(fleet.Runs(uid).size() == 2);
  CHECK(fleet.Ctl({"check"}).code == 0);  // never in two clusters at once
}

}  // namespace gantry::testing
