// Recovery end to end: an owner cluster partitioned away (onClusterLoss
// Requeue, Fail and Wait), a daemon SIGKILLed again and again while jobs
// flow, and a worker evicting a running job. The simulator's journal is the
// oracle: a job never runs twice at once, an at-most-once job (Fail, Wait)
// runs at most once, and nothing the API acknowledged is lost.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include "dispatch_fixture.h"
#include "gantry/http/client.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

const char* kTwoClusters = R"(clusters:
- {name: c1}
- {name: c2}
)";

// Short enough for a test, long enough that one slow probe is not a loss.
const char* kFastLoss = "clusterLostTimeoutSeconds: 3";
constexpr seconds kLostTimeout{3};

bool HasCondition(const json& job, const std::string& type) {
  if (!job.is_object()) return false;
  for (const json& c : job["status"].value("conditions", json::array())) {
    if (c.value("type", "") == type) return true;
  }
  return false;
}

// The cluster's token, as gantry reads it, is revoked: its kubeconfig gets a
// wrong one and the inventory is reloaded. Returns the file as it was.
std::string RevokeToken(DispatchFleet& fleet, const std::string& cluster) {
  const std::string path = fleet.sim_dir() + "/" + cluster + ".kubeconfig";
  const std::string good = ReadFile(path);
  const auto at = good.find("token: ");
  REQUIRE(at != std::string::npos);
  WriteFile(path, good.substr(0, at) + "token: revoked-token-0123456789" + good.substr(good.find('\n', at)));
  REQUIRE(fleet.ReloadClusters() == 200);
  return good;
}

void RestoreKubeconfig(DispatchFleet& fleet, const std::string& cluster, const std::string& text) {
  WriteFile(fleet.sim_dir() + "/" + cluster + ".kubeconfig", text);
  REQUIRE(fleet.ReloadClusters() == 200);
}

}  // namespace

TEST_CASE("owner partitioned: a Requeue job runs again elsewhere at epoch 2, its zombie is deleted on heal",
          "[e2e][recovery][partition]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("mover", "team-a", 1, 0, "", "  onClusterLoss: Requeue")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Running"}, seconds(30)));
  json job = fleet.Job("team-a", "mover");
  REQUIRE(job["status"].value("cluster", "") == "c1");
  REQUIRE(job["status"]["epoch"] == 1);
  const std::string uid = job["metadata"]["uid"];
  const std::string remote = RemoteName("mover", uid);

  // Mode 1: c1's apiserver is down; its job keeps running (workers are autonomous).
  const auto partitioned = std::chrono::steady_clock::now();
  REQUIRE(fleet.Ctl({"partition", "c1", "1"}).code == 0);
  REQUIRE(PollFor([&] {
    json j = fleet.Job("team-a", "mover");
    return j.is_object() && j["status"]["epoch"] == 2 && j["status"].value("cluster", "") == "c2" &&
           (j["status"]["phase"] == "Running" || j["status"]["phase"] == "Succeeded");
  }, seconds(45)));
  CHECK(std::chrono::steady_clock::now() - partitioned >= kLostTimeout);  // not before the timeout
  std::vector<std::string> reasons = Reasons(fleet, "team-a", "mover");
  CHECK(Count(reasons, "ClusterLost") == 1);
  CHECK(Count(reasons, "LeaseTaken") == 2);
  // The zombie: the epoch-1 run in c1 has not ended, nobody could tell it to.
  std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  REQUIRE(!runs.empty());
  REQUIRE(runs[0].value("cluster", "") == "c1");
  REQUIRE(runs[0].value("epoch", "") == "1");
  REQUIRE(!runs[0].contains("endMs"));

  // Healed: the fenced epoch-1 objects are deleted as soon as c1 answers.
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  CHECK(PollFor([&] {
    auto r = fleet.Runs(uid);
    return !r.empty() && StoppedByDelete(r[0]);
  }, seconds(60), milliseconds(250)));
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", remote); }, seconds(20), milliseconds(250)));

  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Succeeded", "Failed"}, seconds(30)));
  job = fleet.Job("team-a", "mover");
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["epoch"] == 2);
  CHECK(job["status"].value("cluster", "") == "c2");
  runs = fleet.Runs(uid);
  INFO(Describe(runs));
  REQUIRE(runs.size() == 2);
  CHECK(StoppedByDelete(runs[0]));
  CHECK(runs[1].value("cluster", "") == "c2");
  CHECK(runs[1].value("epoch", "") == "2");
  CHECK(runs[1].value("endReason", "") == "Succeeded");
  CHECK(!runs[1].value("atMostOnce", true));
  CHECK(PollFor([&] { return RemoteGone(fleet, "c2", "team-a", remote); }, seconds(20), milliseconds(250)));
}

