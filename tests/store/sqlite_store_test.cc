// SqliteStore write semantics: submit, cancel, purge, transition; bad data.
#include "gantry/store/sqlite_store.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "gantry/common/clock.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {

TEST_CASE("submit then get round-trips every field", "[store]") {
  TempDir dir;
  FakeClock clock(5'000);
  auto store = OpenStore(dir.File("db"), &clock);
  JobRecord job = MakeJob("team-a", "train", R"({"kind":"Job"})", "gpu");
  job.conditions_json = R"([{"type":"X"}])";
  job.message = "hello";
  Result<SubmitResult> r = SubmitSync(*store, job);
  REQUIRE(r.ok());
  CHECK(r->outcome == SubmitOutcome::kCreated);
  CHECK(r->job.seq > 0);

  for (Result<JobRecord> got : {store->Get("team-a", "train"), store->GetByUid(job.uid)}) {
    REQUIRE(got.ok());
    CHECK(got->uid == job.uid);
    CHECK(got->ns == "team-a");
    CHECK(got->name == "train");
    CHECK(got->queue == "gpu");
    CHECK(got->priority == 10);
    CHECK(got->spec_json == R"({"kind":"Job"})");
    CHECK(got->labels_json == R"({"team":"a"})");
    CHECK(got->phase == JobPhase::kQueued);
    CHECK(got->cluster.empty());
    CHECK(got->epoch == 0);
    CHECK(got->conditions_json == R"([{"type":"X"}])");
    CHECK(got->message == "hello");
    CHECK(got->created_ms == job.created_ms);
    CHECK(got->updated_ms == job.created_ms);
    CHECK(got->seq == r->job.seq);
  }
  Result<std::vector<JobEvent>> events = store->Events(job.uid);
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK((*events)[0].reason == "Submitted");
  CHECK((*events)[0].type == "Normal");
  CHECK((*events)[0].time_ms == 5'000);

  CHECK(store->Get("team-a", "nope").status().code() == Code::kNotFound);
  CHECK(store->GetByUid("nope").status().code() == Code::kNotFound);
}

TEST_CASE("submit is idempotent on an identical spec", "[store]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  JobRecord first = MakeJob("ns", "a", R"({"x":1})");
  Result<SubmitResult> created = SubmitSync(*store, first);
  REQUIRE(created.ok());

  SECTION("same name, identical spec, new uid: the stored record") {
    Result<SubmitResult> again = SubmitSync(*store, MakeJob("ns", "a", R"({"x":1})"));
    REQUIRE(again.ok());
    CHECK(again->outcome == SubmitOutcome::kExisting);
    CHECK(again->job.uid == first.uid);
    CHECK(again->job.seq == created->job.seq);
  }
  SECTION("same name, different spec: conflict") {
    Result<SubmitResult> again = SubmitSync(*store, MakeJob("ns", "a", R"({"x":2})"));
    CHECK(again.status().code() == Code::kConflict);
    CHECK(again.status().message() ==
          "job ns/a already exists with a different spec (its name is taken until the job is purged: gantry cancel "
          "--purge, once it has ended)");
  }
  SECTION("same uid again (a retried request): the stored record") {
    JobRecord retry = first;
    retry.name = "renamed";
    Result<SubmitResult> again = SubmitSync(*store, retry);
    REQUIRE(again.ok());
    CHECK(again->outcome == SubmitOutcome::kExisting);
    CHECK(again->job.name == "a");
  }
  // No duplicate row and no second Submitted event in any case.
  Result<JobPage> page = store->List({});
  REQUIRE(page.ok());
  CHECK(page->jobs.size() == 1);
  CHECK(store->Events(first.uid)->size() == 1);
}

TEST_CASE("RequestCancel, Purge and Transition follow the phase rules", "[store]") {
  struct Case {
    JobPhase from;
    bool cancel_changes;  // RequestCancel moves it to Cancelling
    bool purgeable;
  };
  const Case cases[] = {
      {JobPhase::kQueued, true, false},        {JobPhase::kNominating, true, false},
      {JobPhase::kAdmitted, true, false},      {JobPhase::kRunning, true, false},
      {JobPhase::kUnschedulable, true, false}, {JobPhase::kCancelling, false, false},
      {JobPhase::kSucceeded, false, true},     {JobPhase::kFailed, false, true},
      {JobPhase::kCancelled, false, true},     {JobPhase::kLost, false, true},
  };
  TempDir dir;
  FakeClock clock(10'000);
  auto store = OpenStore(dir.File("db"), &clock);
  for (const Case& c : cases) {
    const std::string name = "job-" + std::string(JobPhaseName(c.from));
    INFO(name);
    JobRecord job = MakeJob("ns", name);
    REQUIRE(SubmitSync(*store, job).ok());
    if (c.from != JobPhase::kQueued) ForcePhase(*store, job.uid, c.from);
    size_t events_before = store->Events(job.uid)->size();
    clock.Advance(1);

    Result<JobRecord> cancelled = CancelSync(*store, "ns", name);
    REQUIRE(cancelled.ok());
    JobPhase now = c.cancel_changes ? JobPhase::kCancelling : c.from;
    CHECK(cancelled->phase == now);
    CHECK(store->Get("ns", name)->phase == now);
    auto events = *store->Events(job.uid);
    CHECK(events.size() == events_before + (c.cancel_changes ? 1 : 0));
    if (c.cancel_changes) {
      CHECK(events.back().reason == "CancelRequested");
      CHECK(cancelled->updated_ms == clock.NowMillis());
    }

    auto purged = PurgeSync(*store, "ns", name);
    if (c.purgeable) {
      CHECK(purged.ok());
      CHECK(store->Get("ns", name).status().code() == Code::kNotFound);
      CHECK(store->Events(job.uid)->empty());
      CHECK(*store->WasPurged(job.uid));  // its objects left behind are gantry's to delete
    } else {
      CHECK_FALSE(*store->WasPurged(job.uid));
      CHECK(purged.status().code() == Code::kConflict);
      CHECK(purged.status().message() ==
            "job ns/" + name + " is " + std::string(JobPhaseName(now)) + "; only finished jobs can be purged: " +
                (now == JobPhase::kCancelling ? "purge it" : "cancel it, and purge it") + " once it is Cancelled");
      CHECK(store->Get("ns", name).ok());
    }
  }
  CHECK(CancelSync(*store, "ns", "absent").status().code() == Code::kNotFound);
  CHECK(PurgeSync(*store, "ns", "absent").status().code() == Code::kNotFound);
  CHECK_FALSE(*store->WasPurged("a-uid-this-store-never-had"));
}

TEST_CASE("Transition is a compare-and-set on the phase", "[store]") {
  TempDir dir;
  FakeClock clock(20'000);
  auto store = OpenStore(dir.File("db"), &clock);
  JobRecord job = MakeJob("ns", "t");
  REQUIRE(SubmitSync(*store, job).ok());
  clock.Advance(5);

  JobEvent event;
  event.reason = "Nominated";
  event.type = "Normal";
  event.message = "3 candidates";
  event.cluster = "c1";
  Result<JobRecord> moved =
      TransitionSync(*store, job.uid, JobPhase::kQueued, JobPhase::kNominating, event);
  REQUIRE(moved.ok());
  CHECK(moved->phase == JobPhase::kNominating);
  CHECK(moved->message == "moved by test");
  CHECK(moved->updated_ms == 20'005);
  auto events = *store->Events(job.uid);
  REQUIRE(events.size() == 2);
  CHECK(events[1].reason == "Nominated");
  CHECK(events[1].cluster == "c1");
  CHECK(events[1].job_uid == job.uid);
  CHECK(events[1].time_ms == 20'005);
  CHECK(events[0].id < events[1].id);

  // The last one alone, and the count of all.
  Result<EventTail> tail = store->LastEvents(job.uid, 1);
  REQUIRE(tail.ok());
  REQUIRE(tail->events.size() == 1);
  CHECK(tail->events[0].reason == "Nominated");
  CHECK(tail->total == 2);
  CHECK(store->LastEvents(job.uid, 5)->events.size() == 2);
  CHECK(store->LastEvents("no-such-uid", 5)->total == 0);

  // The phase moved on: a stale expectation loses and changes nothing.
  Result<JobRecord> stale =
      TransitionSync(*store, job.uid, JobPhase::kQueued, JobPhase::kRunning, event);
  CHECK(stale.status().code() == Code::kConflict);
  CHECK(store->GetByUid(job.uid)->phase == JobPhase::kNominating);
  CHECK(store->Events(job.uid)->size() == 2);

  CHECK(TransitionSync(*store, "no-such-uid", JobPhase::kQueued, JobPhase::kRunning)
            .status()
            .code() == Code::kNotFound);
}

TEST_CASE("an unknown stored phase reads as corruption naming the uid", "[store]") {
  TempDir dir;
  const std::string path = dir.File("db");
  auto store = OpenStore(path);
  JobRecord job = MakeJob("ns", "bad");
  REQUIRE(SubmitSync(*store, job).ok());
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE jobs SET phase = 'Exploded'", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(db);
  }
  Result<JobRecord> got = store->Get("ns", "bad");
  CHECK(got.status().code() == Code::kCorruption);
  CHECK(got.status().message().find(job.uid) != std::string::npos);
  CHECK(store->List({}).status().code() == Code::kCorruption);
  CHECK(store->CountByPhase().status().code() == Code::kCorruption);
  // Writes that read the row fail cleanly too, and the store keeps working.
  CHECK(CancelSync(*store, "ns", "bad").status().code() == Code::kCorruption);
  CHECK(SubmitSync(*store, MakeJob("ns", "fine")).ok());
}

TEST_CASE("writes after shutdown fail with Unavailable", "[store]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  store->Shutdown();
  Result<SubmitResult> r = SubmitSync(*store, MakeJob("ns", "late"));
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(store->Get("ns", "late").status().code() == Code::kNotFound);  // reads still work
}

}  // namespace gantry::testing
