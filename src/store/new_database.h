// A database's first creation (sqlite_store.cc).
#pragma once

#include <cstdint>
#include <string>

#include "gantry/common/status.h"

namespace gantry {

// Creates the database at `path`, with every migration applied, all at
// once: it is built beside it (path + ".gantry-creating") and renamed into
// place, so a start that dies while creating it leaves no file at `path`
// that the next start would refuse as one with no tables (RefuseTableless).
// What such a start left beside it is removed first (a warning each): it
// never held a job. Does nothing when `path` exists; refuses when `path` is
// missing but a WAL is beside it (SQLite would replay it over a new file).
Status CreateNewDatabase(const std::string& path, int64_t now_ms);

// Whether the WAL beside the database at `path` holds pages: it is there
// and longer than its 32-byte header.
bool WalHoldsPages(const std::string& path);

}  // namespace gantry
