// SqliteStore: the write path. Every write is an op run by the GroupCommitter
// inside its own savepoint (see group_commit.h); an op that returns an error
// leaves no trace, and its callback gets that error.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "gantry/store/sqlite_store.h"
#include "job_rows.h"
#include "read_sql.h"

namespace gantry {
namespace {

// Runs fn as a group-commit op and hands its value to done once the batch is
// durable. The value travels from the op to the completion in a shared slot;
// both run on the writer thread, one after the other.
template <typename T, typename Fn>
void EnqueueWrite(GroupCommitter& writer, Fn fn, StoreCallback<T> done) {
  auto slot = std::make_shared<std::optional<T>>();
  writer.Enqueue(
      GroupCommitter::Op([fn = std::move(fn), slot](SqliteConnection& conn) mutable -> Status {
        Result<T> result = fn(conn);
        if (!result.ok()) return result.status();
        *slot = std::move(*result);
        return Status::Ok();
      }),
      [slot, done = std::move(done)](Status status) {
        if (!done) return;
        if (!status.ok()) return done(std::move(status));
        done(std::move(**slot));
      });
}

std::string JobName(const std::string& ns, const std::string& name) { return ns + "/" + name; }

// Deletes a finished job's row and its events, and records its uid in
// purged_jobs: what the garbage collector may delete (011_purged_jobs).
Status RemoveJob(SqliteConnection& conn, int64_t seq, const std::string& uid, int64_t now) {
  Result<Statement> events = conn.Prepare("DELETE FROM job_events WHERE job_seq = ?1");
  if (!events.ok()) return events.status();
  GANTRY_RETURN_IF_ERROR(events->Bind(1, seq).Run());
  Result<Statement> jobs = conn.Prepare("DELETE FROM jobs WHERE seq = ?1");
  if (!jobs.ok()) return jobs.status();
  GANTRY_RETURN_IF_ERROR(jobs->Bind(1, seq).Run());
  Result<Statement> purged = conn.Prepare("INSERT OR REPLACE INTO purged_jobs(uid, purged_ms) VALUES (?1, ?2)");
  if (!purged.ok()) return purged.status();
  return purged->Bind(1, uid).Bind(2, now).Run();
}

// Runs an "UPDATE jobs ... RETURNING kJobColumns" and reads the updated row
// back (nullopt when no row matched). Takes the statement by value so it is
// reset before the caller's next statement runs.
Result<std::optional<JobRecord>> UpdateReturning(Statement stmt) {
  Result<bool> row = stmt.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<JobRecord>();
  Result<JobRecord> job = ReadJob(stmt);
  if (!job.ok()) return job.status();
  return std::optional<JobRecord>(std::move(*job));
}

}  // namespace

bool SqliteStore::SameSpec(const JobRecord& stored, const std::string& spec_json) const {
  return SameSubmission(stored, spec_json) || (same_spec_ && same_spec_(stored.spec_json, spec_json));
}

void SqliteStore::Submit(JobRecord job, StoreCallback<SubmitResult> done) {
  auto op = [this, job = std::move(job)](SqliteConnection& conn) mutable -> Result<SubmitResult> {
    if (job.uid.empty() || job.ns.empty() || job.name.empty()) {
      return Status::Invalid("job uid, namespace and name must be set");
    }
    const int64_t now = Now();
    if (job.created_ms == 0) job.created_ms = now;
    if (job.updated_ms == 0) job.updated_ms = job.created_ms;
    // Insert first: a new name and a new uid are the rule, and the UNIQUE
    // indexes check both anyway. Only a refused insert looks for what holds
    // the name (a re-submission, or a different job) or the uid (a retry of
    // this very record).
    if (Status inserted = InsertJob(conn, job, &job.seq); !inserted.ok()) {
      if (inserted.code() != Code::kConflict) return inserted;
      Result<JobRecord> existing = SelectJobByName(conn, job.ns, job.name);
      if (existing.ok()) {
        if (!SameSpec(*existing, job.spec_json)) {
          return Status::Conflict(
              fmt::format("job {} already exists with a different spec (its name is taken until the job is purged: "
                          "gantry cancel --purge, once it has ended)",
                          JobName(job.ns, job.name)));
        }
        return SubmitResult{SubmitOutcome::kExisting, std::move(*existing)};
      }
      if (existing.status().code() != Code::kNotFound) return existing.status();
      Result<JobRecord> same_uid = SelectJobByUid(conn, job.uid);
      if (same_uid.ok()) return SubmitResult{SubmitOutcome::kExisting, std::move(*same_uid)};
      return inserted;
    }
    JobEvent event;
    event.job_uid = job.uid;
    event.time_ms = now;
    event.reason = "Submitted";
    event.message = fmt::format("job submitted to queue {}", job.queue);
    GANTRY_RETURN_IF_ERROR(InsertEvent(conn, event, job.seq));
    return SubmitResult{SubmitOutcome::kCreated, std::move(job)};
  };
  EnqueueWrite<SubmitResult>(*writer_, std::move(op), std::move(done));
}

void SqliteStore::RequestCancel(std::string ns, std::string name, StoreCallback<JobRecord> done) {
  auto op = [this, ns = std::move(ns),
             name = std::move(name)](SqliteConnection& conn) -> Result<JobRecord> {
    Result<JobRecord> job = SelectJobByName(conn, ns, name);
    if (!job.ok()) return job;
    // Final: nothing to cancel. Cancelling: already requested; a second
    // request is idempotent and adds no event.
    if (IsFinal(job->phase) || job->phase == JobPhase::kCancelling) return job;
    const int64_t now = Now();
    static const std::string kSql = fmt::format(
        "UPDATE jobs SET phase = ?1, message = ?2, updated_ms = ?3 WHERE seq = ?4 RETURNING {}",
        kJobColumns);
    Result<Statement> stmt = conn.Prepare(kSql);
    if (!stmt.ok()) return stmt.status();
    stmt->Bind(1, JobPhaseName(JobPhase::kCancelling))
        .Bind(2, "cancellation requested")
        .Bind(3, now)
        .Bind(4, job->seq);
    Result<std::optional<JobRecord>> updated = UpdateReturning(std::move(*stmt));
    if (!updated.ok()) return updated.status();
    if (!*updated) return Status::Internal("cancelled job vanished inside its transaction");
    JobEvent event;
    event.job_uid = job->uid;
    event.time_ms = now;
    event.reason = "CancelRequested";
    event.message = fmt::format("cancellation requested in phase {}", JobPhaseName(job->phase));
    GANTRY_RETURN_IF_ERROR(InsertEvent(conn, event, job->seq));
    return std::move(**updated);
  };
  EnqueueWrite<JobRecord>(*writer_, std::move(op), std::move(done));
}

void SqliteStore::Purge(std::string ns, std::string name, StoreCallback<std::string> done) {
  auto op = [this, ns = std::move(ns), name = std::move(name)](SqliteConnection& conn) -> Result<std::string> {
    const int64_t now = Now();
    Result<JobRecord> job = SelectJobByName(conn, ns, name);
    if (!job.ok()) return job.status();
    if (!IsFinal(job->phase)) {
      const char* hint = job->phase == JobPhase::kCancelling ? "purge it" : "cancel it, and purge it";
      return Status::Conflict(fmt::format("job {} is {}; only finished jobs can be purged: {} once it is Cancelled",
                                          JobName(ns, name), JobPhaseName(job->phase), hint));
    }
    GANTRY_RETURN_IF_ERROR(RemoveJob(conn, job->seq, job->uid, now));
    return std::move(job->uid);
  };
  EnqueueWrite<std::string>(*writer_, std::move(op), std::move(done));
}

void SqliteStore::ExpireFinished(int64_t finished_before_ms, int64_t finished_from_ms, int limit,
                                 StoreCallback<ExpiredJobs> done) {
  auto op = [this, finished_before_ms, finished_from_ms, limit](SqliteConnection& conn) -> Result<ExpiredJobs> {
    const int64_t now = Now();
    // A job with an intent left (an object not yet seen deleted, in a
    // cluster out of reach say) stays until the engine has dropped it.
    std::vector<std::pair<int64_t, std::string>> expired;
    ExpiredJobs batch;
    {
      Result<Statement> select = conn.Prepare(kExpireFinishedSql);
      if (!select.ok()) return select.status();
      select->Bind(1, finished_before_ms).Bind(2, int64_t{std::max(limit, 1)}).Bind(3, finished_from_ms);
      while (true) {
        Result<bool> row = select->Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        expired.emplace_back(select->Int(0), select->Text(1));
        batch.last_finished_ms = select->Int(2);
      }
    }
    for (const auto& [seq, uid] : expired) GANTRY_RETURN_IF_ERROR(RemoveJob(conn, seq, uid, now));
    batch.count = static_cast<int>(expired.size());
    return batch;
  };
  EnqueueWrite<ExpiredJobs>(*writer_, std::move(op), std::move(done));
}

void SqliteStore::Transition(std::string uid, JobPhase expected_phase, JobPhase new_phase,
                             std::string message, std::optional<JobEvent> event,
                             StoreCallback<JobRecord> done) {
  auto op = [this, uid = std::move(uid), expected_phase, new_phase, message = std::move(message),
             event = std::move(event)](SqliteConnection& conn) mutable -> Result<JobRecord> {
    const int64_t now = Now();
    static const std::string kSql = fmt::format(
        "UPDATE jobs SET phase = ?1, message = ?2, updated_ms = ?3, finished_ms = ?6 WHERE uid = ?4 AND phase = ?5 "
        "RETURNING {}",
        kJobColumns);
    Result<Statement> stmt = conn.Prepare(kSql);
    if (!stmt.ok()) return stmt.status();
    stmt->Bind(1, JobPhaseName(new_phase))
        .Bind(2, message)
        .Bind(3, now)
        .Bind(4, uid)
        .Bind(5, JobPhaseName(expected_phase))
        .Bind(6, FinishedMsFor(new_phase, now));
    Result<std::optional<JobRecord>> updated = UpdateReturning(std::move(*stmt));
    if (!updated.ok()) return updated.status();
    if (!*updated) {
      Result<JobRecord> current = SelectJobByUid(conn, uid);
      if (!current.ok()) return current.status();
      return Status::Conflict(
          fmt::format("job {} is {}, not {}", JobName(current->ns, current->name),
                      JobPhaseName(current->phase), JobPhaseName(expected_phase)));
    }
    if (event) {
      event->job_uid = uid;
      if (event->time_ms == 0) event->time_ms = now;
      GANTRY_RETURN_IF_ERROR(InsertEvent(conn, *event, (*updated)->seq));
    }
    return std::move(**updated);
  };
  EnqueueWrite<JobRecord>(*writer_, std::move(op), std::move(done));
}

}  // namespace gantry
