#include "kube_errors.h"

#include <nlohmann/json.hpp>

#include "gantry/common/json_text.h"

namespace gantry::sim {

nlohmann::json KubeStatusJson(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

http::Response KubeError(int code, const std::string& reason, const std::string& message) {
  return JsonResponse(code, KubeStatusJson(code, reason, message));
}

http::Response KubeErrorFrom(const Status& status) {
  switch (status.code()) {
    case Code::kNotFound: return KubeError(404, "NotFound", status.message());
    case Code::kAlreadyExists: return KubeError(409, "AlreadyExists", status.message());
    case Code::kConflict: return KubeError(409, "Conflict", status.message());
    case Code::kInvalidArgument: return KubeError(422, "Invalid", status.message());
    case Code::kPermissionDenied: return KubeError(403, "Forbidden", status.message());
    case Code::kMethodNotAllowed: return KubeError(405, "MethodNotAllowed", status.message());
    case Code::kUnavailable: return KubeError(503, "ServiceUnavailable", status.message());
    default: return KubeError(500, "InternalError", "internal error");
  }
}

http::Response JsonResponse(int code, const nlohmann::json& body) {
  http::Response r;
  r.status = code;
  AppendJson(r.body, body);  // what dump() writes, faster (json_text.h)
  return r;
}

}  // namespace gantry::sim
