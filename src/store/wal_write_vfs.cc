#include "wal_write_vfs.h"

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace gantry::store_internal {
namespace {

// The unix VFS writes at most 128 KiB - 1 bytes in one call (its
// seekAndWriteFd masks the length with 0x1ffff) and reports a shorter write
// as SQLITE_FULL: a buffer stays below that.
constexpr int kBufferBytes = 120 << 10;

// Our sqlite3_file; the real one follows it in the same allocation.
struct File {
  sqlite3_file base;
  sqlite3_file* real;
  bool wal = false;
  // WAL files that were written to: bytes not yet written out, meant for
  // [offset, offset + length). Allocated at the first write, so the WAL
  // handles of connections that only read never hold one.
  char* buffer = nullptr;
  sqlite3_int64 offset = 0;
  int length = 0;
  // The WAL header (offset 0) was written since the last real sync. SQLite
  // writes it when the log starts over and syncs it before the frames that
  // overwrite the old ones, even under synchronous=NORMAL: without that, a
  // power failure could leave the old header over new frames, and recovery
  // would replay a prefix of old, already copied frames over newer pages.
  // So that sync is never skipped.
  bool header_unsynced = false;
};

sqlite3_vfs* g_real = nullptr;
sqlite3_vfs g_vfs;
std::atomic<int64_t> g_writes_in{0};
std::atomic<int64_t> g_writes_out{0};
std::atomic<int64_t> g_syncs{0};
std::atomic<int64_t> g_syncs_skipped{0};
thread_local bool t_sync_wal = true;

File* Self(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return Self(f)->real; }

// Writes the buffer out. On failure the bytes are dropped: the commit they
// belong to fails, and SQLite ignores frames past the last good commit.
int Flush(File* f) {
  if (f->length == 0) return SQLITE_OK;
  g_writes_out.fetch_add(1, std::memory_order_relaxed);
  int rc = f->real->pMethods->xWrite(f->real, f->buffer, f->length, f->offset);
  f->length = 0;
  return rc;
}

// --- methods shared by every file: forward, writing out first where needed.

int Close(sqlite3_file* file) {
  File* f = Self(file);
  int flushed = Flush(f);
  std::free(f->buffer);
  f->buffer = nullptr;
  int rc = f->real->pMethods != nullptr ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
  return flushed != SQLITE_OK ? flushed : rc;
}
int Read(sqlite3_file* file, void* out, int n, sqlite3_int64 offset) {
  if (int rc = Flush(Self(file)); rc != SQLITE_OK) return rc;
  return Real(file)->pMethods->xRead(Real(file), out, n, offset);
}
int Write(sqlite3_file* file, const void* data, int n, sqlite3_int64 offset) {
  File* f = Self(file);
  if (!f->wal) return f->real->pMethods->xWrite(f->real, data, n, offset);
  if (offset == 0) f->header_unsynced = true;
  g_writes_in.fetch_add(1, std::memory_order_relaxed);
  if (f->buffer == nullptr) {
    f->buffer = static_cast<char*>(std::malloc(kBufferBytes));
    if (f->buffer == nullptr) return SQLITE_IOERR_NOMEM;
  }
  const bool continues = f->length > 0 && offset == f->offset + f->length;
  if (continues && f->length + n <= kBufferBytes) {
    std::memcpy(f->buffer + f->length, data, n);
    f->length += n;
    return SQLITE_OK;
  }
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  if (n > kBufferBytes) {
    g_writes_out.fetch_add(1, std::memory_order_relaxed);
    return f->real->pMethods->xWrite(f->real, data, n, offset);
  }
  std::memcpy(f->buffer, data, n);
  f->offset = offset;
  f->length = n;
  return SQLITE_OK;
}
int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  if (int rc = Flush(Self(file)); rc != SQLITE_OK) return rc;
  return Real(file)->pMethods->xTruncate(Real(file), size);
}
int Sync(sqlite3_file* file, int flags) {
  File* f = Self(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  if (f->wal) {
    if (!t_sync_wal && !f->header_unsynced) {
      g_syncs_skipped.fetch_add(1, std::memory_order_relaxed);
      return SQLITE_OK;
    }
    f->header_unsynced = false;
    g_syncs.fetch_add(1, std::memory_order_relaxed);
  }
  return f->real->pMethods->xSync(f->real, flags);
}
int FileSize(sqlite3_file* file, sqlite3_int64* size) {
  if (int rc = Flush(Self(file)); rc != SQLITE_OK) return rc;
  return Real(file)->pMethods->xFileSize(Real(file), size);
}
int Lock(sqlite3_file* file, int level) { return Real(file)->pMethods->xLock(Real(file), level); }
int Unlock(sqlite3_file* file, int level) { return Real(file)->pMethods->xUnlock(Real(file), level); }
int CheckReservedLock(sqlite3_file* file, int* out) {
  return Real(file)->pMethods->xCheckReservedLock(Real(file), out);
}
int FileControl(sqlite3_file* file, int op, void* arg) {
  if (int rc = Flush(Self(file)); rc != SQLITE_OK) return rc;
  return Real(file)->pMethods->xFileControl(Real(file), op, arg);
}
int SectorSize(sqlite3_file* file) { return Real(file)->pMethods->xSectorSize(Real(file)); }
int DeviceCharacteristics(sqlite3_file* file) {
  return Real(file)->pMethods->xDeviceCharacteristics(Real(file));
}
int ShmMap(sqlite3_file* file, int region, int size, int extend, void volatile** out) {
  return Real(file)->pMethods->xShmMap(Real(file), region, size, extend, out);
}
int ShmLock(sqlite3_file* file, int offset, int n, int flags) {
  return Real(file)->pMethods->xShmLock(Real(file), offset, n, flags);
}
void ShmBarrier(sqlite3_file* file) { Real(file)->pMethods->xShmBarrier(Real(file)); }
int ShmUnmap(sqlite3_file* file, int delete_flag) {
  return Real(file)->pMethods->xShmUnmap(Real(file), delete_flag);
}
int Fetch(sqlite3_file* file, sqlite3_int64 offset, int n, void** out) {
  return Real(file)->pMethods->xFetch(Real(file), offset, n, out);
}
int Unfetch(sqlite3_file* file, sqlite3_int64 offset, void* p) {
  return Real(file)->pMethods->xUnfetch(Real(file), offset, p);
}

// The real file's version: SQLite calls the shared-memory (2) and
// memory-mapped (3) methods only when the version says they exist.
const sqlite3_io_methods kMethods[] = {
    {1, Close, Read, Write, Truncate, Sync, FileSize, Lock, Unlock, CheckReservedLock, FileControl,
     SectorSize, DeviceCharacteristics, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
    {2, Close, Read, Write, Truncate, Sync, FileSize, Lock, Unlock, CheckReservedLock, FileControl,
     SectorSize, DeviceCharacteristics, ShmMap, ShmLock, ShmBarrier, ShmUnmap, nullptr, nullptr},
    {3, Close, Read, Write, Truncate, Sync, FileSize, Lock, Unlock, CheckReservedLock, FileControl,
     SectorSize, DeviceCharacteristics, ShmMap, ShmLock, ShmBarrier, ShmUnmap, Fetch, Unfetch},
};

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  File* f = new (file) File{};
  f->real = reinterpret_cast<sqlite3_file*>(f + 1);
  int rc = g_real->xOpen(g_real, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    // SQLite calls xClose only when pMethods is set; the real file's methods
    // (if it set them despite failing) are closed here.
    if (f->real->pMethods != nullptr) f->real->pMethods->xClose(f->real);
    f->base.pMethods = nullptr;
    return rc;
  }
  if (f->real->pMethods == nullptr) {  // e.g. a file opened with no methods
    f->base.pMethods = nullptr;
    return SQLITE_CANTOPEN;
  }
  f->wal = (flags & SQLITE_OPEN_WAL) != 0;
  const int version = f->real->pMethods->iVersion;
  f->base.pMethods = &kMethods[version >= 3 ? 2 : version == 2 ? 1 : 0];
  return SQLITE_OK;
}

// Everything but xOpen and the file size is the real VFS's.
int Delete(sqlite3_vfs*, const char* name, int sync_dir) { return g_real->xDelete(g_real, name, sync_dir); }
int Access(sqlite3_vfs*, const char* name, int flags, int* out) { return g_real->xAccess(g_real, name, flags, out); }
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_real->xFullPathname(g_real, name, n, out);
}
void* DlOpen(sqlite3_vfs*, const char* name) { return g_real->xDlOpen(g_real, name); }
void DlError(sqlite3_vfs*, int n, char* out) { g_real->xDlError(g_real, n, out); }
void (*DlSym(sqlite3_vfs*, void* handle, const char* symbol))(void) { return g_real->xDlSym(g_real, handle, symbol); }
void DlClose(sqlite3_vfs*, void* handle) { g_real->xDlClose(g_real, handle); }
int Randomness(sqlite3_vfs*, int n, char* out) { return g_real->xRandomness(g_real, n, out); }
int Sleep(sqlite3_vfs*, int micros) { return g_real->xSleep(g_real, micros); }
int CurrentTime(sqlite3_vfs*, double* out) { return g_real->xCurrentTime(g_real, out); }
int GetLastError(sqlite3_vfs*, int n, char* out) { return g_real->xGetLastError(g_real, n, out); }
int CurrentTimeInt64(sqlite3_vfs*, sqlite3_int64* out) { return g_real->xCurrentTimeInt64(g_real, out); }

const char* Register() {
  g_real = sqlite3_vfs_find(nullptr);
  // Version 2 at least (xCurrentTimeInt64); the unix VFS is version 3.
  if (g_real == nullptr || g_real->iVersion < 2 || g_real->xCurrentTimeInt64 == nullptr) return nullptr;
  g_vfs = sqlite3_vfs{};
  g_vfs.iVersion = 2;
  g_vfs.szOsFile = static_cast<int>(sizeof(File)) + g_real->szOsFile;
  g_vfs.mxPathname = g_real->mxPathname;
  g_vfs.zName = "gantry-wal";
  g_vfs.xOpen = Open;
  g_vfs.xDelete = Delete;
  g_vfs.xAccess = Access;
  g_vfs.xFullPathname = FullPathname;
  g_vfs.xDlOpen = DlOpen;
  g_vfs.xDlError = DlError;
  g_vfs.xDlSym = DlSym;
  g_vfs.xDlClose = DlClose;
  g_vfs.xRandomness = Randomness;
  g_vfs.xSleep = Sleep;
  g_vfs.xCurrentTime = CurrentTime;
  g_vfs.xGetLastError = GetLastError;
  g_vfs.xCurrentTimeInt64 = CurrentTimeInt64;
  if (sqlite3_vfs_register(&g_vfs, /*makeDflt=*/0) != SQLITE_OK) return nullptr;
  return g_vfs.zName;
}

}  // namespace

WalWriteCounts WalWrites() { return {g_writes_in.load(), g_writes_out.load()}; }

WalSyncScope::WalSyncScope(bool sync) : saved_(t_sync_wal) { t_sync_wal = sync; }
WalSyncScope::~WalSyncScope() { t_sync_wal = saved_; }

WalSyncCounts WalSyncs() { return {g_syncs.load(), g_syncs_skipped.load()}; }

const char* WalWriteVfsName() {
  static const char* name = Register();
  return name;
}

}  // namespace gantry::store_internal
