// The Kueue Workload CRD and a validator of objects against its schema; see crd_schema.h.
#include "crd_schema.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "gantry/job/job_document.h"

namespace gantry::testing {

using nlohmann::json;

namespace {

bool Flag(const json& s, const char* key) {
  auto it = s.find(key);
  return it != s.end() && it->is_boolean() && it->get<bool>();
}

const json* Member(const json& s, const char* key) {
  auto it = s.find(key);
  return it == s.end() ? nullptr : &*it;
}

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool HasType(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  return false;
}

// The upstream Workload CRD, vendored as test data (testdata/kueue-crds);
// GANTRY_KUEUE_CRDS=<dir> checks against another Kueue release's.
std::string CrdFile() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("GANTRY_KUEUE_CRDS")) dirs.emplace_back(env);
  dirs.emplace_back(GANTRY_KUEUE_CRDS_DIR);
  for (const std::string& dir : dirs) {
    std::string file = dir + "/kueue.x-k8s.io_workloads.yaml";
    if (std::filesystem::exists(file)) return file;
  }
  FAIL("kueue.x-k8s.io_workloads.yaml not found; set GANTRY_KUEUE_CRDS to its directory");
  return "";
}

// The API server checks ObjectMeta itself (the CRD only says "type: object");
// these are its rules for the fields gantry writes.
json ObjectMetaSchema() {
  return json::parse(R"json({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 253,
             "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"},
    "namespace": {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
    "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63,
               "pattern": "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}})json");
}

}  // namespace

std::vector<std::string> SchemaValidator::Validate(const json& value, const json& schema) {
  errors_.clear();
  Check(value, schema, "");
  return errors_;
}

void SchemaValidator::Error(const std::string& path, const std::string& message) {
  errors_.push_back((path.empty() ? "<root>" : path) + ": " + message);
}

void SchemaValidator::Check(const json& v, const json& s, const std::string& path) {
  if (v.is_null()) {
    if (!Flag(s, "nullable")) Error(path, "must not be null");
    return;
  }
  if (Flag(s, "x-kubernetes-int-or-string") && !v.is_number_integer() && !v.is_string()) {
    return Error(path, "must be an integer or a string");
  }
  if (const json* any = Member(s, "anyOf"); any != nullptr && !AnyMatches(v, *any, path)) {
    return Error(path, "matches no schema of anyOf");
  }
  if (const json* type = Member(s, "type");
      type != nullptr && !HasType(v, type->get<std::string>())) {
    return Error(path, "must be of type " + type->get<std::string>() + ", got " + v.type_name());
  }
  if (const json* e = Member(s, "enum");
      e != nullptr && std::find(e->begin(), e->end(), v) == e->end()) {
    Error(path, "Unsupported value: " + v.dump());
  }
  if (v.is_object()) CheckObject(v, s, path);
  if (v.is_array()) CheckArray(v, s, path);
  if (v.is_string()) CheckString(v.get<std::string>(), s, path);
  if (v.is_number()) CheckNumber(v, s, path);
}

bool SchemaValidator::AnyMatches(const json& v, const json& alternatives, const std::string& path) {
  for (const json& alt : alternatives) {
    std::size_t before = errors_.size();
    Check(v, alt, path);
    bool ok = errors_.size() == before;
    errors_.resize(before);
    if (ok) return true;
  }
  return false;
}

void SchemaValidator::CheckObject(const json& v, const json& s, const std::string& path) {
  if (const json* required = Member(s, "required")) {
    for (const json& key : *required) {
      const std::string name = key.get<std::string>();
      if (!v.contains(name)) Error(Child(path, name), "Required value");
    }
  }
  const json* properties = Member(s, "properties");
  const json* additional = Member(s, "additionalProperties");
  bool open = Flag(s, "x-kubernetes-preserve-unknown-fields") ||
              (additional != nullptr && additional->is_boolean() && additional->get<bool>());
  for (const auto& [key, item] : v.items()) {
    if (properties != nullptr && properties->contains(key)) {
      Check(item, (*properties)[key], Child(path, key));
    } else if (additional != nullptr && additional->is_object()) {
      Check(item, *additional, Child(path, key));
    } else if (!open) {
      Error(Child(path, key), "unknown field");
    }
  }
}

