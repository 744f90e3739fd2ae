// Entry points: body -> JSON -> the right document reader -> JobSpec or a
// DocumentError (400 when the body is not a JSON/YAML object, else 422 with
// every cause).
#include "gantry/job/job_document.h"

#include <fmt/format.h>

#include <set>

#include "document_parsers.h"
#include "spec_fields.h"

namespace gantry {
namespace {

using job_internal::FieldErrors;
using nlohmann::json;

// Causes listed in the message; the rest are counted (all are in causes).
constexpr std::size_t kCausesInMessage = 5;
// Deeper than any Kubernetes object; copying or destroying a json value
// recurses, so a hostile body must not nest without bound (same as YAML).
constexpr int kMaxJsonDepth = 128;

// nlohmann keeps the last of duplicate keys silently; Kubernetes' strict
// decoding refuses them, and so do we (the same rule as for YAML).
std::variant<json, DocumentError> ParseJsonBody(std::string_view body) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  bool too_deep = false;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    // Once too deep, nothing more is kept or tracked: the body is refused.
    if (too_deep) return false;
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      too_deep = true;
      return false;
    }
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() &&
               !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    json doc = json::parse(body.begin(), body.end(), callback);
    if (too_deep) return DocumentError{400, "invalid JSON: document is nested too deeply", {}};
    if (!duplicate.empty()) {
      return DocumentError{400, fmt::format("invalid JSON: duplicate key \"{}\"", duplicate), {}};
    }
    return doc;
  } catch (const json::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    std::string_view what = e.what();
    if (auto pos = what.find("] "); pos != std::string_view::npos) what.remove_prefix(pos + 2);
    return DocumentError{400, fmt::format("invalid JSON: {}", what), {}};
  }
}

DocumentError Invalid(std::vector<FieldError> causes) {
  std::string message = fmt::format("job document is invalid: ");
  for (std::size_t i = 0; i < causes.size() && i < kCausesInMessage; ++i) {
    message += fmt::format("{}{}: {}", i == 0 ? "" : "; ", causes[i].field, causes[i].message);
  }
  if (causes.size() > kCausesInMessage) {
    message += fmt::format(" (and {} more)", causes.size() - kCausesInMessage);
  }
  return DocumentError{422, std::move(message), std::move(causes)};
}

enum class Form { kGantry, kManifest, kUnsupported };

// Which reader a document goes to; adds the apiVersion/kind errors.
Form Classify(const json& doc, FieldErrors& errors) {
  std::optional<std::string> api = job_internal::ReadString(doc, "apiVersion", "", errors);
  std::optional<std::string> kind = job_internal::ReadString(doc, "kind", "", errors);
  if (!api && job_internal::Member(doc, "apiVersion") == nullptr) {
    errors.Add("apiVersion", "Required value");
  }
  if (!kind && job_internal::Member(doc, "kind") == nullptr) errors.Add("kind", "Required value");
  if (!api || !kind) return Form::kUnsupported;
  std::string_view want;
  if (*api == "gantry.dev/v1") {
    want = "Job";
  } else if (*api == "batch/v1") {
    want = "Job";
  } else if (*api == "jobset.x-k8s.io/v1alpha2") {
    want = "JobSet";
  } else {
    errors.Add("apiVersion", job_internal::UnsupportedValue(
                                 *api, {"gantry.dev/v1", "batch/v1", "jobset.x-k8s.io/v1alpha2"}));
    return Form::kUnsupported;
  }
  if (*kind != want) {
    errors.Add("kind", job_internal::UnsupportedValue(*kind, {want}));
    return Form::kUnsupported;
  }
  return *api == "gantry.dev/v1" ? Form::kGantry : Form::kManifest;
}

}  // namespace

std::variant<JobSpec, DocumentError> ParseJobDocument(
    std::string_view body, DocumentFormat format, std::optional<std::string_view> path_namespace) {
  std::variant<json, DocumentError> doc =
      format == DocumentFormat::kJson ? ParseJsonBody(body) : YamlToJson(body);
  if (auto* error = std::get_if<DocumentError>(&doc)) return std::move(*error);
  return ParseJobJson(std::get<json>(doc), path_namespace);
}

std::variant<JobSpec, DocumentError> ParseJobJson(const nlohmann::json& doc,
                                                  std::optional<std::string_view> path_namespace) {
  if (!doc.is_object()) {
    return DocumentError{
        400,
        fmt::format("a job document must be an object, got {}", job_internal::TypeName(doc)),
        {}};
  }
  FieldErrors errors;
  Form form = Classify(doc, errors);
  if (form == Form::kUnsupported) return Invalid(errors.causes());
  JobSpec spec = form == Form::kGantry
                     ? job_internal::ReadGantryDocument(doc, path_namespace, errors)
                     : job_internal::ReadManifest(doc, path_namespace, errors);
  if (!errors.empty()) return Invalid(errors.causes());
  return spec;
}

}  // namespace gantry