TEST_CASE("an owner refusing gantry's credentials is not lost at clusterLostTimeout: its job runs on there, not moved",
          "[e2e][recovery][credentials]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoClusters;
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // "steady" runs in c1; "witness", in c2, shows when clusterLostTimeout has passed.
  REQUIRE(fleet.Submit("team-a", SimJobYaml("steady", "team-a", 1, 0, "10s",
                                            "  onClusterLoss: Requeue\n  placement: {clusters: [c1]}")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("witness", "team-a", 1, 0, "60s",
                                            "  onClusterLoss: Requeue\n  placement: {clusters: [c2]}")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "steady", {"Running"}, seconds(30)));
  REQUIRE(fleet.WaitPhase("team-a", "witness", {"Running"}, seconds(30)));
  const std::string uid = fleet.Uid("team-a", "steady");

  // c1's token is revoked (here: the operator's kubeconfig now holds a wrong one).
  const std::string good = RevokeToken(fleet, "c1");
  REQUIRE(PollFor([&] { return HasCondition(fleet.Job("team-a", "steady"), "OwnerUnreachable"); }, seconds(20)));
  CHECK(Count(Reasons(fleet, "team-a", "steady"), "CredentialsRefused") == 1);
  // The refusal's details are the operator's (gantry clusters), not on the job.
  CHECK(fleet.Job("team-a", "steady")["status"].value("message", "").find("401") == std::string::npos);
  // NotReady at its second refused probe in a row (probeFailureThreshold),
  // a second after the first; its watches' refusals may tell the job first.
  RunResult clusters;
  CHECK(PollFor([&] {
    clusters = Cli(fleet.url(), {"clusters"});
    return clusters.out.find("NotReady,CredentialsRefused") != std::string::npos;
  }, seconds(10)));
  CHECK(clusters.out.find("revoked-token") == std::string::npos);
  auto client = http::Client::Create(fleet.url());
  REQUIRE(client.ok());
  auto metrics = (*client)->Do("GET", "/metrics");
  REQUIRE(metrics.ok());
  CHECK_THAT(metrics->body, Catch::Contains(R"(gantry_cluster_credentials_refused{cluster="c1"} 1)"));
  CHECK_THAT(metrics->body, Catch::Contains(R"(gantry_cluster_ready{cluster="c1"} 0)"));
  CHECK_THAT(metrics->body, Catch::Contains(R"(gantry_cluster_ready{cluster="c2"} 1)"));

  // c2 goes down: once its job is requeued, the timeout has passed for c1 too.
  REQUIRE(fleet.Ctl({"partition", "c2", "1"}).code == 0);
  REQUIRE(PollFor([&] { return Count(Reasons(fleet, "team-a", "witness"), "ClusterLost") == 1; }, seconds(45)));
  json steady = fleet.Job("team-a", "steady");
  CHECK(steady["status"]["phase"] == "Running");
  CHECK(steady["status"]["epoch"] == 1);
  CHECK(steady["status"].value("cluster", "") == "c1");
  CHECK(Count(Reasons(fleet, "team-a", "steady"), "ClusterLost") == 0);

  // The token works again: the job is seen to finish where it ran, once.
  RestoreKubeconfig(fleet, "c1", good);
  REQUIRE(fleet.WaitPhase("team-a", "steady", {"Succeeded", "Failed"}, seconds(30)));
  steady = fleet.Job("team-a", "steady");
  CHECK(steady["status"]["phase"] == "Succeeded");
  CHECK(steady["status"]["epoch"] == 1);
  CHECK_FALSE(HasCondition(steady, "OwnerUnreachable"));
  std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].value("cluster", "") == "c1");
  CHECK(runs[0].value("endReason", "") == "Succeeded");
  REQUIRE(fleet.Ctl({"heal", "c2"}).code == 0);
}

TEST_CASE("an owner refusing gantry's credentials past credentialsRefusedTimeoutSeconds is lost: Requeue moves the job",
          "[e2e][recovery][credentials]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kSlowThenFast;  // c1 runs it a minute; c2 admits after 2 s, runs it in 3 s
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 600\ncredentialsRefusedTimeoutSeconds: 2";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("mover", "team-a", 1, 0, "", "  onClusterLoss: Requeue")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Running"}, seconds(30)));
  REQUIRE(fleet.Job("team-a", "mover")["status"].value("cluster", "") == "c1");
  const std::string uid = fleet.Uid("team-a", "mover");

  const auto revoked = std::chrono::steady_clock::now();
  const std::string good = RevokeToken(fleet, "c1");
  REQUIRE(PollFor([&] {
    json j = fleet.Job("team-a", "mover");
    return j.is_object() && j["status"]["epoch"] == 2 && j["status"].value("cluster", "") == "c2";
  }, seconds(30)));
  CHECK(std::chrono::steady_clock::now() - revoked >= seconds(2));  // not before its timeout
  bool said = false;
  for (auto& e : fleet.Events("team-a", "mover")) {
    said |= e.value("reason", "") == "ClusterLost" &&
            e.value("message", "").find("has refused gantry's credentials") != std::string::npos;
  }
  CHECK(said);

  // The credentials work again: the epoch-1 run in c1 is fenced.
  RestoreKubeconfig(fleet, "c1", good);
  CHECK(PollFor([&] {
    auto r = fleet.Runs(uid);
    return !r.empty() && StoppedByDelete(r[0]);
  }, seconds(30), milliseconds(250)));
  REQUIRE(fleet.WaitPhase("team-a", "mover", {"Succeeded", "Failed"}, seconds(30)));
  CHECK(fleet.Job("team-a", "mover")["status"]["phase"] == "Succeeded");
  std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].value("cluster", "") == "c2");
}

