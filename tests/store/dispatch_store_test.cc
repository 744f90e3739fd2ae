// ApplyDispatch: the guarded write the engine's lease and every intent go
// through.
#include <catch2/catch.hpp>

#include <vector>

#include "gantry/store/sqlite_connection.h"
#include "gantry/store/sqlite_store.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

RemoteIntent Intent(const std::string& cluster, const std::string& kind, int64_t epoch, bool present) {
  return MakeIntent(cluster, kind, epoch, present);
}

// A guarded write to the job as it stands at (phase, epoch), upserting rows.
DispatchUpdate Upsert(const JobRecord& job, JobPhase phase, int64_t epoch, std::vector<RemoteIntent> rows) {
  DispatchUpdate u;
  u.uid = job.uid;
  u.expected_phase = phase;
  u.expected_epoch = epoch;
  u.upsert_intents = std::move(rows);
  return u;
}

}  // namespace

TEST_CASE("ApplyDispatch nominates, leases once, and keeps intents with the job", "[store][dispatch]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  JobRecord job = MakeJob("team-a", "train");
  REQUIRE(SubmitSync(*store, job).ok());

  DispatchUpdate nominate;
  nominate.uid = job.uid;
  nominate.expected_phase = JobPhase::kQueued;
  nominate.phase = JobPhase::kNominating;
  nominate.epoch = 1;
  nominate.nominated_ms = 5;
  nominate.upsert_intents = {Intent("c1", "Workload", 1, true), Intent("c2", "Workload", 1, true)};
  JobEvent nominated;
  nominated.reason = "Nominated";
  nominate.events = {nominated};
  auto r = ApplySync(*store, nominate);
  REQUIRE(r.ok());
  CHECK(r->phase == JobPhase::kNominating);
  CHECK(r->epoch == 1);
  CHECK(r->nominated_ms == 5);
  auto intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  REQUIRE(intents->size() == 2);
  CHECK(intents->at(0).cluster == "c1");
  CHECK(intents->at(1).present);

  // The lease: two clusters race; only the first compare-and-set wins.
  auto lease = [&](const std::string& cluster) {
    DispatchUpdate u;
    u.uid = job.uid;
    u.expected_phase = JobPhase::kNominating;
    u.expected_epoch = 1;
    u.expected_cluster = "";
    u.phase = JobPhase::kAdmitted;
    u.cluster = cluster;
    u.lease_ms = 9;
    u.upsert_intents = {Intent(cluster == "c1" ? "c2" : "c1", "Workload", 1, false),
                        Intent(cluster, "Job", 1, true)};
    return ApplySync(*store, u);
  };
  auto first = lease("c2");
  REQUIRE(first.ok());
  CHECK(first->cluster == "c2");
  auto second = lease("c1");
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == Code::kConflict);
  CHECK_THAT(second.status().message(), Catch::Contains("owned by 'c2'"));

  // The loser's write left nothing behind.
  intents = store->Intents(job.uid);
  REQUIRE(intents->size() == 3);
  int jobs = 0;
  for (const RemoteIntent& i : *intents) {
    if (i.kind == "Job") {
      ++jobs;
      CHECK(i.cluster == "c2");
    }
    if (i.cluster == "c1") CHECK_FALSE(i.present);
  }
  CHECK(jobs == 1);
  auto events = store->Events(job.uid);
  REQUIRE(events.ok());
  CHECK(events->back().reason == "Nominated");

  // Dropping rows; the job lists among those with intents until none are left.
  CHECK(store->UidsWithIntents("", 10)->size() == 1);
  CHECK(store->UidsWithIntentsIn("c1", "", 10)->size() == 1);
  CHECK(store->UidsWithIntentsIn("c9", "", 10)->empty());
  DispatchUpdate drop;
  drop.uid = job.uid;
  drop.expected_phase = JobPhase::kAdmitted;
  drop.expected_epoch = 1;
  drop.expected_cluster = "c2";
  drop.drop_intents = {{"c1", "Workload"}, {"c2", "Workload"}, {"c2", "Job"}};
  drop.phase = JobPhase::kSucceeded;
  REQUIRE(ApplySync(*store, drop).ok());
  CHECK(store->Intents(job.uid)->empty());
  CHECK(store->UidsWithIntents("", 10)->empty());
}

TEST_CASE("ApplyDispatch on a missing job is NotFound, purge removes intents", "[store][dispatch]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  DispatchUpdate u;
  u.uid = "no-such-uid";
  CHECK(ApplySync(*store, u).status().code() == Code::kNotFound);

  JobRecord job = MakeJob("team-a", "done");
  REQUIRE(SubmitSync(*store, job).ok());
  DispatchUpdate fail;
  fail.uid = job.uid;
  fail.phase = JobPhase::kFailed;
  fail.upsert_intents = {Intent("c1", "Workload", 1, false)};
  REQUIRE(ApplySync(*store, fail).ok());
  REQUIRE(PurgeSync(*store, "team-a", "done").ok());
  CHECK(store->Intents(job.uid)->empty());
}

