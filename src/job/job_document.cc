// Entry points: body -> JSON -> the right document reader -> JobSpec or a
// DocumentError (400 when the body is not a JSON/YAML object, else 422 with
// every cause).
#include "gantry/job/job_document.h"

#include <fmt/format.h>

#include "document_parsers.h"
#include "json_body.h"
#include "pod_sets.h"
#include "spec_fields.h"

namespace gantry {
namespace {

using job_internal::FieldErrors;
using nlohmann::json;

// Causes listed in the message; the rest are counted (all are in causes).
constexpr std::size_t kCausesInMessage = 5;

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

// The template of a document that was read without errors: spec.template
// of a gantry.dev/v1 Job (present and an object, or there would have been an
// error), the whole object of a manifest. Json is json or const json.
template <typename Json>
Json& TemplateOf(Json& doc, Form form) {
  return form == Form::kGantry ? doc.at("spec").at("template") : doc;
}

// Everything but spec.template_object, which the caller fills from
// TemplateOf(doc, form): moved when it owns doc, else copied.
std::variant<JobSpec, DocumentError> ReadDocument(const json& doc,
                                                  std::optional<std::string_view> path_namespace,
                                                  Form& form) {
  if (!doc.is_object()) {
    return DocumentError{
        400,
        fmt::format("a job document must be an object, got {}", job_internal::TypeName(doc)),
        {}};
  }
  FieldErrors errors;
  form = Classify(doc, errors);
  if (form == Form::kUnsupported) return Invalid(errors.causes());
  JobSpec spec = form == Form::kGantry
                     ? job_internal::ReadGantryDocument(doc, path_namespace, errors)
                     : job_internal::ReadManifest(doc, path_namespace, errors);
  if (!errors.empty()) return Invalid(errors.causes());
  return spec;
}

}  // namespace

std::variant<JobSpec, DocumentError> ParseJobDocument(
    std::string_view body, DocumentFormat format, std::optional<std::string_view> path_namespace) {
  std::variant<json, DocumentError> doc =
      format == DocumentFormat::kJson ? job_internal::ParseJsonBody(body) : YamlToJson(body);
  if (auto* error = std::get_if<DocumentError>(&doc)) return std::move(*error);
  json& owned = std::get<json>(doc);
  Form form = Form::kUnsupported;
  std::variant<JobSpec, DocumentError> result = ReadDocument(owned, path_namespace, form);
  if (auto* spec = std::get_if<JobSpec>(&result)) {
    spec->template_object = job_internal::NormalizeTemplate(std::move(TemplateOf(owned, form)));
    if (form != Form::kGantry) spec->template_path.clear();
    job_internal::QuantityNumbersToStrings(*spec);
  }
  return result;
}

std::variant<JobSpec, DocumentError> ParseJobJson(const nlohmann::json& doc,
                                                  std::optional<std::string_view> path_namespace) {
  Form form = Form::kUnsupported;
  std::variant<JobSpec, DocumentError> result = ReadDocument(doc, path_namespace, form);
  if (auto* spec = std::get_if<JobSpec>(&result)) {
    spec->template_object = job_internal::NormalizeTemplate(TemplateOf(doc, form));
    if (form != Form::kGantry) spec->template_path.clear();
    job_internal::QuantityNumbersToStrings(*spec);
  }
  return result;
}

}  // namespace gantry