TEST_CASE("owner partitioned: a Fail job fails after the timeout, a Wait job waits and finishes, neither runs twice",
          "[e2e][recovery][partition]") {
  // 1: c1's apiserver is down. 2: it is up but every request from the daemon
  // stalls until heal (only the daemon's network path is cut).
  const int mode = GENERATE(1, 2);
  INFO("partition mode " << mode);
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoClusters;
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string pin = "  placement: {clusters: [c1]}\n";
  // The waiter outlives the partition: it is still running when c1 returns, even on a
  // loaded machine (the failer fails after 3 s, and the waiter is flagged within a few more).
  REQUIRE(fleet.Submit("team-a", SimJobYaml("waiter", "team-a", 1, 0, "30s", pin + "  onClusterLoss: Wait")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("failer", "team-a", 1, 0, "90s", pin + "  onClusterLoss: Fail")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "waiter", {"Running"}, seconds(30)));
  REQUIRE(fleet.WaitPhase("team-a", "failer", {"Running"}, seconds(30)));
  const std::string waiter = fleet.Uid("team-a", "waiter");
  const std::string failer = fleet.Uid("team-a", "failer");

  const auto partitioned = std::chrono::steady_clock::now();
  REQUIRE(fleet.Ctl({"partition", "c1", std::to_string(mode)}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "failer", {"Failed", "Succeeded"}, seconds(30)));
  CHECK(std::chrono::steady_clock::now() - partitioned >= kLostTimeout);  // not before the timeout
  json failed = fleet.Job("team-a", "failer");
  CHECK(failed["status"]["phase"] == "Failed");
  CHECK_THAT(failed["status"].value("message", ""), Catch::Contains("onClusterLoss is Fail"));
  CHECK(Count(Reasons(fleet, "team-a", "failer"), "ClusterLost") == 1);
  // The waiter stays with its owner, flagged.
  REQUIRE(PollFor([&] { return HasCondition(fleet.Job("team-a", "waiter"), "OwnerUnreachable"); }, seconds(15)));
  json waiting = fleet.Job("team-a", "waiter");
  CHECK(waiting["status"]["phase"] == "Running");
  CHECK(waiting["status"]["epoch"] == 1);
  CHECK(waiting["status"].value("cluster", "") == "c1");
  CHECK(Count(Reasons(fleet, "team-a", "waiter"), "ClusterLost") == 1);
  // Both keep running in c1 meanwhile: the worker does not need gantry.
  for (const std::string& uid : {waiter, failer}) {
    auto runs = fleet.Runs(uid);
    INFO(Describe(runs));
    REQUIRE(runs.size() == 1);
    CHECK(!runs[0].contains("endMs"));
    CHECK(runs[0].value("atMostOnce", false));
  }

  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  // The failed job's run is stopped (its objects deleted) once c1 answers ...
  CHECK(PollFor([&] {
    auto r = fleet.Runs(failer);
    return r.size() == 1 && StoppedByDelete(r[0]);
  }, seconds(60), milliseconds(250)));
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("failer", failer)); }, seconds(20),
                milliseconds(250)));
  // ... and the waiter carries on where it was, unflagged, and finishes, once.
  CHECK(PollFor([&] {
    json j = fleet.Job("team-a", "waiter");
    return j.is_object() && !HasCondition(j, "OwnerUnreachable");
  }, seconds(40)));
  CHECK(Count(Reasons(fleet, "team-a", "waiter"), "ClusterReturned") == 1);
  REQUIRE(fleet.WaitPhase("team-a", "waiter", {"Succeeded", "Failed"}, seconds(60)));
  json done = fleet.Job("team-a", "waiter");
  CHECK(done["status"]["phase"] == "Succeeded");
  CHECK(done["status"]["epoch"] == 1);
  CHECK(done["status"].value("cluster", "") == "c1");
  CHECK(!HasCondition(done, "OwnerUnreachable"));
  CHECK(Count(Reasons(fleet, "team-a", "waiter"), "LeaseTaken") == 1);
  CHECK(Count(Reasons(fleet, "team-a", "failer"), "LeaseTaken") == 1);
  auto runs = fleet.Runs(waiter);
  INFO(Describe(runs));
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].value("endReason", "") == "Succeeded");
  CHECK(fleet.Runs(failer).size() == 1);
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out);
  CHECK(check.code == 0);
}

