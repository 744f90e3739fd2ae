// Validation against the Kueue Workload CRD's openAPIV3Schema, for the tests
// of what gantry writes to workers (remote_objects_test) and of what the
// simulated Kueue writes (sim_test): the upstream CRD is vendored in
// tests/dispatch/testdata/kueue-crds; GANTRY_KUEUE_CRDS=<dir> checks against
// another Kueue release's.
#pragma once

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::testing {

// The structural part of the API server's validation of a custom resource:
// type, nullable, int-or-string, anyOf, enum, required, unknown fields
// (unless additionalProperties or x-kubernetes-preserve-unknown-fields),
// min/maxItems, list-type map/set uniqueness, min/maxLength, pattern (when
// std::regex compiles it), minimum/maximum and the int32 range. Stricter
// than the API server in one way on purpose: defaults are not applied, so a
// required field must be written even when the schema has a default (a
// list-map key left out does count with its default, as the API server
// would find two entries the same). CEL
// rules (x-kubernetes-validations) and string formats are not checked.
class SchemaValidator {
 public:
  using json = nlohmann::json;

  // Every violation as "path: message"; empty when the value is valid.
  std::vector<std::string> Validate(const json& value, const json& schema);
  const std::set<std::string>& skipped_patterns() const { return skipped_patterns_; }

 private:
  void Error(const std::string& path, const std::string& message);
  void Check(const json& v, const json& s, const std::string& path);
  bool AnyMatches(const json& v, const json& alternatives, const std::string& path);
  void CheckObject(const json& v, const json& s, const std::string& path);
  void CheckArray(const json& v, const json& s, const std::string& path);
  void CheckString(const std::string& v, const json& s, const std::string& path);
  void CheckNumber(const json& v, const json& s, const std::string& path);
  const std::optional<std::regex>& Regex(const std::string& pattern);

  std::vector<std::string> errors_;
  std::map<std::string, std::optional<std::regex>> regexes_;
  std::set<std::string> skipped_patterns_;
};

// The openAPIV3Schema of one version ("v1beta1", "v1beta2") of the Workload
// CRD, ObjectMeta filled in (the API server checks it, not the CRD).
const nlohmann::json& WorkloadSchema(const std::string& version);

// Validate()'s errors one a line, "" when none.
std::string Joined(const std::vector<std::string>& errors);

}  // namespace gantry::testing
