#include "job_rows.h"

#include <fmt/format.h>

namespace gantry {
namespace {

Result<JobRecord> SelectOne(Statement& stmt, const std::string& what) {
  Result<bool> row = stmt.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(fmt::format("job {} not found", what));
  return ReadJob(stmt);
}

}  // namespace

Result<JobRecord> ReadJob(const Statement& stmt) {
  JobRecord job;
  job.seq = stmt.Int(0);
  job.uid = stmt.Text(1);
  job.ns = stmt.Text(2);
  job.name = stmt.Text(3);
  job.queue = stmt.Text(4);
  job.priority = static_cast<int32_t>(stmt.Int(5));
  job.spec_json = stmt.Text(6);
  job.labels_json = stmt.Text(7);
  std::string phase = stmt.Text(8);
  std::optional<JobPhase> parsed = ParseJobPhase(phase);
  if (!parsed) {
    return Status::Corruption(
        fmt::format("job uid {} ({}/{}) has unknown phase '{}'", job.uid, job.ns, job.name, phase));
  }
  job.phase = *parsed;
  job.cluster = stmt.Text(9);
  job.epoch = stmt.Int(10);
  job.conditions_json = stmt.Text(11);
  job.message = stmt.Text(12);
  job.created_ms = stmt.Int(13);
  job.updated_ms = stmt.Int(14);
  job.nominated_ms = stmt.Int(15);
  job.lease_ms = stmt.Int(16);
  job.remote_status = stmt.Text(17);
  job.finished_ms = stmt.Int(18);
  return job;
}

Result<JobEvent> ReadEvent(const Statement& stmt) {
  JobEvent e;
  e.id = stmt.Int(0);
  e.job_uid = stmt.Text(1);
  e.time_ms = stmt.Int(2);
  e.type = stmt.Text(3);
  e.reason = stmt.Text(4);
  e.message = stmt.Text(5);
  e.cluster = stmt.Text(6);
  return e;
}

Result<JobRecord> SelectJobByName(SqliteConnection& conn, const std::string& ns,
                                  const std::string& name) {
  static const std::string kSql =
      fmt::format("SELECT {} FROM jobs WHERE namespace = ?1 AND name = ?2", kJobColumns);
  Result<Statement> stmt = conn.Prepare(kSql);
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, ns).Bind(2, name);
  return SelectOne(*stmt, ns + "/" + name);
}

Result<JobRecord> SelectJobByUid(SqliteConnection& conn, const std::string& uid) {
  static const std::string kSql = fmt::format("SELECT {} FROM jobs WHERE uid = ?1", kJobColumns);
  Result<Statement> stmt = conn.Prepare(kSql);
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, uid);
  return SelectOne(*stmt, "uid " + uid);
}

Status InsertJob(SqliteConnection& conn, const JobRecord& job, int64_t* seq) {
  Result<Statement> stmt = conn.Prepare(
      "INSERT INTO jobs (uid, namespace, name, queue, priority, spec_json, labels_json, phase, "
      "cluster, epoch, conditions_json, message, created_ms, updated_ms) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, job.uid)
      .Bind(2, job.ns)
      .Bind(3, job.name)
      .Bind(4, job.queue)
      .Bind(5, int64_t{job.priority})
      .Bind(6, job.spec_json)
      .Bind(7, job.labels_json)
      .Bind(8, JobPhaseName(job.phase))
      .Bind(9, job.cluster)
      .Bind(10, job.epoch)
      .Bind(11, job.conditions_json)
      .Bind(12, job.message)
      .Bind(13, job.created_ms)
      .Bind(14, job.updated_ms);
  GANTRY_RETURN_IF_ERROR(stmt->Run());
  *seq = sqlite3_last_insert_rowid(conn.db());
  return Status::Ok();
}

Status InsertEvent(SqliteConnection& conn, const JobEvent& event, int64_t job_seq) {
  Result<Statement> stmt = conn.Prepare(
      "INSERT INTO job_events (job_seq, job_uid, time_ms, type, reason, message, cluster) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, job_seq)
      .Bind(2, event.job_uid)
      .Bind(3, event.time_ms)
      .Bind(4, event.type)
      .Bind(5, event.reason)
      .Bind(6, event.message)
      .Bind(7, event.cluster);
  GANTRY_RETURN_IF_ERROR(stmt->Run());
  // At every insert: for the common job (a handful of events) two short
  // index seeks that find nothing to delete. (One insert in N, chosen by
  // the shared rowid, could miss a job whose inserts fall in step with
  // another's for ever.)
  return TrimEvents(conn, job_seq);
}

Status TrimEvents(SqliteConnection& conn, int64_t job_seq) {
  // Between the job's first kEventsKeptFirst events and its latest
  // kEventsKeptLast: a subquery with no row is NULL, and the job has too few
  // events to lose any.
  static const std::string kSql = fmt::format(
      "DELETE FROM job_events WHERE job_seq = ?1 "
      "AND id > (SELECT id FROM job_events WHERE job_seq = ?1 ORDER BY id LIMIT 1 OFFSET {}) "
      "AND id <= (SELECT id FROM job_events WHERE job_seq = ?1 ORDER BY id DESC LIMIT 1 OFFSET {})",
      kEventsKeptFirst - 1, kEventsKeptLast);
  Result<Statement> stmt = conn.Prepare(kSql);
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, job_seq);
  return stmt->Run();
}

}  // namespace gantry
