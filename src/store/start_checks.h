// Checks of a database at the start, after SQLite opened it (sqlite_store.cc).
#pragma once

#include <string>

#include "gantry/common/status.h"
#include "gantry/store/sqlite_connection.h"

namespace gantry {

// A file that was there, not empty, and holds no table at all is not a new
// database: most likely a copy of a live database's file made without its
// -wal (whose pages the copy lacks). Taken for a new one, gantry would start
// with no jobs, forgetting them and what they run in the clusters.
Status RefuseTableless(SqliteConnection& conn, bool existed_with_content);

// The origin the database's jobs' objects carry (daemon_settings), checked
// against the daemon's: recorded at the first start; another one is
// refused while any job may have objects in the clusters (not in a final
// phase), and recorded (with a warning) when none can. "" skips the check.
Status CheckOrigin(SqliteConnection& conn, const std::string& origin);

}  // namespace gantry
