// Brings a database's schema up to the migrations compiled into the binary.
// Private to the store.
//
// Contract: schema_version(version, name, applied_at_ms) holds one row per
// applied migration. Every migration above the highest applied version runs
// in ascending order, all in one BEGIN IMMEDIATE transaction with their
// schema_version rows, so a crash or a failure leaves either every pending
// migration or none (never a version between that neither the old binary
// nor the new one opens). The version is re-read inside the transaction, so
// two processes opening the same file at once do not apply a migration twice. A database
// whose version is above what this binary knows (a downgrade) is refused:
// the old binary cannot know what the newer schema means.
#pragma once

#include <cstdint>
#include <span>

#include "gantry/common/status.h"
#include "gantry/store/sqlite_connection.h"
#include "schema_migrations.h"

namespace gantry {

// Returns the number of migrations applied by this call.
Result<int> MigrateSchema(SqliteConnection& conn, std::span<const Migration> migrations,
                          int64_t now_ms);

}  // namespace gantry
