// Submission's check of the fields of a job's pod template that the worker's
// API server validates and gantry does not otherwise read: refused here, with
// the field, rather than taken, leased, and failed when the cluster refuses
// the real job (422) after the job has waited for its admission. The rules
// are the API server's (k8s.io/kubernetes pkg/apis/core/validation) for what
// users most often get wrong; what they do not cover the cluster still
// judges.
#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>
#include <string>

#include "gantry/common/ascii.h"
#include "gantry/common/names.h"
#include "pod_list_checks.h"
#include "spec_fields.h"

namespace gantry::job_internal {
namespace {

// Kubernetes' TotalAnnotationSizeLimitB: keys and values together.
constexpr std::size_t kAnnotationsLimit = 256 * 1024;

// IANA_SVC_NAME, a port's name: at most 15 lower-case letters, digits and
// '-', at least one letter, no '-' first, last or twice in a row.
std::string CheckPortName(const std::string& name) {
  if (name.size() > 15) return "must be no more than 15 characters";
  bool letter = false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
    }
    letter |= c >= 'a' && c <= 'z';
  }
  if (!letter) return "must contain at least one letter (a-z)";
  if (name.front() == '-' || name.back() == '-') return "must not begin or end with a hyphen";
  if (name.find("--") != std::string::npos) return "must not contain consecutive hyphens";
  return "";
}

// An environment variable's name: printable ASCII but '=' (the API
// server's rule since RelaxedEnvironmentVariableValidation).
std::string CheckEnvName(const std::string& name) {
  if (name.empty()) return "Required value";
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e || c == '=') return fmt::format("Invalid value: \"{}\": must consist of printable ASCII "
                                                             "characters except '='", name);
  }
  return "";
}

const json* StringAt(const json& obj, const char* key) {
  const json* v = Member(obj, key);
  return v != nullptr && v->is_string() ? v : nullptr;
}

// A map of labels (the template's labels, a nodeSelector) at field: label
// keys, and string values that are label values; a null value is "" (as
// `team:` in YAML, which the API server takes).
void CheckLabelMap(const json& map, const std::string& field, FieldErrors& errors) {
  for (const auto& [k, v] : map.items()) {
    if (std::string e = CheckLabelKey(k); !e.empty()) {
      errors.Add(Key(field, k), fmt::format("Invalid label key: {}", e));
    } else if (v.is_string()) {
      if (std::string ve = CheckLabelValue(v.get_ref<const std::string&>()); !ve.empty()) {
        errors.Add(Key(field, k), fmt::format("Invalid value: \"{}\": {}", v.get_ref<const std::string&>(), ve));
      }
    } else if (!v.is_null()) {
      errors.Add(Key(field, k), fmt::format("must be a string, got {}", TypeName(v)));
    }
  }
}

