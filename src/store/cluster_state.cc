// SqliteStore as a ClusterStateStore: the cluster_outages (002),
// cluster_watch_refusals (008) and cluster_identities (017) tables.
#include "gantry/store/sqlite_store.h"

namespace gantry {

namespace {

// Every row of a table keyed by cluster (column 0), its value read by read.
template <typename T, typename ReadRow>
Result<std::map<std::string, T>> ReadClusterRows(Result<Statement> stmt, ReadRow read) {
  if (!stmt.ok()) return stmt.status();
  std::map<std::string, T> out;
  while (true) {
    Result<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out[stmt->Text(0)] = read(*stmt);
  }
  return out;
}

// A save's commit answered as the ClusterStateStore's callbacks are.
std::function<void(Status)> Answered(StoreCallback<bool> done) {
  return [done = std::move(done)](Status s) {
    if (!done) return;
    if (!s.ok()) return done(std::move(s));
    done(true);
  };
}

// Records (upsert, value as ?2) or clears (remove) a cluster's row (?1).
template <typename T>
void SaveClusterRow(GroupCommitter& writer, const char* upsert, const char* remove, std::string cluster,
                    std::optional<T> value, StoreCallback<bool> done) {
  writer.Enqueue(GroupCommitter::Op([upsert, remove, cluster = std::move(cluster),
                                     value = std::move(value)](SqliteConnection& conn) -> Status {
                   auto stmt = conn.Prepare(value ? upsert : remove);
                   if (!stmt.ok()) return stmt.status();
                   stmt->Bind(1, cluster);
                   if (value) stmt->Bind(2, *value);
                   return stmt->Run();
                 }),
                 Answered(std::move(done)));
}

}  // namespace

Result<std::map<std::string, ClusterOutage>> SqliteStore::LoadOutages() {
  std::lock_guard lock(read_mu_);
  return ReadClusterRows<ClusterOutage>(
      reader_->Prepare("SELECT cluster, first_lost_ms, credentials_refused FROM cluster_outages"),
      [](Statement& row) { return ClusterOutage{row.Int(1), row.Int(2) != 0}; });
}

Result<std::map<std::string, int64_t>> SqliteStore::LoadWatchRefusals() {
  std::lock_guard lock(read_mu_);
  return ReadClusterRows<int64_t>(reader_->Prepare("SELECT cluster, since_ms FROM cluster_watch_refusals"),
                                  [](Statement& row) { return row.Int(1); });
}

void SqliteStore::SaveWatchRefusal(std::string cluster, std::optional<int64_t> since_ms, StoreCallback<bool> done) {
  // The caller's time stands: its map, loaded from this table, knows
  // whether a refusal is new (a row left by a failed delete is stale).
  SaveClusterRow(*writer_,
                 "INSERT INTO cluster_watch_refusals(cluster, since_ms) VALUES (?1, ?2) "
                 "ON CONFLICT(cluster) DO UPDATE SET since_ms = excluded.since_ms",
                 "DELETE FROM cluster_watch_refusals WHERE cluster = ?1", std::move(cluster), since_ms,
                 std::move(done));
}

Result<std::map<std::string, std::string>> SqliteStore::LoadClusterIds() {
  std::lock_guard lock(read_mu_);
  return ReadClusterRows<std::string>(reader_->Prepare("SELECT cluster, cluster_id FROM cluster_identities"),
                                      [](Statement& row) { return row.Text(1); });
}

void SqliteStore::SaveClusterId(std::string cluster, std::optional<std::string> cluster_id,
                                StoreCallback<bool> done) {
  SaveClusterRow(*writer_,
                 "INSERT INTO cluster_identities(cluster, cluster_id) VALUES (?1, ?2) "
                 "ON CONFLICT(cluster) DO UPDATE SET cluster_id = excluded.cluster_id",
                 "DELETE FROM cluster_identities WHERE cluster = ?1", std::move(cluster), std::move(cluster_id),
                 std::move(done));
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
      Answered(std::move(done)));
}

}  // namespace gantry
