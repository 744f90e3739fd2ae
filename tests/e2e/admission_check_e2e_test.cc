// Admission checks end to end: workers whose ClusterQueue has checks (a
// ProvisioningRequest, say) reserve quota first and admit once every check
// is Ready. gantry takes the lease at QuotaReserved or at Admitted (leaseOn),
// and a check Rejected in one cluster, or in the lease holder, never wedges
// a job nor runs it twice. The checks are held (outcome Pending) and decided
// by hand (gantry-sim ctl admission-check), so no step waits on a timer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dispatch_fixture.h"
#include "gantry/common/json_path.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Two CPU clusters whose every admission check is held until set by hand.
const char* kHeldChecks = R"(clusters:
- {name: c1, admissionChecks: [{name: provisioning, outcome: Pending}]}
- {name: c2, admissionChecks: [{name: provisioning, outcome: Pending}]}
)";

// gantry.yaml lines for the cases where a job is rejected everywhere, or in
// its owner before it ran: the next epoch waits out a 1 s floor, not the
// default 10 s.
const char* kShortRejectionFloor = "rejectionBackoffSeconds: 1";

DispatchFleetOptions Fleet(const std::string& sim_yaml, const std::string& daemon_yaml = "") {
  DispatchFleetOptions o;
  o.sim_config_yaml = sim_yaml;
  o.daemon_config_yaml = daemon_yaml;
  return o;
}

// The job's Workload copy in cluster (null when absent).
json RemoteWorkload(DispatchFleet& fleet, const std::string& cluster, const std::string& remote) {
  auto reply = fleet.RemoteGet(cluster, RemoteWorkloadPath("team-a", remote));
  return reply.status == 200 ? reply.body : json();
}

// Condition `type` of a remote object: "True", "False", or "" when absent.
std::string Cond(const json& o, const std::string& type) {
  const json* conditions = JsonAt(o, {"status", "conditions"});
  if (!conditions || !conditions->is_array()) return "";
  for (const json& c : *conditions) {
    if (c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

// Whether cluster shows the job's copy at epoch holding quota, not admitted.
bool Reserved(DispatchFleet& fleet, const std::string& cluster, const std::string& remote, int epoch) {
  json wl = RemoteWorkload(fleet, cluster, remote);
  const json* at = JsonAt(wl, {"metadata", "annotations", dispatch::kEpochAnnotation});
  return at && *at == std::to_string(epoch) && Cond(wl, "QuotaReserved") == "True" &&
         Cond(wl, "Admitted") == "False";
}

// Whether cluster shows the job's copy deactivated (spec.active false).
bool Deactivated(DispatchFleet& fleet, const std::string& cluster, const std::string& remote) {
  const json wl = RemoteWorkload(fleet, cluster, remote);
  const json* active = JsonAt(wl, {"spec", "active"});
  return active && *active == false;
}

int Epoch(DispatchFleet& fleet, const std::string& name) {
  json j = fleet.Job("team-a", name);
  return j.is_object() ? j["status"].value("epoch", 0) : 0;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The job succeeded in cluster at epoch, having run once, there, at that
// epoch (the journal's word), and no job ran twice.
void CheckSucceededOnce(DispatchFleet& fleet, const std::string& name, const std::string& cluster, int epoch) {
  json job = fleet.Job("team-a", name);
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["cluster"] == cluster);
  CHECK(job["status"]["epoch"] == epoch);
  std::vector<json> runs = fleet.Runs(job["metadata"].value("uid", ""));
  INFO(Describe(runs));
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].value("cluster", "") == cluster);
  CHECK(runs[0].value("epoch", "") == std::to_string(epoch));
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out);
  CHECK(check.code == 0);
}

// gantry-sim ctl admission-check CLUSTER team-a/REMOTE STATE: succeeds.
void SetCheck(DispatchFleet& fleet, const std::string& cluster, const std::string& remote, const std::string& state) {
  RunResult r = fleet.Ctl({"admission-check", cluster, "team-a/" + remote, state});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
}