void CheckContainer(const json& c, const std::string& cpath, const std::set<std::string>& volumes,
                    FieldErrors& errors) {
  // A port's name is unique in its container (in the pod, a repeat is only
  // the API server's warning); an entry repeated whole is one, as gantry
  // writes it (DropRepeatedListKeys).
  std::map<std::string, const json*> port_names;
  if (const json* name = StringAt(c, "name"); name != nullptr && !name->get_ref<const std::string&>().empty()) {
    const std::string& n = name->get_ref<const std::string&>();
    if (std::string e = CheckDns1123Label(n); !e.empty()) {
      errors.Add(Child(cpath, "name"), fmt::format("Invalid value: \"{}\": a container's name {}", n, e));
    }
  }
  if (const json* image = StringAt(c, "image")) {
    const std::string& i = image->get_ref<const std::string&>();
    if (!i.empty() && (std::isspace(static_cast<unsigned char>(i.front())) ||
                       std::isspace(static_cast<unsigned char>(i.back())))) {
      errors.Add(Child(cpath, "image"), "Invalid value: must not have leading or trailing whitespace");
    }
  }
  if (const json* policy = StringAt(c, "imagePullPolicy")) {
    const std::string& v = policy->get_ref<const std::string&>();
    if (v != "Always" && v != "Never" && v != "IfNotPresent") {
      errors.Add(Child(cpath, "imagePullPolicy"), UnsupportedValue(v, {"Always", "IfNotPresent", "Never"}));
    }
  }
  // A container's command and args are lists of strings (a string given
  // whole would be taken apart by no one: the API server refuses it). A
  // null item is refused too: a Job's API server would read it as "", but
  // the Workload copy's schema (items of type string) refuses it, so such
  // a job could be dispatched nowhere.
  for (const char* list : {"command", "args"}) {
    const json* v = Member(c, list);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_array()) {
      errors.Add(Child(cpath, list), fmt::format("must be a list of strings, got {}", TypeName(*v)));
      continue;
    }
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) {
        errors.Add(Index(Child(cpath, list), i), fmt::format("must be a string, got {}", TypeName((*v)[i])));
      }
    }
  }
  if (const json* env = Member(c, "env"); env != nullptr && env->is_array()) {
    for (std::size_t i = 0; i < env->size(); ++i) {
      const json* name = StringAt((*env)[i], "name");
      if (name == nullptr) continue;  // the list's own reader says so
      if (std::string e = CheckEnvName(name->get<std::string>()); !e.empty()) {
        errors.Add(Child(Index(Child(cpath, "env"), i), "name"), e);
      }
      if (const json* v = Member((*env)[i], "value"); v != nullptr && !v->is_string() && !v->is_null()) {
        errors.Add(Child(Index(Child(cpath, "env"), i), "value"),
                   fmt::format("must be a string, got {}", TypeName(*v)));
      }
      const json* value = StringAt((*env)[i], "value");
      if (value != nullptr && !value->get_ref<const std::string&>().empty() &&
          Member((*env)[i], "valueFrom") != nullptr) {
        errors.Add(Child(Index(Child(cpath, "env"), i), "valueFrom"),
                   "Invalid value: may not be specified when `value` is not empty");
      }
    }
  }
  if (const json* ports = Member(c, "ports"); ports != nullptr && ports->is_array()) {
    for (std::size_t i = 0; i < ports->size(); ++i) {
      const json& p = (*ports)[i];
      const std::string ppath = Index(Child(cpath, "ports"), i);
      if (!p.is_object()) continue;
      const json* port = Member(p, "containerPort");
      if (port == nullptr) {
        errors.Add(Child(ppath, "containerPort"), "Required value");
      } else if (!port->is_number_integer()) {
        errors.Add(Child(ppath, "containerPort"), fmt::format("must be an integer, got {}", TypeName(*port)));
      } else if (const int64_t v = port->get<int64_t>(); v < 1 || v > 65535) {
        errors.Add(Child(ppath, "containerPort"),
                   fmt::format("Invalid value: {}: must be between 1 and 65535, inclusive", v));
      }
      if (const json* host = Member(p, "hostPort"); host != nullptr && host->is_number_integer()) {
        if (const int64_t v = host->get<int64_t>(); v < 0 || v > 65535) {  // 0: none
          errors.Add(Child(ppath, "hostPort"),
                     fmt::format("Invalid value: {}: must be between 1 and 65535, inclusive", v));
        }
      }
      if (const json* protocol = StringAt(p, "protocol")) {
        const std::string& v = protocol->get_ref<const std::string&>();
        if (v != "TCP" && v != "UDP" && v != "SCTP") {
          errors.Add(Child(ppath, "protocol"), UnsupportedValue(v, {"SCTP", "TCP", "UDP"}));
        }
      }
      const json* name = StringAt(p, "name");
      if (name == nullptr || name->get_ref<const std::string&>().empty()) continue;
      const std::string& n = name->get_ref<const std::string&>();
      if (std::string e = CheckPortName(n); !e.empty()) {
        errors.Add(Child(ppath, "name"), fmt::format("Invalid value: \"{}\": {}", n, e));
      } else if (auto [it, fresh] = port_names.emplace(n, &p); !fresh && *it->second != p) {
        errors.Add(Child(ppath, "name"), fmt::format("Duplicate value: \"{}\"", n));
      }
    }
  }
  if (const json* mounts = Member(c, "volumeMounts"); mounts != nullptr && mounts->is_array()) {
    std::set<std::string> paths;  // a container mounts one volume at a path
    for (std::size_t i = 0; i < mounts->size(); ++i) {
      const std::string mpath = Index(Child(cpath, "volumeMounts"), i);
      if (!(*mounts)[i].is_object()) continue;
      const json* path = StringAt((*mounts)[i], "mountPath");
      if (path == nullptr || path->get_ref<const std::string&>().empty()) {
        errors.Add(Child(mpath, "mountPath"), "Required value");
      } else if (!paths.insert(path->get<std::string>()).second) {
        errors.Add(Child(mpath, "mountPath"), fmt::format("Invalid value: \"{}\": must be unique",
                                                          path->get<std::string>()));
      }
      const json* name = StringAt((*mounts)[i], "name");
      if (name == nullptr || volumes.count(name->get<std::string>())) continue;
      errors.Add(Child(mpath, "name"),
                 fmt::format("Not found: \"{}\": no volume of the pod has that name", name->get<std::string>()));
    }
  }
}

}  // namespace

