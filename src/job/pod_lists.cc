// Keyed lists of a pod template: what gantry writes once per key, and what
// submission refuses so that doing so changes nothing. See
// gantry/job/pod_lists.h.
#include "gantry/job/pod_lists.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pod_list_checks.h"

namespace gantry {
namespace {

using nlohmann::json;

// A list whose entries keep the first of each key (env is apart).
struct KeyedList {
  const char* field;
  // The key's members, with the default the API server fills in (null: none).
  std::vector<std::pair<const char*, json>> keys;
};

const KeyedList kPorts = {"ports", {{"containerPort", nullptr}, {"protocol", "TCP"}}};
const KeyedList kPodLists[] = {{"hostAliases", {{"ip", nullptr}}},
                               {"imagePullSecrets", {{"name", nullptr}}}};
constexpr const char* kContainerLists[] = {"containers", "initContainers"};

// The entry with its key's defaults filled in; nullopt when it is not an
// object or lacks a key member (the API server refuses that anyway).
std::optional<json> Defaulted(const json& entry, const KeyedList& list) {
  if (!entry.is_object()) return std::nullopt;
  json out = entry;
  for (const auto& [key, fallback] : list.keys) {
    auto it = out.find(key);
    if (it == out.end() || it->is_null()) {
      if (fallback.is_null()) return std::nullopt;
      out[key] = fallback;
    }
  }
  return out;
}

json Identity(const json& defaulted, const KeyedList& list) {
  json id = json::array();
  for (const auto& [key, fallback] : list.keys) id.push_back(defaulted.at(key));
  return id;
}

// obj[key] when it is an array, else nullptr.
template <typename Json>
Json* ArrayAt(Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? &*it : nullptr;
}

void KeepFirstOfEachKey(json& obj, const KeyedList& list) {
  json* entries = ArrayAt(obj, list.field);
  if (entries == nullptr) return;
  std::set<json> seen;
  for (auto it = entries->begin(); it != entries->end();) {
    std::optional<json> defaulted = Defaulted(*it, list);
    if (defaulted && !seen.insert(Identity(*defaulted, list)).second) {
      it = entries->erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<std::string> EnvName(const json& entry) {
  if (!entry.is_object()) return std::nullopt;
  auto name = entry.find("name");
  if (name == entry.end() || !name->is_string()) return std::nullopt;
  return name->get<std::string>();
}

void KeepLastEnv(json& container) {
  json* env = ArrayAt(container, "env");
  if (env == nullptr) return;
  std::map<std::string, std::size_t> last;
  for (std::size_t i = 0; i < env->size(); ++i) {
    if (auto name = EnvName((*env)[i])) last[*name] = i;
  }
  json kept = json::array();
  for (std::size_t i = 0; i < env->size(); ++i) {
    auto name = EnvName((*env)[i]);
    if (!name || last.at(*name) == i) kept.push_back(std::move((*env)[i]));
  }
  *env = std::move(kept);
}

// The names an env value refers to as $(NAME), as the kubelet expands it
// ("$$" is a literal "$").
std::set<std::string> References(std::string_view value) {
  std::set<std::string> out;
  for (std::size_t i = 0; i + 1 < value.size(); ++i) {
    if (value[i] != '$') continue;
    if (value[i + 1] == '$') {
      ++i;
    } else if (value[i + 1] == '(') {
      std::size_t close = value.find(')', i + 2);
      if (close == std::string_view::npos) break;
      out.emplace(value.substr(i + 2, close - i - 2));
      i = close;
    }
  }
  return out;
}

}  // namespace

void DropRepeatedListKeys(json& pod_template) {
  if (!pod_template.is_object()) return;
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return;
  for (const KeyedList& list : kPodLists) KeepFirstOfEachKey(*spec, list);
  for (const char* list : kContainerLists) {
    json* containers = ArrayAt(*spec, list);
    if (containers == nullptr) continue;
    for (json& container : *containers) {
      KeepLastEnv(container);
      KeepFirstOfEachKey(container, kPorts);
    }
  }
}

namespace job_internal {
namespace {

void CheckEntriesAgree(const json& obj, const KeyedList& list, std::string_view path,
                       FieldErrors& errors) {
  const json* entries = ArrayAt(obj, list.field);
  if (entries == nullptr) return;
  const std::string field = Child(path, list.field);
  std::map<json, std::pair<std::size_t, json>> first;  // identity -> index, defaulted entry
  for (std::size_t i = 0; i < entries->size(); ++i) {
    std::optional<json> defaulted = Defaulted((*entries)[i], list);
    if (!defaulted) continue;
    json id = Identity(*defaulted, list);
    auto [it, inserted] = first.try_emplace(id, i, *defaulted);
    if (inserted || it->second.second == *defaulted) continue;
    std::string keys;
    for (const auto& [key, fallback] : list.keys) {
      keys += fmt::format("{}{}", keys.empty() ? "" : " and ", key);
    }
    errors.Add(
        Index(field, i),
        fmt::format(
            "Duplicate value: the same {} as {} but a different entry: the worker's Workload "
            "copy holds one entry per {}; make them one",
            keys, Index(field, it->second.first), keys));
  }
}

void CheckEnvReferences(const json& container, std::string_view path, FieldErrors& errors) {
  const json* env = ArrayAt(container, "env");
  if (env == nullptr) return;
  std::map<std::string, int> count;
  for (const json& entry : *env) {
    if (auto name = EnvName(entry)) ++count[*name];
  }
  const std::string field = Child(path, "env");
  for (std::size_t i = 0; i < env->size(); ++i) {
    const json* value = Member((*env)[i], "value");
    if (value == nullptr || !value->is_string()) continue;
    for (const std::string& name : References(value->get_ref<const std::string&>())) {
      auto it = count.find(name);
      if (it == count.end() || it->second < 2) continue;
      errors.Add(
          Child(Index(field, i), "value"),
          fmt::format("refers to $({}), which this container's env defines {} times: the worker's "
                      "Workload copy keeps one entry per name (the last), so define it once",
                      name, it->second));
      break;
    }
  }
}

}  // namespace

void CheckRepeatedListKeys(const json& pod_spec, std::string_view spec_path, FieldErrors& errors) {
  for (const KeyedList& list : kPodLists) CheckEntriesAgree(pod_spec, list, spec_path, errors);
  for (const char* list : kContainerLists) {
    const json* containers = ArrayAt(pod_spec, list);
    if (containers == nullptr) continue;
    for (std::size_t i = 0; i < containers->size(); ++i) {
      const std::string path = Index(Child(spec_path, list), i);
      CheckEnvReferences((*containers)[i], path, errors);
      CheckEntriesAgree((*containers)[i], kPorts, path, errors);
    }
  }
}

}  // namespace job_internal
}  // namespace gantry
