#include "validation.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "gantry/common/json_path.h"
#include "gantry/common/names.h"
#include "object_store.h"
#include "pod_template_checks.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

struct Errors {
  std::vector<std::string> list;
  void Add(std::string field, std::string msg) { list.push_back(field + ": " + msg); }
  Status ToStatus(const std::string& kind, const std::string& name) const {
    if (list.empty()) return Status::Ok();
    std::string joined;
    for (const std::string& e : list) joined += (joined.empty() ? "" : ", ") + e;
    if (list.size() > 1) joined = "[" + joined + "]";
    return Status::Invalid(fmt::format("{} \"{}\" is invalid: {}", kind, name, joined));
  }
};

std::string KindOf(const json& o) {
  std::string kind = o.value("kind", "Workload");
  return kind == "Workload" ? "Workload.kueue.x-k8s.io" : kind;
}

// An optional integer >= 0 at o[key].
void CheckCount(const json& o, const char* key, const std::string& at, Errors& e) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) e.Add(at + key, "must be an integer >= 0");
}

// An optional object at o[key]: nullptr when absent, or not an object (an error).
const json* OptionalObject(const json& o, const char* key, const std::string& at, Errors& e) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  if (!it->is_object()) {
    e.Add(at + key, "must be an object");
    return nullptr;
  }
  return &*it;
}

// A JobSet's spec.replicatedJobs: a list of objects with integer replicas
// and a template whose spec has an integer parallelism.
void CheckReplicatedJobs(const json& spec, Errors& e) {
  auto rjs = spec.find("replicatedJobs");
  if (rjs == spec.end() || rjs->is_null()) return;
  if (!rjs->is_array()) {
    e.Add("spec.replicatedJobs", "must be a list");
    return;
  }
  for (std::size_t i = 0; i < rjs->size(); ++i) {
    const std::string at = fmt::format("spec.replicatedJobs[{}]", i);
    const json& rj = (*rjs)[i];
    if (!rj.is_object()) {
      e.Add(at, "must be an object");
      continue;
    }
    CheckCount(rj, "replicas", at + ".", e);
    const json* t = OptionalObject(rj, "template", at + ".", e);
    const json* ts = t ? OptionalObject(*t, "spec", at + ".template.", e) : nullptr;
    if (ts) CheckCount(*ts, "parallelism", at + ".template.spec.", e);
  }
}

// Whether version `version` of the Workload CRD has preemption gates.
bool HasPreemptionGates(std::string_view version) { return version != "v1beta1"; }

// parent.preemptionGates, a list-map keyed by name (the CRD's messages for
// its limits); with_state: a status list, whose items also need a position
// and a lastTransitionTime.
void CheckPreemptionGates(const json& parent, const std::string& at, bool with_state, Errors& e) {
  auto gates = parent.find("preemptionGates");
  if (gates == parent.end() || gates->is_null()) return;
  if (!gates->is_array()) {
    e.Add(at, "Invalid value: must be a list");
    return;
  }
  if (gates->size() > kMaxPreemptionGates) {
    e.Add(at, fmt::format("Too many: {}: must have at most {} items", gates->size(), kMaxPreemptionGates));
    return;
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < gates->size(); ++i) {
    const std::string path = fmt::format("{}[{}]", at, i);
    const json& gate = (*gates)[i];
    if (!gate.is_object()) {
      e.Add(path, "Invalid value: must be an object");
      continue;
    }
    auto name = gate.find("name");
    if (name == gate.end() || !name->is_string()) {
      e.Add(path + ".name", "Required value");
    } else if (const std::string& n = name->get_ref<const std::string&>(); n.empty()) {
      e.Add(path + ".name", "Invalid value: \"\": should be at least 1 chars long");
    } else if (n.size() > kMaxPreemptionGateName) {
      e.Add(path + ".name", fmt::format("Too long: may not be more than {} bytes", kMaxPreemptionGateName));
    } else if (!seen.insert(n).second) {
      e.Add(path + ".name", fmt::format("Duplicate value: \"{}\"", n));
    }
    if (!with_state) continue;
    auto position = gate.find("position");
    if (position == gate.end() || position->is_null()) {
      e.Add(path + ".position", "Required value");
    } else if (*position != "Open" && *position != "Closed") {
      e.Add(path + ".position", fmt::format("Unsupported value: {}: supported values: \"Closed\", \"Open\"",
                                            position->dump()));
    }
    auto time = gate.find("lastTransitionTime");
    if (time == gate.end() || time->is_null()) {
      e.Add(path + ".lastTransitionTime", "Required value");
    } else if (!time->is_string() || !ParseRfc3339(time->get_ref<const std::string&>())) {
      e.Add(path + ".lastTransitionTime",
            fmt::format("Invalid value: {}: must be an RFC 3339 date-time", time->dump()));
    }
  }
}