namespace {

// Submits `jobs` jobs while SIGKILLing the daemon `kills` times at random
// moments, then checks that every acknowledged job finished Succeeded, once.
void CrashCampaign(int jobs, int kills, milliseconds max_gap, seconds converge) {
  DispatchFleet fleet;
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  std::mutex mu;  // guards url (RestartDaemon replaces the daemon) and what the submitter records
  std::string url = fleet.url();
  std::map<std::string, std::string> acked;  // job name -> uid from the 201/200 answer
  std::vector<std::string> submit_errors;
  std::atomic<int> kills_done{0};
  const int per_wave = (jobs + kills - 1) / kills;

  // Submits wave k after kill k-1, so submissions, passes and kills overlap.
  std::thread submitter([&] {
    for (int i = 0; i < jobs; ++i) {
      WaitFor([&] { return kills_done >= i / per_wave; }, seconds(120));
      std::string name = fmt::format("crash-{}", i);
      std::string extra = i % 2 ? "  onClusterLoss: Fail" : "";
      std::string yaml = SimJobYaml(name, "team-a", 1, 0, fmt::format("{}ms", 200 + (i * 37) % 800), extra);
      int last_status = -1;
      std::optional<std::string> uid = SubmitAcked([&] {
        std::lock_guard lock(mu);
        return url;
      }, "team-a", yaml, seconds(60), &last_status);
      std::lock_guard lock(mu);
      if (uid) {
        acked[name] = *uid;
      } else {
        submit_errors.push_back(fmt::format("{}: not acknowledged, last HTTP status {}", name, last_status));
      }
    }
  });

  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> gap(0, static_cast<int>(max_gap.count()));
  bool restarted = true;
  for (int k = 0; k < kills && restarted; ++k) {
    // The chaos driver: a random moment, not a wait for a condition.
    std::this_thread::sleep_for(milliseconds(gap(rng)));
    std::lock_guard lock(mu);
    fleet.RestartDaemon(true);
    restarted = fleet.ok();
    if (restarted) url = fleet.url();
    ++kills_done;
  }
  if (!restarted) kills_done = kills;  // release the submitter
  submitter.join();
  REQUIRE(restarted);
  INFO(fmt::format("{} submissions not acknowledged", submit_errors.size()));
  for (const auto& e : submit_errors) UNSCOPED_INFO(e);
  REQUIRE(submit_errors.empty());
  REQUIRE(static_cast<int>(acked.size()) == jobs);

  std::map<std::string, int> phases;
  bool all_done = PollFor([&] {
    phases = PhaseCounts(fleet, "team-a");
    return phases["Succeeded"] == jobs;
  }, converge, milliseconds(500));
  INFO("phases: " << Histogram(phases));
  CHECK(all_done);

  // Nothing acknowledged was lost: every job is there with the uid it was answered with.
  std::map<std::string, json> stored = JobsByName(fleet, "team-a");
  REQUIRE(!stored.empty());
  for (const auto& [name, uid] : acked) {
    INFO(name);
    REQUIRE(stored.count(name) == 1);
    CHECK(stored[name]["metadata"].value("uid", "") == uid);
    CHECK(stored[name]["status"].value("phase", "") == "Succeeded");
  }
  // None ran twice: one run per uid, and it succeeded.
  std::map<std::string, std::vector<json>> runs;
  for (auto& r : fleet.Journal()) runs[r.value("jobUid", "")].push_back(r);
  for (const auto& [name, uid] : acked) {
    INFO(name << " uid " << uid << "\n" << Describe(runs[uid]));
    CHECK(runs[uid].size() == 1);
    if (runs[uid].size() == 1) CHECK(runs[uid][0].value("endReason", "") == "Succeeded");
  }
  CHECK(runs.size() == acked.size());
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out);
  CHECK(check.code == 0);
}

// A job pinned to c1 (onClusterLoss on_loss) runs there; c1 is then cut off
// until gantry applies the loss, and the run goes on there and ends,
// unseen. Returns the job's uid ("" when a step failed).
std::string RunEndsWhileCutOff(DispatchFleet& fleet, const std::string& name, const std::string& on_loss,
                               const std::string& duration) {
  REQUIRE(fleet.Submit("team-a", SimJobYaml(name, "team-a", 1, 0, duration,
                                            "  placement: {clusters: [c1]}\n  onClusterLoss: " + on_loss)) == 201);
  REQUIRE(fleet.WaitPhase("team-a", name, {"Running"}, seconds(30)));
  const std::string uid = fleet.Uid("team-a", name);
  REQUIRE(fleet.Ctl({"partition", "c1", "2"}).code == 0);
  REQUIRE(PollFor([&] { return Count(Reasons(fleet, "team-a", name), "ClusterLost") == 1; }, seconds(30)));
  REQUIRE(PollFor([&] {
    auto runs = fleet.Runs(uid);
    return runs.size() == 1 && runs[0].contains("endMs");
  }, seconds(30), milliseconds(250)));
  return uid;
}

}  // namespace

