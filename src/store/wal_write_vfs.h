// The "gantry-wal" SQLite VFS: the default unix VFS, except that the writes
// SQLite makes to a write-ahead log are gathered into one pwrite per commit.
//
// SQLite appends each WAL frame with two writes (its 24-byte header, then the
// page), so a commit of 40 frames costs 80 pwrite calls, about a fifth of the
// store's writer thread. Here writes that continue the previous one are
// copied into a buffer, and the buffer is written out before anything that
// must see the file as SQLite left it:
//
//   xSync (every commit: the writer runs synchronous=FULL), xRead, xTruncate,
//   xFileSize, xClose, a file control, a write elsewhere, or a full buffer.
//
// REQUIRES synchronous=FULL or EXTRA on every connection that commits
// through this VFS (SqliteConnection::Open sets FULL). SQLite publishes a
// commit's frames to other connections (the wal-index in shared memory) only
// after that commit's sync, and the sync writes the buffer out first. Under
// synchronous=NORMAL there is no sync per commit, and another connection
// could read frames still held here.
//
// Files other than WAL files are passed through untouched.
//
// Commits that may be lost in a power failure: while a WalSyncScope(false)
// is alive on a thread, a WAL sync made on that thread writes the buffer out
// and skips the fsync. Such a commit is visible to every reader at once and
// survives a crash of the process (its frames are in the kernel), but not
// one of the machine until a later sync of the same WAL: the WAL is written
// in order, so the fsync of the next durable commit makes the skipped ones
// durable too. A power failure before that loses a suffix of skipped
// commits, never a part of one (SQLite's frame checksums end the log at the
// last whole commit). This is what synchronous=NORMAL promises, and like it
// the sync of a new WAL header (the log starting over) is never skipped. A
// checkpoint must never run inside such a scope: it copies WAL frames into
// the database and needs them on disk first.
#pragma once

#include <cstdint>

namespace gantry::store_internal {

// Registers the VFS (once; thread-safe) and returns its name, or nullptr if
// SQLite refused it (then callers open with the default VFS).
const char* WalWriteVfsName();

// Since start, over every WAL file of the process: the writes SQLite asked
// for, and the writes made to the files.
struct WalWriteCounts {
  int64_t in = 0;
  int64_t out = 0;
};
WalWriteCounts WalWrites();

// See above. Scopes nest; each restores what it found.
class WalSyncScope {
 public:
  explicit WalSyncScope(bool sync);
  ~WalSyncScope();
  WalSyncScope(const WalSyncScope&) = delete;
  WalSyncScope& operator=(const WalSyncScope&) = delete;

 private:
  bool saved_;
};

// Since start, over every WAL file of the process: WAL syncs made, and those
// skipped inside a WalSyncScope(false).
struct WalSyncCounts {
  int64_t synced = 0;
  int64_t skipped = 0;
};
WalSyncCounts WalSyncs();

}  // namespace gantry::store_internal
