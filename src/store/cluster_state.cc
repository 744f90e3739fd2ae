// SqliteStore as a ClusterStateStore: the cluster_outages (002),
// cluster_watch_refusals (008) and cluster_identities (017) tables.
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

Result<std::map<std::string, ClusterOutage>> SqliteStore::LoadOutages() {
  std::lock_guard lock(read_mu_);
  auto stmt = reader_->Prepare("SELECT cluster, first_lost_ms, credentials_refused FROM cluster_outages");
  if (!stmt.ok()) return stmt.status();
  std::map<std::string, ClusterOutage> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out[stmt->Text(0)] = {stmt->Int(1), stmt->Int(2) != 0};
  }
  return out;
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

Result<std::map<std::string, std::string>> SqliteStore::LoadClusterIds() {
  std::lock_guard lock(read_mu_);
  auto stmt = reader_->Prepare("SELECT cluster, cluster_id FROM cluster_identities");
  if (!stmt.ok()) return stmt.status();
  std::map<std::string, std::string> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out[stmt->Text(0)] = stmt->Text(1);
  }
  return out;
}

void SqliteStore::SaveClusterId(std::string cluster, std::optional<std::string> cluster_id,
                                StoreCallback<bool> done) {
  writer_->Enqueue(
      GroupCommitter::Op([cluster, cluster_id](SqliteConnection& conn) -> Status {
        auto stmt = conn.Prepare(cluster_id ? "INSERT INTO cluster_identities(cluster, cluster_id) VALUES (?1, ?2) "
                                              "ON CONFLICT(cluster) DO UPDATE SET cluster_id = excluded.cluster_id"
                                            : "DELETE FROM cluster_identities WHERE cluster = ?1");
        if (!stmt.ok()) return stmt.status();
        stmt->Bind(1, cluster);
        if (cluster_id) stmt->Bind(2, *cluster_id);
        return stmt->Run();
      }),
      [done](Status s) {
        if (!done) return;
        if (!s.ok()) return done(std::move(s));
        done(true);
      });
}

void SqliteStore::SaveOutage(std::string cluster, std::optional<ClusterOutage> outage,
                             std::string last_error, StoreCallback<bool> done) {
  writer_->Enqueue(
      GroupCommitter::Op([cluster, outage, last_error](SqliteConnection& conn) -> Status {
        if (!outage) {
          auto stmt = conn.Prepare("DELETE FROM cluster_outages WHERE cluster = ?1");
          if (!stmt.ok()) return stmt.status();
          stmt->Bind(1, cluster);
          return stmt->Run();
        }
        // What the caller saves stands: it saves when the outage's start or
        // kind changed (a failure after refusals starts the clock afresh).
        auto stmt = conn.Prepare(
            "INSERT INTO cluster_outages(cluster, first_lost_ms, last_error, credentials_refused) "
            "VALUES (?1, ?2, ?3, ?4) ON CONFLICT(cluster) DO UPDATE SET first_lost_ms = excluded.first_lost_ms, "
            "last_error = excluded.last_error, credentials_refused = excluded.credentials_refused");
        if (!stmt.ok()) return stmt.status();
        stmt->Bind(1, cluster).Bind(2, outage->first_lost_ms).Bind(3, last_error);
        stmt->Bind(4, int64_t{outage->credentials_refused ? 1 : 0});
        return stmt->Run();
      }),
      [done](Status s) {
        if (!done) return;
        if (!s.ok()) return done(std::move(s));
        done(true);
      });
}

}  // namespace gantry
