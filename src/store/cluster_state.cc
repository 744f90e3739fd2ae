// SqliteStore as a ClusterStateStore: the cluster_outages (002) and
// cluster_watch_refusals (008) tables.
#include "gantry/store/sqlite_store.h"

namespace gantry {

namespace {

Result<std::map<std::string, int64_t>> ReadClusterTimes(Result<Statement> stmt) {
  if (!stmt.ok()) return stmt.status();
  std::map<std::string, int64_t> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out[stmt->Text(0)] = stmt->Int(1);
  }
  return out;
}

}  // namespace

Result<std::map<std::string, int64_t>> SqliteStore::LoadOutages() {
  std::lock_guard lock(read_mu_);
  return ReadClusterTimes(reader_->Prepare("SELECT cluster, first_lost_ms FROM cluster_outages"));
}

Result<std::map<std::string, int64_t>> SqliteStore::LoadWatchRefusals() {
  std::lock_guard lock(read_mu_);
  return ReadClusterTimes(reader_->Prepare("SELECT cluster, since_ms FROM cluster_watch_refusals"));
}

void SqliteStore::SaveWatchRefusal(std::string cluster, std::optional<int64_t> since_ms, StoreCallback<bool> done) {
  writer_->Enqueue(
      GroupCommitter::Op([cluster, since_ms](SqliteConnection& conn) -> Status {
        // The caller's time stands: its map, loaded from this table, knows
        // whether a refusal is new (a row left by a failed delete is stale).
        auto stmt = conn.Prepare(since_ms ? "INSERT INTO cluster_watch_refusals(cluster, since_ms) VALUES (?1, ?2) "
                                            "ON CONFLICT(cluster) DO UPDATE SET since_ms = excluded.since_ms"
                                          : "DELETE FROM cluster_watch_refusals WHERE cluster = ?1");
        if (!stmt.ok()) return stmt.status();
        stmt->Bind(1, cluster);
        if (since_ms) stmt->Bind(2, *since_ms);
        return stmt->Run();
      }),
      [done](Status s) {
        if (!done) return;
        if (!s.ok()) return done(std::move(s));
        done(true);
      });
}

void SqliteStore::SaveOutage(std::string cluster, std::optional<int64_t> first_lost_ms,
                             std::string last_error, StoreCallback<bool> done) {
  writer_->Enqueue(
      GroupCommitter::Op([cluster, first_lost_ms, last_error](SqliteConnection& conn) -> Status {
        if (!first_lost_ms) {
          auto stmt = conn.Prepare("DELETE FROM cluster_outages WHERE cluster = ?1");
          if (!stmt.ok()) return stmt.status();
          stmt->Bind(1, cluster);
          return stmt->Run();
        }
        // The first loss is kept: a later failure in the same outage does not move it.
        auto stmt = conn.Prepare(
            "INSERT INTO cluster_outages(cluster, first_lost_ms, last_error) VALUES (?1, ?2, ?3) "
            "ON CONFLICT(cluster) DO UPDATE SET last_error = excluded.last_error");
        if (!stmt.ok()) return stmt.status();
        stmt->Bind(1, cluster).Bind(2, *first_lost_ms).Bind(3, last_error);
        return stmt->Run();
      }),
      [done](Status s) {
        if (!done) return;
        if (!s.ok()) return done(std::move(s));
        done(true);
      });
}

}  // namespace gantry
