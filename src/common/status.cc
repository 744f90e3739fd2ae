#include "gantry/common/status.h"

namespace gantry {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kConflict: return "Conflict";
    case Code::kUnauthenticated: return "Unauthenticated";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kTooLarge: return "TooLarge";
    case Code::kMethodNotAllowed: return "MethodNotAllowed";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Code::kIo: return "IO";
    case Code::kCorruption: return "Corruption";
    case Code::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace gantry