TEST_CASE("owner partitioned: a Fail job whose run ended unseen says how it ended once its owner answers, and "
          "stays Failed",
          "[e2e][recovery][partition]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoClusters;
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  const std::string uid = RunEndsWhileCutOff(fleet, "unseen", "Fail", "8s");
  CHECK(fleet.Phase("team-a", "unseen") == "Failed");
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  REQUIRE(PollFor([&] { return Count(Reasons(fleet, "team-a", "unseen"), "RunEndedUnseen") == 1; }, seconds(30)));
  json job = fleet.Job("team-a", "unseen");
  CHECK(job["status"]["phase"] == "Failed");
  CHECK_THAT(job["status"].value("remote", ""), Catch::Contains("succeeded 1"));
  for (const json& e : fleet.Events("team-a", "unseen")) {
    if (e.value("reason", "") == "RunEndedUnseen") {
      CHECK_THAT(e.value("message", ""), Catch::Contains("succeeded there meanwhile"));
    }
  }
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("unseen", uid)); }, seconds(20),
                milliseconds(250)));
  CHECK(Count(Reasons(fleet, "team-a", "unseen"), "RunEndedUnseen") == 1);  // told once
  CHECK(fleet.Runs(uid).size() == 1);
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("owner partitioned: a Requeue job whose run succeeded unseen Succeeds once its owner answers, and is not "
          "run again",
          "[e2e][recovery][partition]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoClusters;
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  // Pinned to c1: sent back, it waits for c1 to answer again.
  const std::string uid = RunEndsWhileCutOff(fleet, "done", "Requeue", "6s");
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "done", {"Succeeded", "Failed"}, seconds(30)));
  json job = fleet.Job("team-a", "done");
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"].value("cluster", "") == "c1");
  // Seen while Queued (epoch 1), or once dispatched again before the relist
  // came (epoch 2): either way, not run again.
  CHECK((job["status"]["epoch"] == 1 || job["status"]["epoch"] == 2));
  CHECK_THAT(job["status"].value("message", ""), Catch::Contains("succeeded in c1 at epoch 1"));
  CHECK_THAT(job["status"].value("remote", ""), Catch::Contains("succeeded 1"));
  CHECK(Count(Reasons(fleet, "team-a", "done"), "Started") == 1);  // epoch 1's only
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("done", uid)); }, seconds(20),
                milliseconds(250)));
  const std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  std::string events;
  for (const json& e : fleet.Events("team-a", "done")) events += e.dump() + "\n";
  INFO(events);
  CHECK(runs.size() == 1);
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("owner partitioned: a Requeue job still running when its owner answers runs there again at epoch 2 only "
          "once its earlier run is gone: that run does not adopt the new copy and start over",
          "[e2e][recovery][partition]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoClusters;
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("again", "team-a", 1, 0, "25s",
                                            "  placement: {clusters: [c1]}\n  onClusterLoss: Requeue")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "again", {"Running"}, seconds(30)));
  const std::string uid = fleet.Uid("team-a", "again");
  REQUIRE(fleet.Ctl({"partition", "c1", "1"}).code == 0);
  REQUIRE(PollFor([&] { return Count(Reasons(fleet, "team-a", "again"), "ClusterLost") == 1; }, seconds(30)));
  // Back while its epoch-1 run still runs there: fenced, and the job
  // dispatched again to c1, its only cluster.
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "again", {"Succeeded", "Failed"}, seconds(60)));
  const json job = fleet.Job("team-a", "again");
  const std::vector<json> runs = fleet.Runs(uid);
  INFO(job.dump() << "\n" << Describe(runs));
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["epoch"] == 2);  // before, the run adopted epoch 2's copy: WorkloadGone, epoch 3
  CHECK(Count(Reasons(fleet, "team-a", "again"), "WorkloadGone") == 0);
  std::map<int, int> by_epoch;
  for (const json& r : runs) ++by_epoch[std::stoi(r.value("epoch", "0"))];
  CHECK(by_epoch == std::map<int, int>{{1, 1}, {2, 1}});
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("owner partitioned: a Requeue job's run that succeeded unseen after the job moved on is told when its "
          "owner answers: the job ran twice",
          "[e2e][recovery][partition]") {
  DispatchFleetOptions o;
  // c1 takes it first and runs it 5 s; c2 admits later and runs it a minute.
  o.sim_config_yaml = R"(clusters:
- {name: c1, jobDuration: 5s}
- {name: c2, jobDuration: 60s, admissionDelay: 2s}
)";
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("twice", "team-a", 1, 0, "", "  onClusterLoss: Requeue")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "twice", {"Running"}, seconds(30)));
  REQUIRE(fleet.Job("team-a", "twice")["status"].value("cluster", "") == "c1");
  const std::string uid = fleet.Uid("team-a", "twice");
  // Cut off as a network cut does it: gantry's requests held unanswered.
  REQUIRE(fleet.Ctl({"partition", "c1", "2"}).code == 0);
  // Moved on to c2, and its first run ended in c1 meanwhile, unseen.
  REQUIRE(PollFor([&] {
    json j = fleet.Job("team-a", "twice");
    return j.is_object() && j["status"]["epoch"] == 2 && j["status"].value("cluster", "") == "c2" &&
           j["status"]["phase"] == "Running";
  }, seconds(45)));
  REQUIRE(PollFor([&] {
    auto runs = fleet.Runs(uid);
    return !runs.empty() && runs[0].value("endReason", "") == "Succeeded";
  }, seconds(30), milliseconds(250)));
  CHECK(Count(Reasons(fleet, "team-a", "twice"), "EarlierRunEnded") == 0);
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  const auto healed = std::chrono::steady_clock::now();
  const bool told = PollFor([&] { return Count(Reasons(fleet, "team-a", "twice"), "EarlierRunEnded") == 1; },
                            seconds(30));
  std::string events;
  for (const json& e : fleet.Events("team-a", "twice")) events += e.dump() + "\n";
  INFO(events << Describe(fleet.Runs(uid)));
  REQUIRE(told);
  for (const json& e : fleet.Events("team-a", "twice")) {
    if (e.value("reason", "") != "EarlierRunEnded") continue;
    CHECK(e.value("cluster", "") == "c1");
    CHECK_THAT(e.value("message", ""), Catch::Contains("the run in c1 at epoch 1") &&
                                           Catch::Contains("succeeded there meanwhile") &&
                                           Catch::Contains("the job's run at epoch 2 in c2 goes on"));
  }
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("twice", uid)); }, seconds(20),
                milliseconds(250)));
  // Its rows in c1 go once c1's view is current again: its watches list
  // again after the heal, and the probe's return asks for no second relist
  // (which held the view behind until the streams' next end, a watch's 10 s
  // here), nor does the job wait for its 30 s backstop.
  const bool rows_gone = PollFor([&] {
    for (const json& r : fleet.RemoteObjects("team-a", "twice")) {
      if (r.value("cluster", "") == "c1") return false;
    }
    return true;
  }, seconds(20), milliseconds(250));
  const auto rows_gone_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - healed).count();
  INFO("rows in c1 gone " << rows_gone_ms << " ms after the heal");
  CHECK(rows_gone);
  CHECK(rows_gone_ms < 8000);
  json job = fleet.Job("team-a", "twice");
  CHECK(job["status"]["phase"] == "Running");  // its run in c2 goes on
  CHECK(Count(Reasons(fleet, "team-a", "twice"), "EarlierRunEnded") == 1);  // told once
  REQUIRE(Cli(fleet.url(), {"cancel", "twice", "-n", "team-a", "--wait"}).code == 0);
  CHECK(fleet.Ctl({"check"}).code == 0);
}

