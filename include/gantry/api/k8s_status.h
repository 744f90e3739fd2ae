// Errors as Kubernetes Status objects, the shape kubectl users know:
// {"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid",
//  "code":422,"message":"...","details":{"causes":[{"field":...,"message":...}]}}
// Messages never carry internals (paths, SQL, stack traces).
#pragma once

#include <string>
#include <vector>

#include "gantry/common/status.h"
#include "gantry/http/message.h"

namespace gantry::api {

struct Cause {
  std::string field;
  std::string message;
};

// At most kMaxCauses causes, then one that says how many more there are.
inline constexpr std::size_t kMaxCauses = 100;
http::Response K8sStatus(int code, std::string reason, std::string message,
                         const std::vector<Cause>& causes = {});
// Maps a store/internal Status to its HTTP code and reason. kInternal,
// kIo and kCorruption become 500 with a generic message (logged by caller).
http::Response K8sStatusFrom(const Status& status);
// {"kind":"Status","status":"Success",...} for deletes that succeed.
http::Response K8sSuccess(int code, std::string message);
// The reason word Kubernetes uses for an HTTP code ("NotFound", "Invalid", ...).
std::string ReasonForCode(int code);

// A 200 (or code) JSON answer of body. Text from the worker clusters (an
// error's body, a condition's message) is kept in events and cluster views,
// and need not be UTF-8: such bytes are written as U+FFFD, where dump()
// would throw and the request end in a 500.
http::Response JsonAnswer(const nlohmann::json& body, int code = 200);

}  // namespace gantry::api