// A Job's pods restart OnFailure or Never (the API server defaults an unset
// restartPolicy to Always first), and only Never with a podFailurePolicy.
void CheckJobRestartPolicy(const json& spec, Errors& e) {
  const json* pod_spec = spec.is_object() ? JsonAt(spec, {"template", "spec"}) : nullptr;
  if (!pod_spec || !pod_spec->is_object()) return;
  auto given = pod_spec->find("restartPolicy");
  const bool unset = given == pod_spec->end() || given->is_null() || *given == "";
  const std::string policy = unset ? "Always" : given->is_string() ? given->get<std::string>() : given->dump();
  const char* field = "spec.template.spec.restartPolicy";
  if (policy != "OnFailure" && policy != "Never") {
    e.Add(field, fmt::format("Unsupported value: \"{}\": supported values: \"OnFailure\", \"Never\"", policy));
  } else if (spec.contains("podFailurePolicy") && !spec["podFailurePolicy"].is_null() && policy != "Never") {
    e.Add(field, fmt::format("Invalid value: \"{}\": only \"Never\" is supported when podFailurePolicy is specified",
                             policy));
  }
}

}  // namespace

Status ValidateRunnable(const ResourceInfo& res, const json& object) {
  Errors e;
  const json& meta = MemberOr(object, "metadata", EmptyObject());
  const std::string name = meta.is_object() ? meta.value("name", "") : "";
  const json* spec = OptionalObject(object, "spec", "", e);
  if (!spec && e.list.empty()) e.Add("spec", "Required value");
  if (spec) {
    auto suspend = spec->find("suspend");
    if (suspend != spec->end() && !suspend->is_null() && !suspend->is_boolean()) {
      e.Add("spec.suspend", "must be a boolean");
    }
    if (res.plural == "jobs") {
      CheckCount(*spec, "parallelism", "spec.", e);
      CheckCount(*spec, "completions", "spec.", e);
      CheckJobRestartPolicy(*spec, e);
    } else if (res.plural == "trainjobs") {
      if (const json* trainer = OptionalObject(*spec, "trainer", "spec.", e)) CheckCount(*trainer, "numNodes", "spec.trainer.", e);
    } else if (res.plural == "jobsets") {
      CheckReplicatedJobs(*spec, e);
    }
  }
  return e.ToStatus(res.kind + "." + res.group, name);
}

namespace {

// The reasons IsDNS1035Label gives, or "" for a valid label.
std::string Dns1035Problem(const std::string& name) {
  if (name.size() > 63) return "must be no more than 63 characters";
  const bool ok = !name.empty() && name.front() >= 'a' && name.front() <= 'z' &&
                  std::isalnum(static_cast<unsigned char>(name.back())) &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                  });
  if (ok) return "";
  return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
         "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
         "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
}

int64_t CountOr(const json& o, const char* key, int64_t fallback) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

}  // namespace

Status JobSetWebhook(const json& object) {
  const std::string name = JsonStringAt(object, {"metadata", "name"});
  const json* rjs = JsonAt(object, {"spec", "replicatedJobs"});
  if (!rjs || !rjs->is_array()) return Status::Ok();
  std::vector<std::string> problems;
  for (const json& rj : *rjs) {
    if (!rj.is_object()) continue;
    const std::string rj_name = JsonStringAt(rj, {"name"});
    const int64_t replicas = CountOr(rj, "replicas", 1);
    const std::string job = fmt::format("{}-{}-{}", name, rj_name, replicas - 1);
    if (std::string p = Dns1035Problem(job); !p.empty()) {
      problems.push_back(job.size() > 63 ? "JobSet name is too long, job names generated for this JobSet will "
                                           "exceed 63 characters"
                                         : p);
      continue;
    }
    const json* spec = JsonAt(rj, {"template", "spec"});
    if (!spec || !spec->is_object() || JsonStringAt(*spec, {"completionMode"}) != "Indexed") continue;
    if (!spec->contains("completions")) continue;
    const std::string pod = fmt::format("{}-{}-abcde", job, CountOr(*spec, "completions", 1) - 1);
    if (std::string p = Dns1035Problem(pod); !p.empty()) {
      problems.push_back(pod.size() > 63 ? "JobSet name is too long, pod names generated for this JobSet will "
                                           "exceed 63 characters"
                                         : p);
    }
  }
  if (problems.empty()) return Status::Ok();
  std::string joined;
  for (const std::string& p : problems) joined += (joined.empty() ? "" : "\n") + p;
  return Status(Code::kPermissionDenied,
                fmt::format("admission webhook \"vjobset.kb.io\" denied the request: {}", joined));
}

