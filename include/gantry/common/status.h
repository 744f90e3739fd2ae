// Status and Result<T>: the value every fallible call returns.
//
// Expected failures (bad input, a missing row, a full disk, a remote cluster
// that does not answer) are values, never exceptions. A Status is cheap to
// copy when ok (no allocation). Result<T> holds either a T or a non-ok Status.
//
// Thread-safety: plain values; no shared state.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace gantry {

enum class Code {
  kOk = 0,
  kInvalidArgument,   // the caller's input is wrong (maps to 400/422)
  kNotFound,          // 404
  kAlreadyExists,     // 409 AlreadyExists
  kConflict,          // 409 Conflict (e.g. same name, different spec)
  kUnauthenticated,   // 401
  kPermissionDenied,  // 403
  kTooLarge,          // 413
  kMethodNotAllowed,  // 405 (a verb the resource does not serve)
  kUnavailable,       // try again later (network, remote 503, shutting down)
  kDeadlineExceeded,  // a wait ran past its deadline
  kIo,                // disk or socket error
  kCorruption,        // stored data that cannot be read back
  kInternal,          // a bug; never user input
};

// Short, stable name of a code ("NotFound"), used in logs.
const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status Invalid(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Deadline(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
  static Status Io(std::string m) { return {Code::kIo, std::move(m)}; }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: job team-a/x not found"
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a T or a non-ok Status. REQUIRES: a Status given to it is not ok.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gantry

// Early return of a non-ok Status from a function returning Status or Result.
#define GANTRY_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::gantry::Status gantry_status_ = (expr);   \
    if (!gantry_status_.ok()) return gantry_status_; \
  } while (0)