// Sets the job's check in cluster Ready: it runs there, once, at epoch.
void ReadyThenSucceededOnce(DispatchFleet& fleet, const std::string& name, const std::string& remote,
                            const std::string& cluster, int epoch) {
  SetCheck(fleet, cluster, remote, "Ready");
  REQUIRE(fleet.WaitPhase("team-a", name, {"Succeeded", "Failed"}, seconds(30)));
  CheckSucceededOnce(fleet, name, cluster, epoch);
}

// In a fleet of kHeldChecks: submits job `name` and waits until both
// clusters' copies hold quota at epoch 1. Returns its remote name.
std::string SubmitHeldInBoth(DispatchFleet& fleet, const std::string& name) {
  REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 1, 0, "500ms")) == 201);
  const std::string remote = RemoteName(name, fleet.Uid("team-a", name));
  // (A copy added later, to a cluster placement did not find feasible at
  // the nomination, comes at a resync: up to 30 s on a loaded machine.)
  const bool held = PollFor([&] { return Reserved(fleet, "c1", remote, 1) && Reserved(fleet, "c2", remote, 1); },
                            seconds(45));
  if (!held) {
    std::string events;
    for (const json& e : fleet.Events("team-a", name)) events += e.dump() + "\n";
    INFO(events << RemoteWorkload(fleet, "c1", remote).dump() << "\n" << RemoteWorkload(fleet, "c2", remote).dump());
    REQUIRE(held);
  }
  return remote;
}

}  // namespace

TEST_CASE("leaseOn QuotaReserved: the lease is taken while a check is Pending, the job starts only once Admitted, "
          "and a check Rejected on the owner is an eviction",
          "[e2e][dispatch][checks]") {
  DispatchFleet fleet(Fleet("clusters:\n- {name: c1, admissionChecks: [{name: provisioning, outcome: Pending}]}\n",
                            std::string("leaseOn: QuotaReserved\n") + kShortRejectionFloor));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("ready", "team-a", 1, 0, "500ms")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("rejected", "team-a", 1, 0, "500ms")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("once", "team-a", 1, 0, "500ms", "  onClusterLoss: Fail")) == 201);
  for (const char* name : {"ready", "rejected", "once"}) {
    REQUIRE(fleet.WaitPhase("team-a", name, {"Admitted"}, seconds(30)));
    CHECK(fleet.Job("team-a", name)["status"].value("cluster", "") == "c1");
  }

  // The lease holds on quota alone: the copy's check is Pending, the real
  // job is there, suspended, and has not run.
  const std::string uid = fleet.Uid("team-a", "ready"), remote = RemoteName("ready", uid);
  REQUIRE(PollFor([&] {
    return fleet.RemoteGet("c1", RemoteJobPath("team-a", remote)).status == 200;
  }, seconds(10)));
  json wl = RemoteWorkload(fleet, "c1", remote);
  CHECK(Cond(wl, "QuotaReserved") == "True");
  CHECK(Cond(wl, "Admitted") == "False");
  CHECK(wl["status"]["admissionChecks"][0]["state"] == "Pending");
  CHECK(fleet.RemoteGet("c1", RemoteJobPath("team-a", remote)).body["spec"]["suspend"] == true);
  CHECK(fleet.Runs(uid).empty());
  CHECK(fleet.Phase("team-a", "ready") == "Admitted");

  const int64_t ready_at = NowMs();
  ReadyThenSucceededOnce(fleet, "ready", remote, "c1", 1);
  CHECK(fleet.Runs(uid).at(0).value("startMs", int64_t{0}) >= ready_at);

  // Rejected on the owner before it admitted: Kueue deactivates the copy, as
  // an eviction would. A Requeue job is dispatched again at epoch 2 and runs
  // once; an at-most-once job fails, having never run.
  const std::string rejected_uid = fleet.Uid("team-a", "rejected"), rejected = RemoteName("rejected", rejected_uid);
  const std::string once_uid = fleet.Uid("team-a", "once"), once = RemoteName("once", once_uid);
  SetCheck(fleet, "c1", rejected, "Rejected");
  SetCheck(fleet, "c1", once, "Rejected");
  REQUIRE(PollFor([&] { return Epoch(fleet, "rejected") == 2; }, seconds(20)));
  REQUIRE(fleet.WaitPhase("team-a", "once", {"Failed", "Succeeded"}, seconds(20)));
  CHECK(fleet.Phase("team-a", "once") == "Failed");
  CHECK_THAT(fleet.Job("team-a", "once")["status"].value("message", ""),
             Catch::Contains("DeactivatedDueToAdmissionCheck") && Catch::Contains("at-most-once"));
  CHECK(fleet.Runs(once_uid).empty());

  REQUIRE(fleet.WaitPhase("team-a", "rejected", {"Admitted"}, seconds(20)));
  REQUIRE(PollFor([&] { return Reserved(fleet, "c1", rejected, 2); }, seconds(10)));
  ReadyThenSucceededOnce(fleet, "rejected", rejected, "c1", 2);
  std::vector<std::string> reasons = Reasons(fleet, "team-a", "rejected");
  INFO(fmt::format("events: {}", fmt::join(reasons, ", ")));
  CHECK(Count(reasons, "Evicted") == 1);
  CHECK(Count(reasons, "LeaseTaken") == 2);
}

