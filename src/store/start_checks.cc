#include "start_checks.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/common/job_phase.h"

namespace gantry {

Status RefuseTableless(SqliteConnection& conn, bool existed_with_content) {
  if (!existed_with_content) return Status::Ok();
  Result<Statement> count = conn.Prepare("SELECT count(*) FROM sqlite_schema");
  if (!count.ok()) return count.status();
  Result<bool> row = count->Step();
  if (!row.ok()) return row.status();
  if (*row && count->Int(0) > 0) return Status::Ok();
  return Status::Corruption(fmt::format(
      "database {} holds no tables, so no jobs: a copy of a running gantry's database without its {}-wal file "
      "lacks them (back up with sqlite3's .backup, or stop gantry first and copy the file with its -wal); if this "
      "gantry had jobs, restore a whole copy; to start with no jobs, remove the file",
      conn.path(), conn.path()));
}

Status CheckOrigin(SqliteConnection& conn, const std::string& origin) {
  if (origin.empty()) return Status::Ok();
  Result<Statement> read = conn.Prepare("SELECT value FROM daemon_settings WHERE key = 'origin'");
  if (!read.ok()) return read.status();
  Result<bool> row = read->Step();
  if (!row.ok()) return row.status();
  const std::string stored = *row ? read->Text(0) : "";
  if (*row && stored == origin) return Status::Ok();
  // Jobs whose objects may be in the clusters under the stored origin:
  // unfinished ones (a phase not read counts as one), and finished ones
  // with rows not confirmed gone (a failed job's run in a cluster out of
  // reach).
  static const std::string kCount = fmt::format(
      "SELECT count(*) FROM jobs AS j WHERE j.phase NOT IN ('{}', '{}', '{}') "
      "OR EXISTS (SELECT 1 FROM remote_intents AS i WHERE i.job_uid = j.uid)",
      JobPhaseName(JobPhase::kSucceeded), JobPhaseName(JobPhase::kFailed), JobPhaseName(JobPhase::kCancelled));
  Result<Statement> count = conn.Prepare(kCount);
  if (!count.ok()) return count.status();
  Result<bool> counted = count->Step();
  if (!counted.ok()) return counted.status();
  const int64_t active = *counted ? count->Int(0) : 0;
  if (!*row && active > 0) {
    // A database from before the origin was recorded (migration 018): what
    // its jobs were dispatched with is not known, and is taken to be this.
    spdlog::warn("store: this database does not say which origin its jobs were dispatched with (it comes from a "
                 "gantry that did not record it); {} of its jobs are not finished or have objects left in the "
                 "clusters, and are taken to carry origin {}: if the daemon that dispatched them had another "
                 "origin, stop gantry and set origin back to it, or gantry sees none of their objects",
                 active, origin);
  }
  if (*row) {
    if (active > 0) {
      return Status::Invalid(fmt::format(
          "origin is {} in the configuration, but this database's jobs were dispatched with origin {}: {} of its "
          "jobs are not finished or have objects left in the clusters, and under another origin gantry would "
          "see none of their objects there (each run taken for vanished and dispatched again beside itself) and "
          "could never delete them; put origin back to {}, or change it once every job has finished or been "
          "cancelled",
          origin, stored, active, stored));
    }
    spdlog::warn("store: origin changes from {} to {}: no job of this database is unfinished or has objects left "
                 "in the clusters; anything else there with origin {} is no longer gantry's to delete",
                 stored, origin, stored);
  }
  Result<Statement> save = conn.Prepare(
      "INSERT INTO daemon_settings(key, value) VALUES ('origin', ?1) "
      "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  if (!save.ok()) return save.status();
  save->Bind(1, origin);
  return save->Run();
}

}  // namespace gantry