TEST_CASE("owner partitioned: a Requeue job that succeeded elsewhere before its first owner answers is told, when "
          "it does, that its first run succeeded there too",
          "[e2e][recovery][partition]") {
  DispatchFleetOptions o;
  // c1 takes it first and runs it 5 s; c2 admits later and runs it 3 s.
  o.sim_config_yaml = R"(clusters:
- {name: c1, jobDuration: 5s}
- {name: c2, jobDuration: 3s, admissionDelay: 2s}
)";
  o.daemon_config_yaml = kFastLoss;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("done-twice", "team-a", 1, 0, "", "  onClusterLoss: Requeue")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "done-twice", {"Running"}, seconds(30)));
  REQUIRE(fleet.Job("team-a", "done-twice")["status"].value("cluster", "") == "c1");
  const std::string uid = fleet.Uid("team-a", "done-twice");
  REQUIRE(fleet.Ctl({"partition", "c1", "2"}).code == 0);
  // Moved to c2 and finished there; its first run ended in c1 meanwhile, unseen.
  REQUIRE(fleet.WaitPhase("team-a", "done-twice", {"Succeeded", "Failed"}, seconds(60)));
  json done = fleet.Job("team-a", "done-twice");
  REQUIRE(done["status"]["phase"] == "Succeeded");
  REQUIRE(done["status"].value("cluster", "") == "c2");
  REQUIRE(PollFor([&] {
    auto runs = fleet.Runs(uid);
    return !runs.empty() && runs[0].value("endReason", "") == "Succeeded";
  }, seconds(30), milliseconds(250)));
  CHECK(Count(Reasons(fleet, "team-a", "done-twice"), "EarlierRunEnded") == 0);
  REQUIRE(fleet.Ctl({"heal", "c1"}).code == 0);
  const bool told =
      PollFor([&] { return Count(Reasons(fleet, "team-a", "done-twice"), "EarlierRunEnded") == 1; }, seconds(30));
  std::string events;
  for (const json& e : fleet.Events("team-a", "done-twice")) events += e.dump() + "\n";
  INFO(events << Describe(fleet.Runs(uid)));
  REQUIRE(told);
  for (const json& e : fleet.Events("team-a", "done-twice")) {
    if (e.value("reason", "") != "EarlierRunEnded") continue;
    CHECK(e.value("cluster", "") == "c1");
    CHECK_THAT(e.value("message", ""), Catch::Contains("the run in c1 at epoch 1") &&
                                           Catch::Contains("succeeded there meanwhile") &&
                                           Catch::Contains("the job had succeeded at epoch 2 in c2: it ran twice"));
  }
  CHECK(PollFor([&] { return RemoteGone(fleet, "c1", "team-a", RemoteName("done-twice", uid)); }, seconds(20),
                milliseconds(250)));
  CHECK(fleet.Phase("team-a", "done-twice") == "Succeeded");  // it stays as it ended
}

TEST_CASE("daemon SIGKILLed 20 times during 200 jobs: all succeed, none runs twice, nothing acknowledged is lost",
          "[e2e][recovery][crash]") {
  CrashCampaign(200, 20, milliseconds(1500), seconds(90));
}

TEST_CASE("long crash campaign (GANTRY_LONG_CAMPAIGN=1): 1000 jobs, 100 kills", "[e2e][recovery][crash][long]") {
  if (std::getenv("GANTRY_LONG_CAMPAIGN") == nullptr) {
    WARN("skipped: set GANTRY_LONG_CAMPAIGN=1 to run");
    return;
  }
  CrashCampaign(1000, 100, milliseconds(2000), seconds(300));
}