// Whether the job's real job row in cluster says its create was confirmed.
bool CreateConfirmed(DispatchFleet& fleet, const std::string& name, const std::string& cluster) {
  for (const json& row : fleet.RemoteObjects("team-a", name)) {
    if (row.value("cluster", "") == cluster && row.value("kind", "") == "Job" && row.contains("createConfirmed")) {
      return true;
    }
  }
  return false;
}

TEST_CASE("a real job deleted in its owner while the daemon is down, before it was seen running: an at-most-once job "
          "fails as JobGone and is not created again, a Requeue job's is",
          "[e2e][dispatch][checks][recovery]") {
  // leaseOn QuotaReserved with the check held: the real jobs are created
  // and wait, suspended, which leaves the moment before Running wide open.
  DispatchFleet fleet(Fleet("clusters:\n- {name: c1, admissionChecks: [{name: provisioning, outcome: Pending}]}\n",
                            "leaseOn: QuotaReserved\nnotFoundConfirmsAfterSeconds: 1"));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("once", "team-a", 1, 0, "500ms", "  onClusterLoss: Fail")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("again", "team-a", 1, 0, "500ms")) == 201);
  const std::string once_uid = fleet.Uid("team-a", "once"), once = RemoteName("once", once_uid);
  const std::string again_uid = fleet.Uid("team-a", "again"), again = RemoteName("again", again_uid);
  for (const std::string& remote : {once, again}) {
    REQUIRE(PollFor([&] { return fleet.RemoteGet("c1", RemoteJobPath("team-a", remote)).status == 200; },
                    seconds(30)));
  }
  // The at-most-once job's create is on record; the Requeue job's is not
  // written (it may be created again anyway).
  REQUIRE(PollFor([&] { return CreateConfirmed(fleet, "once", "c1"); }, seconds(10)));
  CHECK_FALSE(CreateConfirmed(fleet, "again", "c1"));
  CHECK(fleet.Phase("team-a", "once") == "Admitted");

  fleet.StopDaemon(/*kill=*/true);
  auto client = fleet.RemoteClient("c1");
  REQUIRE(client);
  for (const std::string& remote : {once, again}) {
    kube::DeleteOptions background;
    background.propagation_policy = "Background";
    auto deleted = client->Delete(RemoteJobPath("team-a", remote), background);
    REQUIRE(deleted.ok());
    REQUIRE(deleted->ok());
  }
  fleet.StartDaemon();
  REQUIRE(fleet.ok());

  // Not before the create is 40 s old, however short notFoundConfirmsAfter:
  // a silent watch stream is found dead only then, and until then its view
  // would not show a job that is there.
  REQUIRE(fleet.WaitPhase("team-a", "once", {"Failed", "Succeeded"}, seconds(75)));
  CHECK(fleet.Phase("team-a", "once") == "Failed");
  CHECK_THAT(fleet.Job("team-a", "once")["status"].value("message", ""),
             Catch::Contains("before it was seen running") && Catch::Contains("at-most-once"));
  CHECK(Count(Reasons(fleet, "team-a", "once"), "JobGone") == 1);
  // Not created again: its copy goes too, and nothing of it ran.
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", once); }, seconds(20)));
  CHECK(fleet.RemoteGet("c1", RemoteJobPath("team-a", once)).status == 404);
  CHECK(fleet.Runs(once_uid).empty());

  // The Requeue job's is created again, and runs once its check is Ready.
  REQUIRE(PollFor([&] { return fleet.RemoteGet("c1", RemoteJobPath("team-a", again)).status == 200; }, seconds(30)));
  ReadyThenSucceededOnce(fleet, "again", again, "c1", 1);
}