void CheckMetadataMaps(const json& object, std::string_view path, FieldErrors& errors) {
  if (const json* metadata = Member(object, "metadata"); metadata != nullptr && metadata->is_object()) {
    const std::string mpath = Child(path, "metadata");
    if (const json* labels = Member(*metadata, "labels"); labels != nullptr && labels->is_object()) {
      CheckLabelMap(*labels, Child(mpath, "labels"), errors);
    }
    if (const json* annotations = Member(*metadata, "annotations");
        annotations != nullptr && annotations->is_object()) {
      std::size_t total = 0;
      for (const auto& [k, v] : annotations->items()) {
        total += k.size() + (v.is_string() ? v.get_ref<const std::string&>().size() : 0);
        if (!v.is_string() && !v.is_null()) {
          errors.Add(Key(Child(mpath, "annotations"), k), fmt::format("must be a string, got {}", TypeName(v)));
        }
        // The API server judges an annotation's key in lower case.
        if (std::string e = CheckLabelKey(ToLowerAscii(k)); !e.empty()) {
          errors.Add(Key(Child(mpath, "annotations"), k), fmt::format("Invalid annotation key: {}", e));
        }
      }
      if (total > kAnnotationsLimit) {
        errors.Add(Child(mpath, "annotations"),
                   fmt::format("Too long: {} bytes of keys and values, must have at most {} bytes", total,
                               kAnnotationsLimit));
      }
    }
  }
}

void CheckPodFields(const json& pod_template, std::string_view path, FieldErrors& errors) {
  CheckMetadataMaps(pod_template, path, errors);
  const json* spec = Member(pod_template, "spec");
  if (spec == nullptr || !spec->is_object()) return;
  const std::string spath = Child(path, "spec");
  std::set<std::string> volumes;
  if (const json* list = Member(*spec, "volumes"); list != nullptr && list->is_array()) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const json* name = StringAt((*list)[i], "name");
      if (name == nullptr) continue;
      const std::string& n = name->get_ref<const std::string&>();
      const std::string vpath = Child(Index(Child(spath, "volumes"), i), "name");
      if (std::string e = CheckDns1123Label(n); !e.empty()) {
        errors.Add(vpath, fmt::format("Invalid value: \"{}\": a volume's name {}", n, e));
      } else if (!volumes.insert(n).second) {
        errors.Add(vpath, fmt::format("Duplicate value: \"{}\"", n));
      }
    }
  }
  if (const json* selector = Member(*spec, "nodeSelector"); selector != nullptr && selector->is_object()) {
    CheckLabelMap(*selector, Child(spath, "nodeSelector"), errors);
  }
  if (const json* account = StringAt(*spec, "serviceAccountName");
      account != nullptr && !account->get_ref<const std::string&>().empty()) {
    if (std::string e = CheckDns1123Subdomain(account->get_ref<const std::string&>()); !e.empty()) {
      errors.Add(Child(spath, "serviceAccountName"),
                 fmt::format("Invalid value: \"{}\": {}", account->get_ref<const std::string&>(), e));
    }
  }
  for (const char* key : {"containers", "initContainers"}) {
    const json* list = Member(*spec, key);
    if (list == nullptr || !list->is_array()) continue;
    for (std::size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].is_object()) CheckContainer((*list)[i], Index(Child(spath, key), i), volumes, errors);
    }
  }
}

}  // namespace gantry::job_internal