Status ValidateMetadata(const ResourceInfo& res, const json& object) {
  Errors e;
  if (!object.is_object()) return Status::Invalid("the body must be a JSON object");
  const json& md = MemberOr(object, "metadata", EmptyObject());
  std::string name = md.is_object() ? md.value("name", "") : "";
  if (name.empty()) {
    e.Add("metadata.name", "Required value: name or generateName is required");
  } else if (std::string err = CheckDns1123Subdomain(name); !err.empty()) {
    e.Add("metadata.name", fmt::format("Invalid value: \"{}\": {}", name, err));
  }
  std::string ns = md.is_object() ? md.value("namespace", "") : "";
  if (res.namespaced && !ns.empty()) {
    if (std::string err = CheckDns1123Label(ns); !err.empty()) {
      e.Add("metadata.namespace", fmt::format("Invalid value: \"{}\": {}", ns, err));
    }
  }
  return e.ToStatus(res.kind, name);
}

Status ValidateWorkload(const json& wl, std::string_view version) {
  Errors e;
  std::string name = wl["metadata"].value("name", "");
  const json& spec = MemberOr(wl, "spec", EmptyObject());
  if (!spec.is_object()) return Status::Invalid(fmt::format("Workload.kueue.x-k8s.io \"{}\" is invalid: spec: must be an object", name));
  if (!spec.contains("queueName") || !spec["queueName"].is_string() || spec["queueName"].get<std::string>().empty()) {
    e.Add("spec.queueName", "Required value");
  } else if (std::string err = CheckDns1123Subdomain(spec["queueName"].get<std::string>()); !err.empty()) {
    e.Add("spec.queueName", "Invalid value: " + err);
  }
  static const json kNone;
  const json& sets = MemberOr(spec, "podSets", kNone);
  if (!sets.is_array() || sets.empty()) {
    e.Add("spec.podSets", "Required value: must have at least 1 item");
  } else if (sets.size() > kMaxPodSets) {
    e.Add("spec.podSets", fmt::format("Too many: {}: must have at most {} items", sets.size(), kMaxPodSets));
  } else {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < sets.size(); ++i) {
      std::string path = fmt::format("spec.podSets[{}]", i);
      const json& ps = sets[i];
      if (!ps.is_object()) {
        e.Add(path, "Invalid value: must be an object");
        continue;
      }
      std::string ps_name = ps.value("name", "main");
      if (!ps.contains("name") || !ps["name"].is_string()) {
        e.Add(path + ".name", "Required value");
      } else if (std::string err = CheckDns1123Label(ps_name, 63); !err.empty()) {
        e.Add(path + ".name", fmt::format("Invalid value: \"{}\": {}", ps_name, err));
      } else if (!seen.insert(ps_name).second) {
        e.Add(path + ".name", fmt::format("Duplicate value: \"{}\"", ps_name));
      }
      if (!ps.contains("count") || !ps["count"].is_number_integer()) {
        e.Add(path + ".count", "Required value: an integer");
      } else if (ps["count"].get<int64_t>() < 0) {
        e.Add(path + ".count", fmt::format("Invalid value: {}: should be greater than or equal to 0",
                                           ps["count"].get<int64_t>()));
      }
      if (!ps.contains("template") || !ps["template"].is_object()) {
        e.Add(path + ".template", "Required value");
      } else {
        for (std::string& problem : PodTemplateProblems(ps["template"], path + ".template")) {
          e.list.push_back(std::move(problem));
        }
      }
    }
  }
  if (spec.contains("priority") && !spec["priority"].is_number_integer()) {
    e.Add("spec.priority", "Invalid value: must be an integer");
  }
  if (HasPreemptionGates(version)) CheckPreemptionGates(spec, "spec.preemptionGates", false, e);
  return e.ToStatus(KindOf(wl), name);
}

Status ValidateWorkloadUpdate(const json& old, const json& updated, std::string_view version) {
  Errors e;
  auto cluster = [](const json& o) -> std::string {
    const json& st = o.value("status", json::object());
    return st.is_object() ? st.value("clusterName", "") : "";
  };
  std::string before = cluster(old), after = cluster(updated);
  if (!before.empty() && !after.empty() && before != after) e.Add("status.clusterName", "Invalid value: clusterName is immutable once set");
  const json& status = MemberOr(updated, "status", EmptyObject());
  if (status.is_object() && HasPreemptionGates(version)) {
    CheckPreemptionGates(status, "status.preemptionGates", true, e);
  }
  return e.ToStatus(KindOf(updated), updated["metadata"].value("name", ""));
}

}  // namespace gantry::sim
