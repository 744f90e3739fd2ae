#include "migrator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <vector>

namespace gantry {
namespace {

constexpr const char* kCreateVersionTable =
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)";

Result<int64_t> CurrentVersion(SqliteConnection& conn) {
  Result<Statement> stmt = conn.Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_version");
  if (!stmt.ok()) return stmt.status();
  Result<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  return *row ? stmt->Int(0) : 0;
}

// Runs migration m and records it. REQUIRES: inside the caller's transaction.
Status ApplyOne(SqliteConnection& conn, const Migration& m, int64_t now_ms) {
  Status st = conn.Exec(m.sql);
  if (!st.ok()) {
    return Status(st.code(), fmt::format("migration {:03d}_{}: {}", m.version, m.name, st.message()));
  }
  Result<Statement> insert =
      conn.Prepare("INSERT INTO schema_version (version, name, applied_at_ms) VALUES (?1, ?2, ?3)");
  if (!insert.ok()) return insert.status();
  return insert->Bind(1, int64_t{m.version}).Bind(2, m.name).Bind(3, now_ms).Run();
}

}  // namespace

Result<int> MigrateSchema(SqliteConnection& conn, std::span<const Migration> migrations,
                          int64_t now_ms) {
  GANTRY_RETURN_IF_ERROR(conn.Exec(kCreateVersionTable));
  Result<int64_t> current = CurrentVersion(conn);
  if (!current.ok()) return current.status();
  int64_t latest = migrations.empty() ? 0 : migrations.back().version;
  if (*current > latest) {
    return Status::Invalid(fmt::format(
        "database {} has schema version {}, newer than this binary's latest {}; refusing to "
        "open it (downgrade): run a gantry release that knows version {}",
        conn.path(), *current, latest, *current));
  }
  if (*current == latest) return 0;
  // Every pending migration in one transaction: an upgrade that fails half
  // way (a full disk, say) leaves the database as the old binary knew it,
  // not at a version between that neither binary opens. The version is
  // read again inside, so two openers at once do not apply one twice.
  GANTRY_RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  std::vector<const Migration*> applied;
  auto body = [&]() -> Status {
    Result<int64_t> now_current = CurrentVersion(conn);
    if (!now_current.ok()) return now_current.status();
    for (const Migration& m : migrations) {
      if (m.version <= *now_current) continue;
      GANTRY_RETURN_IF_ERROR(ApplyOne(conn, m, now_ms));
      applied.push_back(&m);
    }
    return Status::Ok();
  };
  Status st = body();
  if (st.ok()) st = conn.Exec("COMMIT");
  if (!st.ok()) {
    Status rollback = conn.Exec("ROLLBACK");
    if (!rollback.ok()) spdlog::error("store: rollback of migrations: {}", rollback.ToString());
    return Status(st.code(), fmt::format("{}; the database is left at schema version {}, as it was",
                                         st.message(), *current));
  }
  for (const Migration* m : applied) {
    spdlog::info("store: applied schema migration {:03d}_{} to {}", m->version, m->name, conn.path());
  }
  return static_cast<int>(applied.size());
}

}  // namespace gantry
