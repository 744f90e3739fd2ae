// Kubernetes Status bodies for the simulated apiserver's errors, and the
// mapping from gantry Status codes (NotFound 404, AlreadyExists 409,
// InvalidArgument 422, Conflict 409) to them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"
#include "gantry/http/message.h"

namespace gantry::sim {

nlohmann::json KubeStatusJson(int code, const std::string& reason, const std::string& message);
http::Response KubeError(int code, const std::string& reason, const std::string& message);
http::Response KubeErrorFrom(const Status& status);
http::Response JsonResponse(int code, const nlohmann::json& body);

}  // namespace gantry::sim