TEST_CASE("leaseOn Admitted: a copy holding quota with a check Pending does not take the lease, the cluster that "
          "admits does",
          "[e2e][dispatch][checks]") {
  DispatchFleet fleet(Fleet(kHeldChecks));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // Both copies hold quota, c1's first by name: not enough for the lease.
  const std::string remote = SubmitHeldInBoth(fleet, "slow-c1");
  CHECK(fleet.Phase("team-a", "slow-c1") == "Nominating");

  ReadyThenSucceededOnce(fleet, "slow-c1", remote, "c2", 1);
  // The loser's copy, quota and all, is withdrawn.
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", remote); }, seconds(20)));
}

TEST_CASE("a check's Retry before the lease only delays that copy: evicted, given quota again, then admitted there",
          "[e2e][dispatch][checks]") {
  DispatchFleet fleet(Fleet(kHeldChecks));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string remote = SubmitHeldInBoth(fleet, "retried");
  SetCheck(fleet, "c1", remote, "Retry");
  // Kueue evicts c1's copy and queues it again: it holds quota anew, its
  // check back to Pending after one retry.
  REQUIRE(PollFor([&] {
    const json wl = RemoteWorkload(fleet, "c1", remote);
    const json* checks = JsonAt(wl, {"status", "admissionChecks"});
    return checks && checks->is_array() && checks->at(0).value("retryCount", 0) == 1 &&
           Reserved(fleet, "c1", remote, 1);
  }, seconds(10)));
  CHECK(fleet.Phase("team-a", "retried") == "Nominating");
  ReadyThenSucceededOnce(fleet, "retried", remote, "c1", 1);
}

TEST_CASE("an at-most-once job its worker evicted and started over while no daemon ran fails once seen, "
          "its second run stopped",
          "[e2e][dispatch][checks][evict]") {
  DispatchFleet fleet(Fleet(kHeldChecks));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("unseen", "team-a", 1, 0, "60s",
                                            "  onClusterLoss: Fail\n  placement: {clusters: [c1]}")) == 201);
  const std::string uid = fleet.Uid("team-a", "unseen");
  const std::string remote = RemoteName("unseen", uid);
  REQUIRE(PollFor([&] { return Reserved(fleet, "c1", remote, 1); }, seconds(20)));
  SetCheck(fleet, "c1", remote, "Ready");
  REQUIRE(fleet.WaitPhase("team-a", "unseen", {"Running"}, seconds(30)));
  REQUIRE(fleet.Runs(uid).size() == 1);

  // With the daemon down, c1's check turns Retry: Kueue evicts the
  // Workload, queues it again and, its check Ready once more, admits it
  // again (Evicted back to False); the job starts over. Nothing on the
  // worker prevents the second run.
  fleet.StopDaemon(false);
  SetCheck(fleet, "c1", remote, "Retry");
  REQUIRE(PollFor([&] { return Reserved(fleet, "c1", remote, 1); }, seconds(20)));
  SetCheck(fleet, "c1", remote, "Ready");
  REQUIRE(PollFor([&] { return fleet.Runs(uid).size() == 2; }, seconds(20)));

  // Back, gantry sees the eviction it missed: the job fails, and the run
  // started over is stopped rather than left to finish.
  fleet.StartDaemon();
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitPhase("team-a", "unseen", {"Failed", "Succeeded"}, seconds(30)));
  json job = fleet.Job("team-a", "unseen");
  CHECK(job["status"]["phase"] == "Failed");
  CHECK_THAT(job["status"].value("message", ""), Catch::Contains("admitted it again"));
  CHECK(Count(Reasons(fleet, "team-a", "unseen"), "Evicted") == 1);
  CHECK(PollFor([&] {
    std::vector<json> runs = fleet.Runs(uid);
    return runs.size() == 2 && StoppedByDelete(runs[1]);
  }, seconds(20)));
}

