#include "pod_template_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <utility>

namespace gantry::sim {
namespace {

using nlohmann::json;

// A keyed list: its key's members, each with the default the API server
// fills in before it compares (null: none).
struct KeyedList {
  const char* field;
  std::vector<std::pair<const char*, json>> keys;
};

const KeyedList kPodLists[] = {
    {"containers", {{"name", nullptr}}},
    {"initContainers", {{"name", nullptr}}},
    {"hostAliases", {{"ip", nullptr}}},
    {"imagePullSecrets", {{"name", nullptr}}},
    {"resourceClaims", {{"name", nullptr}}},
    {"schedulingGates", {{"name", nullptr}}},
    {"topologySpreadConstraints", {{"topologyKey", nullptr}, {"whenUnsatisfiable", nullptr}}},
    {"volumes", {{"name", nullptr}}},
};
const KeyedList kContainerLists[] = {
    {"env", {{"name", nullptr}}},
    {"ports", {{"containerPort", nullptr}, {"protocol", "TCP"}}},
    {"volumeMounts", {{"mountPath", nullptr}}},
    {"volumeDevices", {{"devicePath", nullptr}}},
};
const KeyedList kResourceClaims = {"claims", {{"name", nullptr}}};

const json* ArrayAt(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? &*it : nullptr;
}

// A key as Go's %#v prints the map the API server reports it with (keys
// sorted, integers bare): map[string]interface {}{"containerPort":80, "protocol":"TCP"}.
std::string GoMap(const json& key) {
  std::string out = "map[string]interface {}{";
  bool first = true;
  for (const auto& [name, value] : key.items()) {
    out += fmt::format("{}\"{}\":{}", first ? "" : ", ", name, value.dump());
    first = false;
  }
  return out + "}";
}

void CheckKeys(const json& obj, const KeyedList& list, const std::string& path,
               std::vector<std::string>& out) {
  const json* entries = ArrayAt(obj, list.field);
  if (entries == nullptr) return;
  std::set<json> seen;
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const json& entry = (*entries)[i];
    if (!entry.is_object()) continue;
    json key = json::object();
    for (const auto& [member, fallback] : list.keys) {
      auto it = entry.find(member);
      key[member] = it != entry.end() && !it->is_null() ? *it : fallback;
    }
    if (!seen.insert(key).second) {
      out.push_back(fmt::format("{}.{}[{}]: Duplicate value: {}", path, list.field, i, GoMap(key)));
    }
  }
}

std::string_view JsonTypeName(const json& v) {
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  return "null";
}

// An int-or-string map (resources.requests, overhead): the API server takes
// an integer (2.0 decodes as one) or a string.
void CheckQuantities(const json& obj, const char* key, const std::string& path,
                     std::vector<std::string>& out) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_object()) return;
  for (const auto& [name, value] : obj[key].items()) {
    if (value.is_string() || value.is_number_integer() || value.is_null()) continue;
    if (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>()) continue;
    const std::string field = fmt::format("{}.{}.{}", path, key, name);
    out.push_back(fmt::format(
        "{0}: Invalid value: \"{1}\": {0} in body must be of type integer,string: \"{1}\"", field,
        JsonTypeName(value)));
  }
}

}  // namespace

std::vector<std::string> PodTemplateProblems(const json& pod_template, const std::string& path) {
  std::vector<std::string> out;
  if (!pod_template.is_object() || !pod_template.contains("spec")) return out;
  const json& spec = pod_template["spec"];
  const std::string spath = path + ".spec";
  for (const KeyedList& list : kPodLists) CheckKeys(spec, list, spath, out);
  CheckQuantities(spec, "overhead", spath, out);
  for (const char* containers : {"containers", "initContainers"}) {
    const json* list = ArrayAt(spec, containers);
    if (list == nullptr) continue;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const json& c = (*list)[i];
      const std::string cpath = fmt::format("{}.{}[{}]", spath, containers, i);
      for (const KeyedList& keyed : kContainerLists) CheckKeys(c, keyed, cpath, out);
      if (!c.is_object() || !c.contains("resources")) continue;
      const json& resources = c["resources"];
      CheckKeys(resources, kResourceClaims, cpath + ".resources", out);
      CheckQuantities(resources, "requests", cpath + ".resources", out);
      CheckQuantities(resources, "limits", cpath + ".resources", out);
    }
  }
  return out;
}

}  // namespace gantry::sim
