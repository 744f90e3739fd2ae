// KnownJobs and IntentsAfter: what the engine keeps of its own last write
// is what the store holds after it.
#include "gantry/dispatch/known_jobs.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gantry/store/sqlite_store.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::dispatch {
namespace {

RemoteIntent Intent(const std::string& cluster, const std::string& kind, int64_t epoch, bool present) {
  return testing::MakeIntent(cluster, kind, epoch, present, "job-" + cluster);
}

void CheckSame(const std::vector<RemoteIntent>& a, const std::vector<RemoteIntent>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(i);
    CHECK(a[i].job_uid == b[i].job_uid);
    CHECK(a[i].cluster == b[i].cluster);
    CHECK(a[i].kind == b[i].kind);
    CHECK(a[i].ns == b[i].ns);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].epoch == b[i].epoch);
    CHECK(a[i].present == b[i].present);
    CHECK(a[i].updated_ms == b[i].updated_ms);
  }
}

TEST_CASE("IntentsAfter gives the intents the store holds after the same write", "[dispatch]") {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> opened = testing::OpenStore(dir.File("gantry.db"));
  SqliteStore& store = *opened;
  JobRecord record;
  record.uid = "uid-1";
  record.ns = "team-a";
  record.name = "job";
  record.queue = "q";
  record.spec_json = "{}";
  auto sub = testing::SubmitSync(store, record);
  REQUIRE(sub.ok());
  JobRecord job = sub->job;

  // Each write as the ladder makes them: nominate to three clusters, take a
  // lease (withdraw two copies, add the job), confirm one gone, move on to
  // epoch 2 in a cluster already listed.
  std::vector<DispatchUpdate> writes(4);
  writes[0].upsert_intents = {Intent("c3", "Workload", 1, true), Intent("c1", "Workload", 1, true),
                              Intent("c2", "Workload", 1, true)};
  writes[1].upsert_intents = {Intent("c1", "Job", 1, true), Intent("c2", "Workload", 1, false),
                              Intent("c3", "Workload", 1, false)};
  writes[2].drop_intents = {{"c2", "Workload"}};
  writes[2].upsert_intents = {Intent("c3", "Workload", 1, false)};
  writes[3].upsert_intents = {Intent("c3", "Workload", 2, true), Intent("c10", "Workload", 2, true)};
  writes[3].drop_intents = {{"c1", "Job"}, {"nowhere", "Workload"}};

  std::vector<RemoteIntent> before;
  for (DispatchUpdate& u : writes) {
    u.uid = job.uid;
    u.expected_phase = job.phase;
    u.expected_epoch = job.epoch;
    u.expected_cluster = job.cluster;
    u.message = "step";
    DispatchUpdate copy = u;
    auto written = testing::ApplySync(store, std::move(u));
    REQUIRE(written.ok());
    job = *written;
    auto stored = store.Intents(job.uid);
    REQUIRE(stored.ok());
    before = IntentsAfter(std::move(before), copy, written->updated_ms);
    CheckSame(before, *stored);
  }
}

TEST_CASE("KnownJobs hands an entry over once and keeps no more than its capacity", "[dispatch]") {
  KnownJobs known(2);
  auto entry = [](const std::string& uid, const std::string& message) {
    KnownJobs::Entry e;
    e.record.uid = uid;
    e.record.message = message;
    e.intents = {Intent("c1", "Workload", 1, true)};
    return e;
  };
  CHECK(known.Put(entry("a", "first")));
  CHECK(known.Put(entry("b", "first")));
  CHECK_FALSE(known.Put(entry("c", "first")));  // full
  CHECK(known.Put(entry("a", "second")));       // a replacement always fits
  CHECK(known.size() == 2);
  auto a = known.Take("a");
  REQUIRE(a);
  CHECK(a->record.message == "second");
  CHECK(a->intents.size() == 1);
  CHECK_FALSE(known.Take("a"));
  CHECK_FALSE(known.Take("c"));
  known.Drop("b");
  CHECK(known.size() == 0);
}

TEST_CASE("KnownJobs refuses what a pass in hand puts back after the job was invalidated", "[dispatch]") {
  KnownJobs known(8);
  auto entry = [](const std::string& message) {
    KnownJobs::Entry e;
    e.record.uid = "a";
    e.record.message = message;
    return e;
  };
  REQUIRE(known.Put(entry("before")));
  auto in_hand = known.Take("a");  // a pass begins
  REQUIRE(in_hand);
  known.Invalidate("a");           // a cancel changes the job in the store
  CHECK_FALSE(known.Put(entry("before")));  // the pass ends: refused
  CHECK_FALSE(known.Take("a"));    // the next pass reads the store...
  CHECK(known.Put(entry("after")));          // ...and puts back what it read
  auto next = known.Take("a");
  REQUIRE(next);
  CHECK(next->record.message == "after");
  // Drop forgets an Invalidate too.
  known.Invalidate("a");
  known.Drop("a");
  CHECK(known.Put(entry("again")));
  CHECK(known.size() == 1);
}

}  // namespace
}  // namespace gantry::dispatch
