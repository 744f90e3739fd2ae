// The store's scans in pages (job_scan.h): every row once, in order, however
// many pages it takes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "gantry/store/job_scan.h"
#include "gantry/store/sqlite_store.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

// Nominates the job with a Workload intent in each of clusters.
void WithIntents(SqliteStore& store, const std::string& uid, const std::vector<std::string>& clusters) {
  DispatchUpdate u;
  u.uid = uid;
  u.expected_phase = JobPhase::kQueued;
  u.phase = JobPhase::kNominating;
  u.epoch = 1;
  for (const std::string& c : clusters) u.upsert_intents.push_back(MakeIntent(c, "Workload", 1, true));
  REQUIRE(ApplySync(store, u).ok());
}

}  // namespace

TEST_CASE("ForEachJobInPhase hands out every job of the phase once, by seq, page after page", "[store][scan]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  int calls = 0;
  REQUIRE(ForEachJobInPhase(*store, JobPhase::kQueued, [&](const JobKey&) { ++calls; }, 3).ok());
  CHECK(calls == 0);  // an empty store

  std::map<std::string, int32_t> queued;  // uid -> priority
  for (int i = 0; i < 23; ++i) {
    JobRecord job = MakeJob("ns", "job-" + std::to_string(i));
    job.priority = i % 4 * 10;
    REQUIRE(SubmitSync(*store, job).ok());
    if (i % 5 == 0) {
      ForcePhase(*store, job.uid, JobPhase::kRunning);
    } else {
      queued[job.uid] = job.priority;
    }
  }
  // Pages of 1, of a size that divides the rows, of one that does not, and
  // larger than the table.
  for (int page : {1, 3, 6, 7, 1000}) {
    std::vector<JobKey> seen;
    REQUIRE(ForEachJobInPhase(*store, JobPhase::kQueued, [&](const JobKey& k) { seen.push_back(k); }, page).ok());
    INFO("page " << page);
    REQUIRE(seen.size() == queued.size());
    for (size_t i = 0; i < seen.size(); ++i) {
      REQUIRE(queued.count(seen[i].uid) == 1);
      CHECK(seen[i].priority == queued[seen[i].uid]);
      if (i > 0) CHECK(seen[i - 1].seq < seen[i].seq);
    }
  }
  std::vector<std::string> running;
  REQUIRE(ForEachJobInPhase(*store, JobPhase::kRunning, [&](const JobKey& k) { running.push_back(k.uid); }, 2).ok());
  CHECK(running.size() == 5);
}

TEST_CASE("ForEachUidWithIntents hands out every job with intents once, in one cluster or all", "[store][scan]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  std::set<std::string> all, in_c1;
  for (int i = 0; i < 11; ++i) {
    JobRecord job = MakeJob("ns", "job-" + std::to_string(i));
    REQUIRE(SubmitSync(*store, job).ok());
    if (i == 10) continue;  // no intents
    std::vector<std::string> clusters = i % 2 == 0 ? std::vector<std::string>{"c1", "c2"}
                                                   : std::vector<std::string>{"c2"};
    WithIntents(*store, job.uid, clusters);
    all.insert(job.uid);
    if (i % 2 == 0) in_c1.insert(job.uid);
  }
  const std::string c1 = "c1", c9 = "c9";
  for (int page : {1, 2, 4, 100}) {
    INFO("page " << page);
    std::vector<std::string> seen;
    auto add = [&](const std::string& uid) { seen.push_back(uid); };
    REQUIRE(ForEachUidWithIntents(*store, nullptr, add, page).ok());
    CHECK(std::is_sorted(seen.begin(), seen.end()));
    CHECK(std::set<std::string>(seen.begin(), seen.end()) == all);
    CHECK(seen.size() == all.size());  // a job with two intents is handed out once

    seen.clear();
    REQUIRE(ForEachUidWithIntents(*store, &c1, add, page).ok());
    CHECK(std::set<std::string>(seen.begin(), seen.end()) == in_c1);
    CHECK(seen.size() == in_c1.size());

    seen.clear();
    REQUIRE(ForEachUidWithIntents(*store, &c9, add, page).ok());
    CHECK(seen.empty());
  }
}

}  // namespace gantry::testing
