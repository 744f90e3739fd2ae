// A partition campaign: while jobs of every onClusterLoss flow through three
// clusters, one cluster at a time is cut off (its apiserver down, only the
// daemon's requests stalled, or an apiserver that stalls in the middle of a
// write it carries out: the answer lost, the watches silent) for a random
// time, shorter or longer than clusterLostTimeoutSeconds, and the daemon is
// SIGKILLed now and then. The
// simulator's journal is the oracle once everything has healed:
//   - every acknowledged job is stored and finished: Requeue and Wait jobs
//     Succeeded, Fail jobs Succeeded or Failed for their lost owner;
//   - an at-most-once job (Fail, Wait) ran at most once;
//   - no job ran twice at one epoch (one lease per epoch), and the run of
//     its final epoch is the one it reports, in the cluster it names;
//   - no run is left behind: every zombie of a requeued job was deleted
//     when its cluster came back, and no gantry object is left in any cluster.
// A Requeue job may run again at a new epoch while its zombie still runs in
// a cut-off cluster (that is what Requeue means; GANTRY_EPOCH lets the job
// fence itself), so `gantry-sim ctl check`'s overlap rule is not applied to it.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "dispatch_fixture.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

const char* kThreeClusters = R"(clusters:
- {name: c1}
- {name: c2}
- {name: c3}
)";

struct Campaign {
  int jobs = 0;
  int cuts = 0;             // partitions, one cluster at a time
  int kills = 0;            // daemon SIGKILLs, at random among the cuts
  milliseconds max_cut{0};  // a cut lasts 300 ms .. max_cut
  seconds converge{0};      // after the last heal, until every job is finished
};

const char* LossPolicy(int i) {
  static const char* kPolicies[] = {"Requeue", "Fail", "Wait"};
  return kPolicies[i % 3];
}

struct Tally {
  int moved = 0;          // jobs that finished at an epoch above 1
  int failed_lost = 0;    // Fail jobs failed for their lost owner
  int zombies = 0;        // runs of an older epoch that gantry stopped by deleting them
  int runs = 0;
};

