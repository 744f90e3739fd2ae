// SqliteStore: the dispatch engine's guarded write (ApplyDispatch). The
// guard and every change happen inside one group-commit op, so a lease, the
// intents it calls for and its events are durable together or not at all.
#include <fmt/format.h>

#include "gantry/store/sqlite_store.h"
#include "job_rows.h"

namespace gantry {
namespace {

Status UpsertIntent(SqliteConnection& conn, const RemoteIntent& intent, int64_t now) {
  Result<Statement> stmt = conn.Prepare(
      "INSERT INTO remote_intents (job_uid, cluster, kind, namespace, name, epoch, present, updated_ms, refusal, "
      "gate_opened_ms, gate_refusal, created_ms, hold) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) "
      "ON CONFLICT (job_uid, cluster, kind) DO UPDATE SET namespace = ?4, name = ?5, "
      // A confirmed create stays confirmed for its epoch, whatever the
      // writer of the row knew (epoch is still the old row's here).
      "created_ms = CASE WHEN epoch = ?6 THEN max(created_ms, ?12) ELSE ?12 END, epoch = ?6, "
      "present = ?7, updated_ms = ?8, refusal = ?9, gate_opened_ms = ?10, gate_refusal = ?11, hold = ?13");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, intent.job_uid)
      .Bind(2, intent.cluster)
      .Bind(3, intent.kind)
      .Bind(4, intent.ns)
      .Bind(5, intent.name)
      .Bind(6, intent.epoch)
      .Bind(7, int64_t{intent.present ? 1 : 0})
      .Bind(8, now)
      .Bind(9, intent.refusal)
      .Bind(10, intent.gate_opened_ms)
      .Bind(11, intent.gate_refusal)
      .Bind(12, intent.created_ms)
      .Bind(13, intent.hold);
  return stmt->Run();
}

Status DropIntent(SqliteConnection& conn, const std::string& uid, const std::string& cluster,
                  const std::string& kind) {
  Result<Statement> stmt =
      conn.Prepare("DELETE FROM remote_intents WHERE job_uid = ?1 AND cluster = ?2 AND kind = ?3");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, uid).Bind(2, cluster).Bind(3, kind);
  return stmt->Run();
}

// phase is the only indexed column a dispatch write changes. An UPDATE that
// names it rewrites the job's entries in jobs_by_phase and
// jobs_by_namespace_phase even when the value is the same, so a write that
// keeps the phase (a message, conditions, the remote status) leaves it out.
Status UpdateJobRow(SqliteConnection& conn, const JobRecord& job, bool phase_changed) {
  Result<Statement> stmt = conn.Prepare(
      phase_changed
          ? "UPDATE jobs SET phase = ?1, epoch = ?2, cluster = ?3, message = ?4, conditions_json = ?5, "
            "nominated_ms = ?6, lease_ms = ?7, remote_status = ?8, updated_ms = ?9, finished_ms = ?11 WHERE seq = ?10"
          : "UPDATE jobs SET epoch = ?2, cluster = ?3, message = ?4, conditions_json = ?5, "
            "nominated_ms = ?6, lease_ms = ?7, remote_status = ?8, updated_ms = ?9 WHERE seq = ?10");
  if (!stmt.ok()) return stmt.status();
  if (phase_changed) stmt->Bind(1, JobPhaseName(job.phase)).Bind(11, job.finished_ms);
  stmt->Bind(2, job.epoch)
      .Bind(3, job.cluster)
      .Bind(4, job.message)
      .Bind(5, job.conditions_json)
      .Bind(6, job.nominated_ms)
      .Bind(7, job.lease_ms)
      .Bind(8, job.remote_status)
      .Bind(9, job.updated_ms)
      .Bind(10, job.seq);
  return stmt->Run();
}

}  // namespace

void SqliteStore::ApplyDispatch(DispatchUpdate u, StoreCallback<JobRecord> done) {
  auto slot = std::make_shared<std::optional<JobRecord>>();
  const auto durability =
      u.durable ? GroupCommitter::Durability::kDurable : GroupCommitter::Durability::kMayBeLost;
  auto op = [this, u = std::move(u), slot](SqliteConnection& conn) mutable -> Status {
    Result<JobRecord> current = SelectJobByUid(conn, u.uid);
    if (!current.ok()) return current.status();
    JobRecord job = std::move(*current);
    if (job.phase != u.expected_phase || job.epoch != u.expected_epoch ||
        job.cluster != u.expected_cluster) {
      return Status::Conflict(fmt::format(
          "job {}/{} is {} at epoch {} owned by '{}', not {} at epoch {} owned by '{}'", job.ns,
          job.name, JobPhaseName(job.phase), job.epoch, job.cluster, JobPhaseName(u.expected_phase),
          u.expected_epoch, u.expected_cluster));
    }
    const int64_t now = Now();
    const bool phase_changed = u.phase && *u.phase != job.phase;
    if (u.phase) job.phase = *u.phase;
    if (u.epoch) job.epoch = *u.epoch;
    if (u.cluster) job.cluster = *u.cluster;
    if (u.message) job.message = *u.message;
    if (u.conditions_json) job.conditions_json = *u.conditions_json;
    if (u.nominated_ms) job.nominated_ms = *u.nominated_ms;
    if (u.lease_ms) job.lease_ms = *u.lease_ms;
    if (u.remote_status) job.remote_status = *u.remote_status;
    job.updated_ms = now;
    if (phase_changed) job.finished_ms = FinishedMsFor(job.phase, now);
    GANTRY_RETURN_IF_ERROR(UpdateJobRow(conn, job, phase_changed));
    for (RemoteIntent& intent : u.upsert_intents) {
      intent.job_uid = u.uid;
      GANTRY_RETURN_IF_ERROR(UpsertIntent(conn, intent, now));
    }
    for (const auto& [cluster, kind] : u.drop_intents) {
      GANTRY_RETURN_IF_ERROR(DropIntent(conn, u.uid, cluster, kind));
    }
    for (JobEvent& event : u.events) {
      event.job_uid = u.uid;
      if (event.time_ms == 0) event.time_ms = now;
      GANTRY_RETURN_IF_ERROR(InsertEvent(conn, event, job.seq));
    }
    *slot = std::move(job);
    return Status::Ok();
  };
  writer_->Enqueue(GroupCommitter::Op(std::move(op)), [slot, done = std::move(done)](Status status) {
    if (!done) return;
    if (!status.ok()) return done(std::move(status));
    done(std::move(**slot));
  }, durability);
}

}  // namespace gantry