TEST_CASE("a check Rejected in every cluster dispatches the job again, and it runs once where a check passes",
          "[e2e][dispatch][checks]") {
  DispatchFleet fleet(Fleet(kHeldChecks, kShortRejectionFloor));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string remote = SubmitHeldInBoth(fleet, "rejected");

  // c1 rejects it: the job waits on c2's copy.
  SetCheck(fleet, "c1", remote, "Rejected");
  REQUIRE(PollFor([&] { return Deactivated(fleet, "c1", remote); }, seconds(10)));
  CHECK(fleet.Phase("team-a", "rejected") == "Nominating");
  CHECK(Epoch(fleet, "rejected") == 1);

  // c2 rejects it too: nothing is left to wait for, so it is dispatched
  // again at epoch 2, to both clusters, once epoch 1 is as old as the floor
  // (rejectionBackoffSeconds, 1 s here: a check that always rejects at once
  // does not start an epoch on every pass).
  SetCheck(fleet, "c2", remote, "Rejected");
  REQUIRE(PollFor([&] { return Reserved(fleet, "c1", remote, 2) && Reserved(fleet, "c2", remote, 2); },
                  seconds(20)));
  CHECK(Epoch(fleet, "rejected") == 2);
  ReadyThenSucceededOnce(fleet, "rejected", remote, "c2", 2);
  std::vector<std::string> reasons = Reasons(fleet, "team-a", "rejected");
  INFO(fmt::format("events: {}", fmt::join(reasons, ", ")));
  CHECK(Count(reasons, "Deactivated") == 1);
  CHECK(Count(reasons, "Nominated") == 2);
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", remote); }, seconds(20)));
}

TEST_CASE("Incremental: the best cluster rejecting the job hands it to the next at once, not a round later",
          "[e2e][dispatch][checks]") {
  // c1 rejects every copy as soon as it has quota; c2 has no checks, and
  // less room, so c1 ranks first.
  DispatchFleet fleet(Fleet(R"(clusters:
- {name: c1, nodes: 8, admissionChecks: [{name: provisioning, outcome: Rejected}]}
- {name: c2, nodes: 2}
)"));
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // One cluster a round, and the next round far away: c1 gets the only copy.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("step", "team-a", 1, 0, "500ms",
                                            "  dispatch: {mode: Incremental, stepSize: 1, roundSeconds: 600}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "step", {"Succeeded", "Failed"}, seconds(30)));
  CheckSucceededOnce(fleet, "step", "c2", 1);
  std::vector<std::string> reasons = Reasons(fleet, "team-a", "step");
  INFO(fmt::format("events: {}", fmt::join(reasons, ", ")));
  CHECK(Count(reasons, "Widened") == 1);
  std::vector<json> events = fleet.Events("team-a", "step");
  auto nominated = std::find_if(events.begin(), events.end(), [](const json& e) { return e["reason"] == "Nominated"; });
  REQUIRE(nominated != events.end());
  CHECK_THAT(nominated->value("message", ""), Catch::EndsWith("copies to c1; later rounds: c2"));
}

}  // namespace gantry::testing