void RunCampaign(const Campaign& c) {
  DispatchFleetOptions o;
  o.sim_config_yaml = kThreeClusters;
  o.daemon_config_yaml = "clusterLostTimeoutSeconds: 2";
  DispatchFleet fleet(o);
  REQUIRE(fleet.ok());
  REQUIRE(fleet.WaitClustersReady());

  // GANTRY_CAMPAIGN_SEED: the cuts and kills of an earlier run (its seed is
  // in a failure's messages) again; the timing still differs.
  const char* seed_env = std::getenv("GANTRY_CAMPAIGN_SEED");
  const unsigned seed = seed_env ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10)) : std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);

  std::mutex mu;  // guards url, acked and submit_errors
  std::string url = fleet.url();
  std::map<std::string, std::string> acked;  // name -> uid
  std::vector<std::string> submit_errors;
  std::atomic<int> cuts_done{0};
  const int per_wave = (c.jobs + c.cuts - 1) / c.cuts;

  // Wave k is submitted while cut k is on, so dispatch, leases and runs meet
  // every kind of cut.
  std::thread submitter([&] {
    for (int i = 0; i < c.jobs; ++i) {
      WaitFor([&] { return cuts_done >= i / per_wave; }, seconds(120));
      const std::string name = fmt::format("cut-{}", i);
      // One job in ten outlasts any cut (at most 4.5 s): a Requeue one whose
      // owner was cut past the timeout still runs there at the heal, so
      // fencing has a zombie to stop.
      const int run_ms = i % 10 == 0 ? 7000 : 500 + (i * 211) % 2500;
      const std::string yaml = SimJobYaml(name, "team-a", 1, 0, fmt::format("{}ms", run_ms),
                                          fmt::format("  onClusterLoss: {}", LossPolicy(i)));
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

  // The chaos driver: random moments and lengths, not waits for conditions.
  std::uniform_int_distribution<int> gap_ms(0, 800);
  std::uniform_int_distribution<int> cut_ms(300, static_cast<int>(c.max_cut.count()));
  std::uniform_int_distribution<int> pick(1, 3);
  int kills_left = c.kills;
  bool daemon_up = true, ctl_ok = true;
  for (int k = 0; k < c.cuts && daemon_up && ctl_ok; ++k) {
    std::this_thread::sleep_for(milliseconds(gap_ms(rng)));
    const std::string cluster = fmt::format("c{}", pick(rng));
    // 1: its apiserver down; 2: the daemon's requests stalled; 3: an
    // apiserver that stalls as it carries out the next write of one kind:
    // that write lands unanswered, and the watches go silent until the heal.
    const int kind = pick(rng);
    if (kind == 3) {
      static const char* kWrites[] = {"jobs:create", "workloads:create", "workloads:delete", "jobs:delete"};
      ctl_ok = fleet.Ctl({"lose-answer", cluster, kWrites[rng() % 4]}).code == 0;
    } else {
      ctl_ok = fleet.Ctl({"partition", cluster, std::to_string(kind)}).code == 0;
    }
    ++cuts_done;
    const milliseconds cut(cut_ms(rng));
    if (kills_left > 0 && static_cast<int>(rng() % c.cuts) < c.kills) {
      std::this_thread::sleep_for(cut / 2);
      std::lock_guard lock(mu);
      fleet.RestartDaemon(true);
      daemon_up = fleet.ok();
      if (daemon_up) url = fleet.url();
      --kills_left;
      std::this_thread::sleep_for(cut / 2);
    } else {
      std::this_thread::sleep_for(cut);
    }
    if (kind == 3) ctl_ok = fleet.Ctl({"lose-answer", cluster}).code == 0 && ctl_ok;  // if no such write came
    ctl_ok = fleet.Ctl({"heal", cluster}).code == 0 && ctl_ok;
    if (kind == 3) ctl_ok = fleet.Ctl({"hold-watches", cluster, "off"}).code == 0 && ctl_ok;
  }
  cuts_done = c.cuts;  // release the submitter whatever happened
  submitter.join();
  REQUIRE(daemon_up);
  REQUIRE(ctl_ok);
  INFO(fmt::format("{} submissions not acknowledged", submit_errors.size()));
  for (const auto& e : submit_errors) UNSCOPED_INFO(e);
  REQUIRE(submit_errors.empty());
  REQUIRE(static_cast<int>(acked.size()) == c.jobs);

  // Every job finishes once every cluster answers again.
  std::map<std::string, int> phases;
  bool all_final = PollFor([&] {
    phases = PhaseCounts(fleet, "team-a");
    return phases["Succeeded"] + phases["Failed"] == c.jobs;
  }, c.converge, milliseconds(500));
  INFO("phases: " << Histogram(phases));
  REQUIRE(all_final);

  // Every zombie is stopped: no run is still going once all jobs are final.
  std::map<std::string, std::vector<json>> runs;
  bool all_ended = PollFor([&] {
    runs.clear();
    bool ended = true;
    for (json& r : fleet.Journal()) {
      ended = ended && r.contains("endMs");
      runs[r.value("jobUid", "")].push_back(std::move(r));
    }
    return ended;
  }, seconds(60), milliseconds(500));

  std::map<std::string, json> stored = JobsByName(fleet, "team-a");
  REQUIRE(!stored.empty());
  Tally tally;
  for (int i = 0; i < c.jobs; ++i) {
    const std::string name = fmt::format("cut-{}", i);
    const std::string policy = LossPolicy(i);
    const std::string uid = acked[name];
    const std::vector<json>& mine = runs[uid];
    INFO(name << " (" << policy << ") uid " << uid << "\n" << Describe(mine));
    REQUIRE(stored.count(name) == 1);
    const json& status = stored[name]["status"];
    CHECK(stored[name]["metadata"].value("uid", "") == uid);
    const std::string phase = status.value("phase", "");
    // How it ended, and its story, when that is not Succeeded.
    std::string story;
    if (phase != "Succeeded") {
      for (const json& e : fleet.Events("team-a", name)) {
        story += fmt::format("\n  {} {}: {}", e.value("time", ""), e.value("reason", ""), e.value("message", ""));
      }
    }
    INFO("phase " << phase << ": " << status.value("message", "") << story);
    if (policy == "Fail" && phase == "Failed") {
      CHECK_THAT(status.value("message", ""), Catch::Contains("onClusterLoss is Fail"));
      ++tally.failed_lost;
    } else {
      CHECK(phase == "Succeeded");
    }
    if (policy != "Requeue") CHECK(mine.size() <= 1);
    // One lease per epoch: never two runs at the same epoch.
    std::set<std::string> epochs;
    for (const json& r : mine) CHECK(epochs.insert(r.value("epoch", "")).second);
    const int64_t epoch = status.value("epoch", int64_t{0});
    if (epoch > 1) ++tally.moved;
    tally.runs += static_cast<int>(mine.size());
    for (const json& r : mine) {
      if (r.value("epoch", "") != std::to_string(epoch)) tally.zombies += StoppedByDelete(r);
    }
    if (phase == "Succeeded") {
      // The run it reports is its final epoch's, in the cluster it names.
      const json* last = nullptr;
      for (const json& r : mine) {
        if (r.value("epoch", "") == std::to_string(epoch)) last = &r;
      }
      // Or an earlier run that succeeded out of sight before the job was run
      // again (Ladder::EarlierRunSucceeded): its message names its epoch.
      for (const json& r : mine) {
        const std::string told = fmt::format("at epoch {} while out of gantry's sight", r.value("epoch", ""));
        if (!last && status.value("message", "").find(told) != std::string::npos) last = &r;
      }
      INFO("message: " << status.value("message", ""));
      REQUIRE(last != nullptr);
      CHECK(last->value("cluster", "") == status.value("cluster", ""));
      CHECK(last->value("endReason", "") == "Succeeded");
    }
  }
  CHECK(all_ended);
  // Nothing of gantry's is left in any cluster.
  std::map<std::string, std::string> uid_to_name;
  for (const auto& [name, uid] : acked) uid_to_name[uid] = name;
  for (const char* cluster : {"c1", "c2", "c3"}) {
    std::string left;  // what is still there, for the failure's log
    bool empty = PollFor([&] {
      left.clear();
      for (const char* path : {"/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads",
                               "/apis/batch/v1/namespaces/team-a/jobs"}) {
        auto reply = fleet.RemoteGet(cluster, path);
        if (reply.status != 200) return false;
        for (const json& o : reply.body.value("items", json::array())) {
          const json& meta = o["metadata"];
          const std::string uid = meta.value("labels", json::object()).value(dispatch::kJobUidLabel, "");
          const std::string name = uid_to_name.count(uid) ? uid_to_name[uid] : "?";
          left += fmt::format("\n  {} {} (job {}, epoch {}; the job: {} epoch {} in {})", o.value("kind", ""),
                              meta.value("name", ""), name,
                              meta.value("annotations", json::object()).value(dispatch::kEpochAnnotation, ""),
                              stored[name]["status"].value("phase", ""), stored[name]["status"].value("epoch", 0),
                              stored[name]["status"].value("cluster", ""));
        }
      }
      return left.empty();
    }, seconds(30), milliseconds(500));
    INFO("left in " << cluster << ":" << left);
    CHECK(empty);
  }
  WARN(fmt::format("partition campaign: {} jobs, {} cuts, {} daemon kills: {} moved to a new epoch, {} failed for a "
                   "lost owner, {} runs in all, {} zombies stopped on heal",
                   c.jobs, c.cuts, c.kills - kills_left, tally.moved, tally.failed_lost, tally.runs, tally.zombies));
}

}  // namespace

TEST_CASE("partition campaign: 60 jobs of every onClusterLoss, 10 random cuts and 2 daemon kills, "
          "each job finished, at most once where promised, nothing left behind",
          "[e2e][recovery][partition][campaign]") {
  RunCampaign({.jobs = 60, .cuts = 10, .kills = 2, .max_cut = milliseconds(4500), .converge = seconds(90)});
}

TEST_CASE("long partition campaign (GANTRY_LONG_CAMPAIGN=1): 600 jobs, 100 cuts, 20 daemon kills",
          "[e2e][recovery][partition][campaign][long]") {
  if (std::getenv("GANTRY_LONG_CAMPAIGN") == nullptr) {
    WARN("skipped: set GANTRY_LONG_CAMPAIGN=1 to run");
    return;
  }
  RunCampaign({.jobs = 600, .cuts = 100, .kills = 20, .max_cut = milliseconds(4500), .converge = seconds(300)});
}

}  // namespace gantry::testing
