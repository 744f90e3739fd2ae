// Parsing a submitted JSON body into a DOM, strictly. Internal to gantry_job.
#pragma once

#include <string_view>
#include <variant>

#include "gantry/job/job_document.h"

namespace gantry::job_internal {

// Deeper than any Kubernetes object; copying or destroying a json value
// recurses, so a hostile body must not nest without bound (same as YAML).
// A container that would open at this depth (containers already open around
// it) makes the body too deep: 128 nested levels are accepted.
inline constexpr int kMaxJsonDepth = 128;

// The body as JSON, or a DocumentError (code 400) when it is not JSON, nests
// deeper than kMaxJsonDepth or repeats a key in one object. nlohmann keeps the
// last of duplicate keys silently; Kubernetes' strict decoding refuses them,
// and so do we (the same rule as for YAML). When a body has several problems
// a syntax error is reported first, then the depth, then the first duplicate.
std::variant<nlohmann::json, DocumentError> ParseJsonBody(std::string_view body);

}  // namespace gantry::job_internal
