#include "migrator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

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

// Applies m unless a concurrent opener already did. Returns whether it ran.
Result<bool> ApplyOne(SqliteConnection& conn, const Migration& m, int64_t now_ms) {
  GANTRY_RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> Result<bool> {
    Result<int64_t> current = CurrentVersion(conn);
    if (!current.ok()) return current.status();
    if (*current >= m.version) return false;
    Status st = conn.Exec(m.sql);
    if (!st.ok()) {
      return Status(st.code(),
                    fmt::format("migration {:03d}_{}: {}", m.version, m.name, st.message()));
    }
    Result<Statement> insert = conn.Prepare(
        "INSERT INTO schema_version (version, name, applied_at_ms) VALUES (?1, ?2, ?3)");
    if (!insert.ok()) return insert.status();
    GANTRY_RETURN_IF_ERROR(
        insert->Bind(1, int64_t{m.version}).Bind(2, m.name).Bind(3, now_ms).Run());
    return true;
  };
  Result<bool> applied = body();
  if (!applied.ok()) {
    Status rollback = conn.Exec("ROLLBACK");
    if (!rollback.ok()) spdlog::error("store: rollback of migration: {}", rollback.ToString());
    return applied;
  }
  GANTRY_RETURN_IF_ERROR(conn.Exec("COMMIT"));
  return applied;
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
  int applied = 0;
  for (const Migration& m : migrations) {
    if (m.version <= *current) continue;
    Result<bool> ran = ApplyOne(conn, m, now_ms);
    if (!ran.ok()) return ran.status();
    if (*ran) {
      ++applied;
      spdlog::info("store: applied schema migration {:03d}_{} to {}", m.version, m.name,
                   conn.path());
    }
  }
  return applied;
}

}  // namespace gantry