TEST_CASE("finished_ms is set by the write that makes the phase final, and kept by later ones", "[store][dispatch]") {
  TempDir dir;
  FakeClock clock;
  auto store = OpenStore(dir.File("db"), &clock);
  JobRecord job = MakeJob("team-a", "train");
  REQUIRE(SubmitSync(*store, job).ok());
  DispatchUpdate run;
  run.uid = job.uid;
  run.expected_phase = JobPhase::kQueued;
  run.phase = JobPhase::kRunning;
  run.upsert_intents = {Intent("c1", "Job", 0, true)};
  clock.Advance(1'000);
  auto running = ApplySync(*store, run);
  REQUIRE(running.ok());
  CHECK(running->finished_ms == 0);

  clock.Advance(1'000);
  const int64_t finish_time = clock.NowMillis();
  DispatchUpdate finish;
  finish.uid = job.uid;
  finish.expected_phase = JobPhase::kRunning;
  finish.phase = JobPhase::kSucceeded;
  auto finished = ApplySync(*store, finish);
  REQUIRE(finished.ok());
  CHECK(finished->finished_ms == finish_time);

  // A later write to the finished job (its rows dropped) keeps the time.
  clock.Advance(5'000);
  DispatchUpdate drop;
  drop.uid = job.uid;
  drop.expected_phase = JobPhase::kSucceeded;
  drop.drop_intents = {{"c1", "Job"}};
  REQUIRE(ApplySync(*store, drop).ok());
  auto read = store->GetByUid(job.uid);
  REQUIRE(read.ok());
  CHECK(read->finished_ms == finish_time);
  CHECK(read->updated_ms == finish_time + 5'000);

  // The other path to a final phase, Transition, sets it too.
  JobRecord other = MakeJob("team-a", "other");
  REQUIRE(SubmitSync(*store, other).ok());
  ForcePhase(*store, other.uid, JobPhase::kCancelling);
  CHECK(store->GetByUid(other.uid)->finished_ms == 0);
  clock.Advance(1'000);
  ForcePhase(*store, other.uid, JobPhase::kCancelled);
  CHECK(store->GetByUid(other.uid)->finished_ms == clock.NowMillis());
}

TEST_CASE("ExpireFinished purges finished jobs past the cutoff with no intent left, oldest first",
          "[store][dispatch]") {
  TempDir dir;
  FakeClock clock;
  const std::string path = dir.File("db");
  auto store = OpenStore(path, &clock);
  // Finished 1, 2, 3 and 4 s after the start: kept (an intent left), old-a,
  // old-b, old-c; late after the cutoff; running not finished; pre-006
  // finished with no finish time (as before migration 006).
  const int64_t start = clock.NowMillis();
  std::vector<JobRecord> jobs;
  for (const char* name : {"kept", "old-a", "old-b", "old-c", "late", "running", "pre-006"}) {
    jobs.push_back(MakeJob("team-a", name));
    REQUIRE(SubmitSync(*store, jobs.back()).ok());
  }
  for (int i = 0; i < 4; ++i) {
    clock.Advance(1'000);
    DispatchUpdate finish;
    finish.uid = jobs[i].uid;
    finish.phase = i == 2 ? JobPhase::kFailed : JobPhase::kSucceeded;
    if (i == 0) finish.upsert_intents = {Intent("c1", "Job", 1, false)};  // withdrawn, not seen gone
    REQUIRE(ApplySync(*store, finish).ok());
  }
  ForcePhase(*store, jobs[6].uid, JobPhase::kSucceeded);
  {
    auto conn = SqliteConnection::Open(path, {});
    REQUIRE(conn.ok());
    REQUIRE((*conn)->Exec("UPDATE jobs SET finished_ms = 0 WHERE name = 'pre-006'").ok());
  }
  clock.Advance(10'000);
  ForcePhase(*store, jobs[4].uid, JobPhase::kCancelled);  // finished after the cutoff below
  ForcePhase(*store, jobs[5].uid, JobPhase::kRunning);
  const int64_t cutoff = start + 8'000;

  auto first = ExpireSync(*store, cutoff, 1);  // a batch of one: the oldest that may go
  REQUIRE(first.ok());
  CHECK(first->count == 1);
  CHECK(first->last_finished_ms == start + 2'000);
  CHECK(store->GetByUid(jobs[1].uid).status().code() == Code::kNotFound);
  CHECK(*store->WasPurged(jobs[1].uid));  // what it left in a cluster is gantry's to delete
  CHECK(store->GetByUid(jobs[2].uid).ok());

  // From old-c's finish on: old-b, before it, is not taken.
  auto from = ExpireSync(*store, cutoff, 100, start + 4'000);
  REQUIRE(from.ok());
  CHECK(from->count == 1);
  CHECK(from->last_finished_ms == start + 4'000);
  CHECK(store->GetByUid(jobs[3].uid).status().code() == Code::kNotFound);
  CHECK(store->GetByUid(jobs[2].uid).ok());

  auto rest = ExpireSync(*store, cutoff, 100);
  REQUIRE(rest.ok());
  CHECK(rest->count == 1);
  CHECK(store->GetByUid(jobs[2].uid).status().code() == Code::kNotFound);
  CHECK(store->Events(jobs[2].uid)->empty());
  for (int i : {0, 4, 5, 6}) CHECK(store->GetByUid(jobs[i].uid).ok());
  CHECK(ExpireSync(*store, cutoff, 100)->count == 0);

  // Once its object is seen gone, the job with a row left goes too.
  DispatchUpdate drop;
  drop.uid = jobs[0].uid;
  drop.expected_phase = JobPhase::kSucceeded;
  drop.drop_intents = {{"c1", "Job"}};
  REQUIRE(ApplySync(*store, drop).ok());
  CHECK(ExpireSync(*store, cutoff, 100)->count == 1);
  CHECK(store->GetByUid(jobs[0].uid).status().code() == Code::kNotFound);
  for (int i : {4, 5, 6}) CHECK(store->GetByUid(jobs[i].uid).ok());
  // Its name is free again.
  CHECK(SubmitSync(*store, MakeJob("team-a", "old-a")).ok());
}

TEST_CASE("a refused copy's row keeps the cluster's answer until it is upserted again", "[store][dispatch]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  JobRecord job = MakeJob("team-a", "train");
  REQUIRE(SubmitSync(*store, job).ok());
  DispatchUpdate nominate;
  nominate.uid = job.uid;
  nominate.expected_phase = JobPhase::kQueued;
  nominate.phase = JobPhase::kNominating;
  nominate.epoch = 1;
  nominate.upsert_intents = {Intent("c1", "Workload", 1, true)};
  REQUIRE(ApplySync(*store, nominate).ok());

  DispatchUpdate refused;
  refused.uid = job.uid;
  refused.expected_phase = JobPhase::kNominating;
  refused.expected_epoch = 1;
  RemoteIntent row = Intent("c1", "Workload", 1, false);
  row.refusal = "cluster c1 refused Workload team-a/x: HTTP 403 forbidden";
  refused.upsert_intents = {row};
  REQUIRE(ApplySync(*store, refused).ok());
  auto intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  REQUIRE(intents->size() == 1);
  CHECK_FALSE(intents->at(0).present);
  CHECK(intents->at(0).refusal == row.refusal);

  // The next epoch's nomination writes the row afresh: no refusal.
  DispatchUpdate again;
  again.uid = job.uid;
  again.expected_phase = JobPhase::kNominating;
  again.expected_epoch = 1;
  again.epoch = 2;
  again.upsert_intents = {Intent("c1", "Workload", 2, true)};
  REQUIRE(ApplySync(*store, again).ok());
  intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  REQUIRE(intents->size() == 1);
  CHECK(intents->at(0).present);
  CHECK(intents->at(0).refusal.empty());
}

TEST_CASE("an intent's preemption gate time and refusal are stored, and a new epoch's row has it closed", "[store][dispatch]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  JobRecord job = MakeJob("team-a", "gated");
  REQUIRE(SubmitSync(*store, job).ok());
  DispatchUpdate nominate =
      Upsert(job, JobPhase::kQueued, 0, {Intent("c1", "Workload", 1, true), Intent("c2", "Workload", 1, true)});
  nominate.phase = JobPhase::kNominating;
  nominate.epoch = 1;
  REQUIRE(ApplySync(*store, nominate).ok());
  auto intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  REQUIRE(intents->size() == 2);
  CHECK(intents->at(0).gate_opened_ms == 0);

  RemoteIntent row = Intent("c2", "Workload", 1, true);
  row.gate_opened_ms = 30'000;
  row.gate_refusal = "cluster c2 refused the patch: HTTP 403";
  REQUIRE(ApplySync(*store, Upsert(job, JobPhase::kNominating, 1, {row})).ok());
  intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  REQUIRE(intents->size() == 2);
  CHECK(intents->at(0).gate_opened_ms == 0);  // c1
  CHECK(intents->at(0).gate_refusal.empty());
  CHECK(intents->at(1).gate_opened_ms == 30'000);  // c2
  CHECK(intents->at(1).gate_refusal == row.gate_refusal);

  DispatchUpdate again = Upsert(job, JobPhase::kNominating, 1, {Intent("c2", "Workload", 2, true)});
  again.epoch = 2;
  REQUIRE(ApplySync(*store, again).ok());
  intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  CHECK(intents->at(1).gate_opened_ms == 0);
  CHECK(intents->at(1).gate_refusal.empty());
}

TEST_CASE("a real job's row keeps the hold it was written with, and a later write without one clears it",
          "[store][dispatch]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  JobRecord job = MakeJob("team-a", "held");
  REQUIRE(SubmitSync(*store, job).ok());
  RemoteIntent held = Intent("c1", "Job", 1, false);
  held.hold = "owner cluster c1 answers gantry's reads but has failed every try to create the job there";
  DispatchUpdate u = Upsert(job, JobPhase::kQueued, 0, {held});
  u.epoch = 1;
  REQUIRE(ApplySync(*store, u).ok());
  auto intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  REQUIRE(intents->size() == 1);
  CHECK(intents->at(0).hold == held.hold);
  CHECK(intents->at(0).refusal.empty());
  CHECK_FALSE(intents->at(0).present);

  RemoteIntent plain = Intent("c1", "Job", 2, true);
  DispatchUpdate again = Upsert(job, JobPhase::kQueued, 1, {plain});
  again.epoch = 2;
  REQUIRE(ApplySync(*store, again).ok());
  intents = store->Intents(job.uid);
  REQUIRE(intents.ok());
  CHECK(intents->at(0).hold.empty());
}

TEST_CASE("a real job's confirmed create stays confirmed at its epoch, and a new epoch's row starts unconfirmed",
          "[store][dispatch]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  JobRecord job = MakeJob("team-a", "once");
  REQUIRE(SubmitSync(*store, job).ok());
  DispatchUpdate lease = Upsert(job, JobPhase::kQueued, 0, {Intent("c1", "Job", 1, true)});
  lease.phase = JobPhase::kAdmitted;
  lease.epoch = 1;
  lease.cluster = "c1";
  REQUIRE(ApplySync(*store, lease).ok());
  auto created_ms = [&] {
    auto intents = store->Intents(job.uid);
    REQUIRE(intents.ok());
    REQUIRE(intents->size() == 1);
    return intents->at(0).created_ms;
  };
  CHECK(created_ms() == 0);

  RemoteIntent confirmed = Intent("c1", "Job", 1, true);
  confirmed.created_ms = 40'000;
  DispatchUpdate confirm = Upsert(job, JobPhase::kAdmitted, 1, {confirmed});
  confirm.expected_cluster = "c1";
  REQUIRE(ApplySync(*store, confirm).ok());
  CHECK(created_ms() == 40'000);

  // A later write of the row at the same epoch by one that did not know
  // (a row built afresh, created_ms 0) keeps the confirmation.
  DispatchUpdate absent = Upsert(job, JobPhase::kAdmitted, 1, {Intent("c1", "Job", 1, false)});
  absent.expected_cluster = "c1";
  REQUIRE(ApplySync(*store, absent).ok());
  CHECK(created_ms() == 40'000);

  // The next epoch's row is another create, not confirmed yet.
  DispatchUpdate next = Upsert(job, JobPhase::kAdmitted, 1, {Intent("c1", "Job", 2, true)});
  next.expected_cluster = "c1";
  next.epoch = 2;
  REQUIRE(ApplySync(*store, next).ok());
  CHECK(created_ms() == 0);
}

TEST_CASE("a job that adds events without end keeps its first ones and its latest ones, not all", "[store][dispatch]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  JobRecord job = MakeJob("team-a", "loop");
  REQUIRE(SubmitSync(*store, job).ok());
  JobRecord other = MakeJob("team-a", "quiet");
  REQUIRE(SubmitSync(*store, other).ok());
  constexpr int kWrites = 1200;
  for (int i = 0; i < kWrites; ++i) {
    DispatchUpdate u;
    u.uid = job.uid;
    JobEvent e;
    e.reason = "Again";
    e.message = std::to_string(i);
    u.events = {e};
    REQUIRE(ApplySync(*store, u).ok());
  }
  auto events = store->Events(job.uid);
  REQUIRE(events.ok());
  // Capped.
  CHECK(events->size() == 500);
  // How it began is kept: Submitted, then the first events after it.
  CHECK(events->front().reason == "Submitted");
  CHECK(events->at(19).message == "18");
  // The latest ones are all there, in order, the newest last.
  CHECK(events->back().message == std::to_string(kWrites - 1));
  for (size_t i = 20; i + 1 < events->size(); ++i) {
    CHECK(std::stoi(events->at(i).message) + 1 == std::stoi(events->at(i + 1).message));
  }
  // Another job's events are not touched.
  REQUIRE(store->Events(other.uid)->size() == 1);
  CHECK(store->LastEvents(job.uid, 5)->total == static_cast<int64_t>(events->size()));
}

}  // namespace gantry::testing
