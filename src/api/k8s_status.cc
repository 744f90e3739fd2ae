#include "gantry/api/k8s_status.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace gantry::api {

std::string ReasonForCode(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 408: return "Timeout";
    case 409: return "Conflict";
    case 413: return "RequestEntityTooLarge";
    // Kubernetes has no reason of its own for these two (its API server
    // answers neither as a Status): named after the code, as 413 is, so that
    // a client tells a long target from long header fields without parsing
    // the message.
    case 414: return "RequestURITooLong";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 431: return "RequestHeaderFieldsTooLarge";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return code >= 500 ? "InternalError" : "BadRequest";
  }
}

namespace {

// Messages quote what the client sent (a path, a parameter, a parser's
// view of the body), which need not be UTF-8: such bytes are written as
// U+FFFD, where dump() would throw and the client get a 500.
std::string Text(const nlohmann::json& body) {
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

http::Response JsonAnswer(const nlohmann::json& body, int code) { return http::JsonResponse(code, Text(body)); }

http::Response K8sStatus(int code, std::string reason, std::string message,
                         const std::vector<Cause>& causes) {
  nlohmann::json body = {{"kind", "Status"},   {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
                         {"status", "Failure"}, {"message", message}, {"reason", reason},
                         {"code", code}};
  if (!causes.empty()) {
    // A document of thousands of bad entries (a list indented one level
    // off) must not get an answer of megabytes: the first kMaxCauses, and
    // how many more.
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 0; i < causes.size() && i < kMaxCauses; ++i) {
      list.push_back({{"field", causes[i].field}, {"message", causes[i].message}});
    }
    if (causes.size() > kMaxCauses) {
      list.push_back({{"field", ""}, {"message", fmt::format("and {} more not listed", causes.size() - kMaxCauses)}});
    }
    body["details"] = {{"causes", std::move(list)}};
  }
  http::Response r;
  r.status = code;
  r.body = Text(body);
  return r;
}

http::Response K8sStatusFrom(const Status& status) {
  switch (status.code()) {
    case Code::kOk: return K8sSuccess(200, "");
    case Code::kInvalidArgument: return K8sStatus(422, "Invalid", status.message());
    case Code::kNotFound: return K8sStatus(404, "NotFound", status.message());
    case Code::kAlreadyExists: return K8sStatus(409, "AlreadyExists", status.message());
    case Code::kConflict: return K8sStatus(409, "Conflict", status.message());
    case Code::kUnauthenticated: return K8sStatus(401, "Unauthorized", status.message());
    case Code::kPermissionDenied: return K8sStatus(403, "Forbidden", status.message());
    case Code::kTooLarge: return K8sStatus(413, "RequestEntityTooLarge", status.message());
    case Code::kMethodNotAllowed: return K8sStatus(405, "MethodNotAllowed", status.message());
    case Code::kUnavailable: return K8sStatus(503, "ServiceUnavailable", status.message());
    case Code::kDeadlineExceeded: return K8sStatus(504, "Timeout", status.message());
    case Code::kIo:
    case Code::kCorruption:
    case Code::kInternal: break;
  }
  return K8sStatus(500, "InternalError", "internal error; see the gantry log");
}

http::Response K8sSuccess(int code, std::string message) {
  nlohmann::json body = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
                         {"status", "Success"}, {"message", message}, {"code", code}};
  http::Response r;
  r.status = code;
  r.body = Text(body);
  return r;
}

}  // namespace gantry::api