TEST_CASE("a job whose stored spec this gantry cannot read is left as it is, running where it runs, and says so",
          "[e2e][recovery]") {
  DispatchFleet fleet;
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("unreadable", "team-a", 1, 0, "120s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "unreadable", {"Running"}, seconds(30)));
  const json before = fleet.Job("team-a", "unreadable");
  const std::string cluster = before["status"].value("cluster", "");
  const std::string remote = dispatch::RemoteName("unreadable", fleet.Uid("team-a", "unreadable"));

  // As a newer release might have written it: a field this one does not know.
  fleet.StopDaemon(/*kill=*/false);
  {
    sqlite3* db = nullptr;
    const std::string path = fleet.dir().File("data") + "/gantry.db";
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(
        db, "UPDATE jobs SET spec_json = json_set(spec_json, '$.spec.fieldOfALaterRelease', 1) WHERE name = 'unreadable'",
        nullptr, nullptr, &err);
    INFO((err ? err : ""));
    CHECK(rc == SQLITE_OK);
    CHECK(sqlite3_changes(db) == 1);
    sqlite3_free(err);
    sqlite3_close(db);
  }
  fleet.StartDaemon();
  REQUIRE(fleet.ok());
  REQUIRE(PollFor([&] {
    return fleet.Job("team-a", "unreadable")["status"].value("message", "").find("cannot read the job's stored spec") !=
           std::string::npos;
  }, seconds(20)));
  const json after = fleet.Job("team-a", "unreadable");
  CHECK(after["status"]["phase"] == "Running");
  CHECK(after["status"]["epoch"] == before["status"]["epoch"]);
  // Its run goes on: nothing was deleted, nothing created elsewhere.
  CHECK(fleet.RemoteGet(cluster, RemoteJobPath("team-a", remote)).status == 200);
  CHECK(fleet.Runs(fleet.Uid("team-a", "unreadable")).size() == 1);
}

TEST_CASE("a worker evicts running jobs: one runs again at epoch 2 after its first run stopped, "
          "an at-most-once one fails",
          "[e2e][recovery][evict]") {
  DispatchFleetOptions o;
  o.sim_config_yaml = kTwoClusters;
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("evictee", "team-a", 1, 0, "8s")) == 201);
  REQUIRE(fleet.Submit("team-a", SimJobYaml("once", "team-a", 1, 0, "60s", "  onClusterLoss: Fail")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "once", {"Running"}, seconds(30)));
  REQUIRE(fleet.WaitPhase("team-a", "evictee", {"Running"}, seconds(30)));

  json job = fleet.Job("team-a", "evictee");
  const std::string uid = job["metadata"]["uid"];
  const std::string first = job["status"].value("cluster", "");
  REQUIRE(job["status"]["epoch"] == 1);
  const std::string remote = RemoteName("evictee", uid);

  REQUIRE(fleet.Ctl({"evict", first, "team-a/" + remote}).code == 0);

  // At most once: evicted after its lease, it may have run, so it is not dispatched again.
  const std::string once_uid = fleet.Uid("team-a", "once");
  {
    json once = fleet.Job("team-a", "once");
    REQUIRE(fleet.Ctl({"evict", once["status"].value("cluster", ""), "team-a/" + RemoteName("once", once_uid)}).code ==
            0);
    REQUIRE(fleet.WaitPhase("team-a", "once", {"Failed", "Succeeded", "Queued", "Nominating"}, seconds(20)));
    once = fleet.Job("team-a", "once");
    CHECK(once["status"]["phase"] == "Failed");
    CHECK(once["status"]["epoch"] == 1);
    CHECK_THAT(once["status"].value("message", ""), Catch::Contains("at-most-once"));
    std::vector<json> once_runs = fleet.Runs(once_uid);
    INFO(Describe(once_runs));
    REQUIRE(once_runs.size() == 1);
    CHECK(once_runs[0].value("endReason", "") == "Evicted");
  }

  REQUIRE(PollFor([&] {
    json j = fleet.Job("team-a", "evictee");
    return j.is_object() && j["status"]["epoch"] == 2;
  }, seconds(20)));
  REQUIRE(fleet.WaitPhase("team-a", "evictee", {"Succeeded", "Failed"}, seconds(40)));
  job = fleet.Job("team-a", "evictee");
  CHECK(job["status"]["phase"] == "Succeeded");
  CHECK(job["status"]["epoch"] == 2);

  std::vector<std::string> reasons = Reasons(fleet, "team-a", "evictee");
  INFO(fmt::format("events: {}", fmt::join(reasons, ", ")));
  auto evicted = std::find(reasons.begin(), reasons.end(), "Evicted");
  REQUIRE(evicted != reasons.end());
  // Requeued, then dispatched again: a second nomination and lease after the eviction.
  CHECK(Count({evicted, reasons.end()}, "Nominated") == 1);
  CHECK(Count({evicted, reasons.end()}, "LeaseTaken") == 1);
  CHECK(Count(reasons, "Started") == 2);
  CHECK(reasons.back() == "Succeeded");

  std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].value("cluster", "") == first);
  CHECK(runs[0].value("epoch", "") == "1");
  CHECK(runs[0].value("endReason", "") == "Evicted");
  CHECK(runs[1].value("epoch", "") == "2");
  CHECK(runs[1].value("endReason", "") == "Succeeded");
  CHECK(runs[1].value("startMs", int64_t{0}) >= runs[0].value("endMs", int64_t{1} << 62));
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out);
  CHECK(check.code == 0);
  CHECK(fleet.Runs(once_uid).size() == 1);
  // Finished: nothing of either is left in either cluster.
  const std::string once_remote = RemoteName("once", once_uid);
  CHECK(PollFor([&] {
    for (const char* c : {"c1", "c2"}) {
      if (!RemoteGone(fleet, c, "team-a", remote) || !RemoteGone(fleet, c, "team-a", once_remote)) return false;
    }
    return true;
  }, seconds(20), milliseconds(250)));
}

