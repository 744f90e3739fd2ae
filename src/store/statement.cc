#include "gantry/store/statement.h"

#include <utility>

#include "gantry/store/sqlite_connection.h"

namespace gantry {

Statement::~Statement() { Release(); }

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), owned_(other.owned_), bind_rc_(other.bind_rc_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    Release();
    stmt_ = std::exchange(other.stmt_, nullptr);
    owned_ = other.owned_;
    bind_rc_ = other.bind_rc_;
  }
  return *this;
}

void Statement::Release() {
  if (stmt_ == nullptr) return;
  if (owned_) {
    sqlite3_finalize(stmt_);
  } else {
    // Reset ends the statement's implicit read transaction; clearing the
    // bindings keeps a stale value from leaking into the next user.
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  stmt_ = nullptr;
}

Statement& Statement::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  // A non-null pointer even for "" so the value binds as '' rather than NULL.
  static const char kEmpty[] = "";
  const char* data = value.empty() ? kEmpty : value.data();
  int rc = sqlite3_bind_text64(stmt_, index, data, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Result<bool> Statement::Step() {
  if (stmt_ == nullptr) return Status::Internal("step on an empty statement");
  sqlite3* db = sqlite3_db_handle(stmt_);
  if (bind_rc_ != SQLITE_OK) {
    return SqliteStatus(db, bind_rc_, std::string("bind for: ") + sqlite3_sql(stmt_));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(db, rc, sqlite3_sql(stmt_));
}

Status Statement::Run() {
  Result<bool> row = Step();
  if (!row.ok()) return row.status();
  if (*row) return Status::Internal(std::string("unexpected row from: ") + sqlite3_sql(stmt_));
  return Status::Ok();
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  int size = sqlite3_column_bytes(stmt_, column);
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

}  // namespace gantry