void SchemaValidator::CheckArray(const json& v, const json& s, const std::string& path) {
  if (const json* n = Member(s, "maxItems"); n != nullptr && v.size() > n->get<std::size_t>()) {
    Error(path, "Too many: " + std::to_string(v.size()) + ": must have at most " + n->dump());
  }
  if (const json* n = Member(s, "minItems"); n != nullptr && v.size() < n->get<std::size_t>()) {
    Error(path, "must have at least " + n->dump() + " items");
  }
  const json* items = Member(s, "items");
  const json* list_type = Member(s, "x-kubernetes-list-type");
  const json* map_keys = Member(s, "x-kubernetes-list-map-keys");
  std::set<json> seen;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string at = path + "[" + std::to_string(i) + "]";
    if (items != nullptr) Check(v[i], *items, at);
    json identity = v[i];
    if (list_type != nullptr && *list_type == "map" && map_keys != nullptr && v[i].is_object()) {
      identity = json::array();
      for (const json& key : *map_keys) {
        // A key left out counts with its default, as the API server fills
        // it in first: ports {containerPort: 80} and {80, TCP} are one key.
        const std::string name = key.get<std::string>();
        const json* property = items != nullptr ? Member(*items, "properties") : nullptr;
        property = property != nullptr ? Member(*property, name.c_str()) : nullptr;
        const json* fallback = property != nullptr ? Member(*property, "default") : nullptr;
        identity.push_back(v[i].value(name, fallback != nullptr ? *fallback : json()));
      }
    }
    if (list_type != nullptr && *list_type != "atomic" && !seen.insert(identity).second) {
      Error(at, "Duplicate value: " + identity.dump());
    }
  }
}

void SchemaValidator::CheckString(const std::string& v, const json& s, const std::string& path) {
  // Lengths count characters (runes), not bytes.
  std::size_t runes =
      std::count_if(v.begin(), v.end(), [](char c) { return (c & 0xC0) != 0x80; });
  if (const json* n = Member(s, "maxLength"); n != nullptr && runes > n->get<std::size_t>()) {
    Error(path, "Too long: may not be more than " + n->dump() + " bytes");
  }
  if (const json* n = Member(s, "minLength"); n != nullptr && runes < n->get<std::size_t>()) {
    Error(path, "should be at least " + n->dump() + " chars long");
  }
  const json* pattern = Member(s, "pattern");
  if (pattern == nullptr) return;
  const std::optional<std::regex>& re = Regex(pattern->get<std::string>());
  if (re && !std::regex_search(v, *re)) {
    Error(path,
          "Invalid value: \"" + v + "\": should match '" + pattern->get<std::string>() + "'");
  }
}

void SchemaValidator::CheckNumber(const json& v, const json& s, const std::string& path) {
  double d = v.get<double>();
  if (const json* n = Member(s, "minimum"); n != nullptr && d < n->get<double>()) {
    Error(path, "should be greater than or equal to " + n->dump());
  }
  if (const json* n = Member(s, "maximum"); n != nullptr && d > n->get<double>()) {
    Error(path, "should be less than or equal to " + n->dump());
  }
  if (const json* f = Member(s, "format");
      f != nullptr && *f == "int32" && (d < -2147483648.0 || d > 2147483647.0)) {
    Error(path, "out of the int32 range");
  }
}

// Go's RE2 and ECMAScript agree on the patterns Kubernetes uses; one that
// does not compile here is skipped (and listed) rather than guessed at.
const std::optional<std::regex>& SchemaValidator::Regex(const std::string& pattern) {
  auto it = regexes_.find(pattern);
  if (it != regexes_.end()) return it->second;
  std::optional<std::regex> re;
  try {
    re.emplace(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error&) {
    skipped_patterns_.insert(pattern);
  }
  return regexes_.emplace(pattern, std::move(re)).first->second;
}

const json& WorkloadSchema(const std::string& version) {
  static const std::map<std::string, json> schemas = [] {
    std::ifstream in(CrdFile());
    std::stringstream text;
    text << in.rdbuf();
    auto crd = YamlToJson(text.str());
    if (auto* e = std::get_if<DocumentError>(&crd)) FAIL("CRD: " << e->message);
    std::map<std::string, json> out;
    for (const json& v : std::get<json>(crd)["spec"]["versions"]) {
      json schema = v["schema"]["openAPIV3Schema"];
      schema["properties"]["metadata"] = ObjectMetaSchema();
      out[v["name"].get<std::string>()] = std::move(schema);
    }
    return out;
  }();
  auto it = schemas.find(version);
  if (it == schemas.end()) FAIL("the CRD has no version " << version);
  return it->second;
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& e : errors) out += e + "\n";
  return out;
}

}  // namespace gantry::testing
