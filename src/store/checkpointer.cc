#include "gantry/store/checkpointer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "gantry/common/thread_name.h"
#include "wal_write_vfs.h"

namespace gantry {
namespace {
constexpr int kMaxWriterWaitMs = 100;
}  // namespace

Result<std::unique_ptr<Checkpointer>> Checkpointer::Start(const std::string& path, CheckpointerOptions options) {
  SqliteConnectionOptions conn_options;
  conn_options.create = false;
  auto conn = SqliteConnection::Open(path, conn_options);
  if (!conn.ok()) return conn.status();
  // Only checkpoints: it never commits, so its own automatic one stays off.
  sqlite3_wal_autocheckpoint((*conn)->db(), 0);
  std::unique_ptr<Checkpointer> self(new Checkpointer(std::move(*conn), options));
  self->thread_ = std::thread([p = self.get()] {
    SetThreadName("store-ckpt");
    p->Run();
  });
  return self;
}

Checkpointer::Checkpointer(std::unique_ptr<SqliteConnection> conn, CheckpointerOptions options)
    : conn_(std::move(conn)), options_(options) {}

Checkpointer::~Checkpointer() { Stop(); }

void Checkpointer::Attach(sqlite3* writer) { sqlite3_wal_hook(writer, &Checkpointer::Hook, this); }

void Checkpointer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t Checkpointer::background_checkpoints() const {
  std::lock_guard lock(mu_);
  return background_;
}

int64_t Checkpointer::writer_checkpoints() const {
  std::lock_guard lock(mu_);
  return by_writer_;
}

int Checkpointer::Hook(void* self, sqlite3* db, const char* schema, int frames) {
  static_cast<Checkpointer*>(self)->Committed(db, schema, frames);
  return SQLITE_OK;
}

void Checkpointer::Committed(sqlite3* db, const char* schema, int frames) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (frames < frames_) looked_at_ = 0;  // the WAL started over
    frames_ = frames;
    wake = !stopping_ && frames_ - looked_at_ >= options_.wake_frames;
  }
  if (wake) cv_.notify_one();
  if (frames < options_.writer_frames) return;
  // SQLITE_BUSY: the background checkpoint holds the checkpoint lock right
  // now; the next commit tries again. This runs inside the commit, which may
  // be one whose sync is skipped: the checkpoint syncs the WAL before it
  // copies frames into the database, always.
  store_internal::WalSyncScope sync(true);
  int rc = sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  // Twice the limit, and the background checkpoint still holds the lock (its
  // thread starved of CPU, say): the writer waits for it, a millisecond at a
  // time and at most kMaxWriterWaitMs per commit, so that the WAL stays
  // bounded; commits slow down instead.
  for (int waited_ms = 0; rc == SQLITE_BUSY && frames >= 2 * options_.writer_frames && waited_ms < kMaxWriterWaitMs;
       ++waited_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rc = sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }
  if (rc == SQLITE_OK) {
    std::lock_guard lock(mu_);
    ++by_writer_;
  } else if (rc != SQLITE_BUSY) {
    spdlog::warn("store: checkpoint after commit: {}", sqlite3_errstr(rc));
  }
}

void Checkpointer::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || frames_ - looked_at_ >= options_.wake_frames; });
    if (stopping_) return;
    // The next look waits for wake_frames more commits, whatever this one
    // copies: frames a reader still needs, or a busy or failed checkpoint,
    // are taken then (and the writer's own checkpoint is the backstop).
    looked_at_ = frames_;
    lock.unlock();
    int copied = 0;
    int rc = sqlite3_wal_checkpoint_v2(conn_->db(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, &copied);
    lock.lock();
    if (rc == SQLITE_OK && copied > 0) ++background_;
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) spdlog::warn("store: background checkpoint: {}", sqlite3_errstr(rc));
  }
}

}  // namespace gantry
