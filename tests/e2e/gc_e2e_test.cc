// The garbage collector: objects with gantry's origin of a job the store
// purged are deleted; those of a job uid it never had (another gantry with
// the same origin, a database replaced) are left alone, and logged.
#include <catch2/catch.hpp>

#include "daemon_fixture.h"
#include "dispatch_fixture.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry::testing {
namespace {

const std::string kWorkloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";

// A Workload copy as gantry writes one (origin, job uid, epoch), of one
// 100m pod, that the cluster's Kueue queues.
nlohmann::json CopyOf(const std::string& name, const std::string& job_uid) {
  nlohmann::json container = {{"name", "c"}, {"image", "i"}};
  container["resources"]["requests"] = {{"cpu", "100m"}, {"memory", "128Mi"}};
  nlohmann::json w = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "Workload"}};
  w["metadata"] = {{"name", name},
                   {"namespace", "team-a"},
                   {"labels", {{"kueue.x-k8s.io/multikueue-origin", "gantry"}, {"gantry.dev/job-uid", job_uid}}},
                   {"annotations", {{"gantry.dev/epoch", "1"}}}};
  w["spec"]["queueName"] = "team-a";
  w["spec"]["podSets"] = nlohmann::json::array(
      {{{"name", "main"}, {"count", 1}, {"template", {{"spec", {{"containers", {container}}}}}}}});
  return w;
}

}  // namespace

TEST_CASE("the garbage collector deletes what a purged job left, and leaves a job this daemon never had",
          "[e2e][dispatch][gc]") {
  DispatchFleetOptions options;
  options.clusters = 1;
  options.daemon_config_yaml = "gcIntervalSeconds: 1\n";
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("short", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "short", {"Succeeded"}));
  const std::string uid = fleet.Uid("team-a", "short");
  REQUIRE(Cli(fleet.url(), {"cancel", "short", "-n", "team-a", "--purge"}).code == 0);
  REQUIRE(fleet.Job("team-a", "short").is_null());

  // A copy of the purged job left behind (a create that landed late), and
  // one of a job uid this daemon never had.
  auto client = fleet.RemoteClient("c1");
  REQUIRE(client);
  const std::string left = dispatch::RemoteName("short", uid);
  const std::string stranger_uid = "0f0f0f0f-0000-4000-8000-00000000beef";
  const std::string stranger = dispatch::RemoteName("theirs", stranger_uid);
  for (const auto& [name, job_uid] : {std::pair{left, uid}, std::pair{stranger, stranger_uid}}) {
    auto created = client->Create(kWorkloads, CopyOf(name, job_uid));
    REQUIRE(created.ok());
    REQUIRE(created->status == 201);
  }
  CHECK(PollFor([&] { return fleet.RemoteGet("c1", kWorkloads + "/" + left).status == 404; },
                std::chrono::seconds(20)));
  // The stranger is told once, then left: still there after that round.
  REQUIRE(PollFor([&] { return fleet.daemon().process().Stderr().find(stranger_uid) != std::string::npos; },
                  std::chrono::seconds(20)));
  CHECK(fleet.RemoteGet("c1", kWorkloads + "/" + stranger).status == 200);
  const std::string log = fleet.daemon().process().Stderr();
  CHECK(log.find("never had that job") != std::string::npos);
  CHECK(log.find("deleted 1 object(s) of purged job uid " + uid) != std::string::npos);
}

TEST_CASE("a finished job's record is deleted after jobRecordRetentionSeconds, never while its objects remain",
          "[e2e][dispatch][gc]") {
  DispatchFleetOptions options;
  options.clusters = 1;
  // The objects stay 6 s after the job finished, the record 2 s: it goes
  // only once they are seen deleted.
  options.daemon_config_yaml = "gcIntervalSeconds: 1\njobRecordRetentionSeconds: 2\nfinishedRetentionSeconds: 6\n";
  DispatchFleet fleet(options);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("long", "team-a", 1, 0, "600s")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("short", "team-a", 1, 0, "1s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "short", {"Succeeded"}));
  const auto succeeded_seen = std::chrono::steady_clock::now();
  const std::string remote = dispatch::RemoteName("short", fleet.Uid("team-a", "short"));
  REQUIRE_FALSE(RemoteGone(fleet, "c1", "team-a", remote));  // kept for kubectl

  // Gone no sooner than its objects' 6 s (the record's own 2 s and a round
  // would take it at 3 s), and they are gone by then.
  bool objects_gone_first = true;
  CHECK(PollFor(
      [&] {
        if (!fleet.Job("team-a", "short").is_null()) return false;
        objects_gone_first = RemoteGone(fleet, "c1", "team-a", remote);
        return true;
      },
      std::chrono::seconds(40)));
  CHECK(std::chrono::steady_clock::now() - succeeded_seen >= std::chrono::milliseconds(5'000));
  CHECK(objects_gone_first);
  CHECK(fleet.Events("team-a", "short").empty());
  CHECK_FALSE(fleet.Job("team-a", "long").is_null());  // not finished: kept
  const std::optional<std::string> metrics = fleet.Metrics();
  REQUIRE(metrics);
  CHECK_THAT(*metrics, Catch::Contains("gantry_job_records_expired_total 1"));
  CHECK_THAT(fleet.daemon().process().Stderr(),
             Catch::Contains("deleted the records of 1 job(s) finished more than 2 s"));
  // The name is free again.
  CHECK(fleet.Submit("team-a", SimJobYaml("short", "team-a", 1, 0, "1s")) == 201);
}

}  // namespace gantry::testing