TEST_CASE("an evicted job whose pods take 8 s to stop runs again only once they have stopped",
          "[e2e][recovery][evict]") {
  // Kueue suspends an evicted job; its pods then stop over their grace
  // period. gantry deletes the old epoch's job in the foreground, so its
  // object stays until they are gone, and the next epoch's run waits for
  // that (deleted in the background, the object would go at once).
  DispatchFleetOptions o;
  o.sim_config_yaml = R"(clusters:
- {name: c1, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 2, terminationGrace: 8s}
- {name: c2, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 2, terminationGrace: 8s}
)";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("slow-stop", "team-a", 1, 1, "600s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "slow-stop", {"Running"}, seconds(30)));
  const std::string uid = fleet.Uid("team-a", "slow-stop");
  const std::string first = fleet.Job("team-a", "slow-stop")["status"].value("cluster", "");
  REQUIRE(fleet.Ctl({"evict", first, "team-a/" + RemoteName("slow-stop", uid)}).code == 0);

  REQUIRE(PollFor([&] {
    const json j = fleet.Job("team-a", "slow-stop");
    return j.is_object() && j["status"].value("epoch", 0) == 2 && j["status"].value("phase", "") == "Running";
  }, seconds(40)));
  REQUIRE(PollFor([&] { return fleet.Runs(uid).size() == 2; }, seconds(20)));
  const std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  CHECK(runs[0].value("cluster", "") == first);
  CHECK(runs[0].value("endReason", "") == "Evicted");
  CHECK(runs[0].value("endMs", int64_t{0}) - runs[0].value("startMs", int64_t{0}) > 0);
  CHECK(runs[1].value("epoch", "") == "2");
  CHECK(runs[1].value("startMs", int64_t{0}) >= runs[0].value("endMs", int64_t{1} << 62));
  const std::vector<std::string> reasons = Reasons(fleet, "team-a", "slow-stop");
  INFO(fmt::format("events: {}", fmt::join(reasons, ", ")));
  CHECK(std::find(reasons.begin(), reasons.end(), "WaitingForEarlierRun") != reasons.end());
  REQUIRE(Cli(fleet.url(), {"cancel", "slow-stop", "-n", "team-a"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "slow-stop", {"Cancelled"}, seconds(40)));
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("an evicted job whose pods outlast clusterLostTimeout in its only cluster waits for them there",
          "[e2e][recovery][evict]") {
  // One cluster: the evicted job still holds the name there while its pods
  // stop (a node gone NotReady keeps them far longer than a grace period).
  // No copy goes there meanwhile (the old run would take it, its label
  // naming the same Workload): the job waits, Queued, says why, and runs
  // at epoch 2 once the old object is gone, never twice at once. (Before,
  // it was leased there at once and waited on with the name held.)
  DispatchFleetOptions o;
  o.sim_config_yaml = R"(clusters:
- {name: c1, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 2, terminationGrace: 12s}
)";
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 2";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());
  REQUIRE(fleet.Submit("team-a", SimJobYaml("held-name", "team-a", 1, 1, "600s")) == 201);
  REQUIRE(fleet.WaitPhase("team-a", "held-name", {"Running"}, seconds(30)));
  const std::string uid = fleet.Uid("team-a", "held-name");
  REQUIRE(fleet.Ctl({"evict", "c1", "team-a/" + RemoteName("held-name", uid)}).code == 0);

  // Told why it waits.
  REQUIRE(PollFor([&] {
    const json j = fleet.Job("team-a", "held-name");
    return j.is_object() &&
           j["status"].value("message", "").find("its earlier run in c1 is not seen deleted") != std::string::npos;
  }, seconds(20)));
  const json waiting = fleet.Job("team-a", "held-name");
  CHECK(waiting["status"].value("phase", "") == "Queued");
  CHECK(fleet.Runs(uid).size() == 1);
  // gantry explain shows c1 held back by that run, and no candidate.
  RunResult explain = Cli(fleet.url(), {"explain", "held-name", "-n", "team-a", "-o", "json"});
  INFO(explain.out << explain.err);
  REQUIRE(explain.code == 0);
  const json decision = json::parse(explain.out, nullptr, false);
  REQUIRE(decision.is_object());
  bool held_back = false;
  for (const json& c : decision.value("clusters", json::array())) {
    if (c.value("name", "") == "c1") held_back = c.contains("earlierRun");
  }
  CHECK(held_back);
  CHECK(decision.value("candidates", json::array()).empty());

  REQUIRE(PollFor([&] {
    const json j = fleet.Job("team-a", "held-name");
    return j.is_object() && j["status"].value("epoch", 0) == 2 && j["status"].value("phase", "") == "Running";
  }, seconds(40)));
  REQUIRE(PollFor([&] { return fleet.Runs(uid).size() == 2; }, seconds(20)));
  const std::vector<json> runs = fleet.Runs(uid);
  INFO(Describe(runs));
  CHECK(runs[0].value("endReason", "") == "Evicted");
  CHECK(runs[1].value("epoch", "") == "2");
  CHECK(runs[1].value("startMs", int64_t{0}) >= runs[0].value("endMs", int64_t{1} << 62));
  const std::vector<std::string> reasons = Reasons(fleet, "team-a", "held-name");
  INFO(fmt::format("events: {}", fmt::join(reasons, ", ")));
  CHECK(std::count(reasons.begin(), reasons.end(), "LeaseTaken") == 2);  // epoch 2's only once the name was free
  // Its wait outlasted clusterLostTimeout (2 s): told once, as a Warning.
  CHECK(std::count(reasons.begin(), reasons.end(), "EarlierRunNotSeenDeleted") == 1);
  REQUIRE(Cli(fleet.url(), {"cancel", "held-name", "-n", "team-a"}).code == 0);
  REQUIRE(fleet.WaitPhase("team-a", "held-name", {"Cancelled"}, seconds(40)));
  RunResult check = fleet.Ctl({"check"});
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

}  // namespace gantry::testing
