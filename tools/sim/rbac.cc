#include "rbac.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "kube_api.h"

namespace gantry::sim {
namespace {

bool Names(const std::vector<std::string>& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& x) { return x == "*" || x == value; });
}

Result<std::vector<std::string>> Strings(const YAML::Node& node, const std::string& at) {
  if (!node || node.IsNull()) return std::vector<std::string>{};
  if (!node.IsSequence()) return Status::Invalid(at + ": must be a list");
  std::vector<std::string> out;
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) return Status::Invalid(at + ": must hold strings");
    out.push_back(item.as<std::string>());
  }
  return out;
}

}  // namespace

RequestAttributes AttributesOf(const http::Request& req) {
  RequestAttributes a;
  const std::vector<std::string> seg = PathSegments(req.path);
  std::size_t i;  // the resource's segment
  if (!seg.empty() && seg[0] == "api" && seg.size() >= 2) {
    i = 2;
  } else if (!seg.empty() && seg[0] == "apis" && seg.size() >= 3) {
    a.group = seg[1];
    i = 3;
  } else {
    return a;  // not a resource: /readyz, /version, /api, /apis, /apis/GROUP
  }
  // As the API server's RequestInfoFactory: /namespaces/NS/... names the
  // namespace, and the resource after it, unless that is a namespace's own
  // subresource (status, finalize): /api/v1/namespaces/NS is the
  // namespace NS itself, in its own namespace.
  if (i + 1 < seg.size() && seg[i] == "namespaces") {
    a.ns = seg[i + 1];
    if (i + 2 < seg.size() && seg[i + 2] != "status" && seg[i + 2] != "finalize") i += 2;
  }
  if (i >= seg.size()) return a;  // discovery of a group version
  a.resource_request = true;
  a.resource = seg[i];
  const bool one = i + 1 < seg.size();
  if (one) a.name = seg[i + 1];
  if (i + 2 < seg.size()) a.resource += "/" + seg[i + 2];
  const auto watch = req.Query("watch");
  if (req.method == "GET" || req.method == "HEAD") {
    a.verb = one ? "get" : watch && (*watch == "true" || *watch == "1") ? "watch" : "list";
  } else if (req.method == "POST") {
    a.verb = "create";
  } else if (req.method == "PUT") {
    a.verb = "update";
  } else if (req.method == "PATCH") {
    a.verb = "patch";
  } else if (req.method == "DELETE") {
    a.verb = one ? "delete" : "deletecollection";
  } else {
    a.verb = req.method;
  }
  return a;
}

Result<Rbac> Rbac::Parse(const std::string& yaml_text) {
  Rbac out;
  try {
    std::map<std::string, std::vector<RbacRule>> roles;  // ClusterRoles by name
    std::set<std::string> bound;                         // ClusterRoles a ClusterRoleBinding names
    for (const YAML::Node& doc : YAML::LoadAll(yaml_text)) {
      if (!doc.IsMap() || !doc["kind"]) continue;
      const std::string kind = doc["kind"].as<std::string>("");
      if (kind == "ClusterRoleBinding") {
        const YAML::Node ref = doc["roleRef"];
        if (ref && ref.IsMap() && ref["kind"].as<std::string>("") == "ClusterRole") {
          bound.insert(ref["name"].as<std::string>(""));
        }
        continue;
      }
      if (kind != "ClusterRole") continue;  // Roles and RoleBindings: namespaced, not modelled
      const std::string name = doc["metadata"] && doc["metadata"].IsMap() ? doc["metadata"]["name"].as<std::string>("") : "";
      const YAML::Node rules = doc["rules"];
      if (!rules || !rules.IsSequence()) return Status::Invalid(fmt::format("ClusterRole {}: rules: must be a list", name));
      std::vector<RbacRule>& into = roles[name];
      for (std::size_t r = 0; r < rules.size(); ++r) {
        const std::string at = fmt::format("ClusterRole {}: rules[{}]", name, r);
        if (!rules[r].IsMap()) return Status::Invalid(at + ": must be a mapping");
        RbacRule rule;
        // Limited to named objects: no list, watch or create (Allows).
        if (rules[r]["resourceNames"]) {
          auto names = Strings(rules[r]["resourceNames"], at + ".resourceNames");
          if (!names.ok()) return names.status();
          if (names->empty()) return Status::Invalid(at + ".resourceNames: must name an object");
          rule.resource_names = std::move(*names);
        }
        auto groups = Strings(rules[r]["apiGroups"], at + ".apiGroups");
        auto resources = Strings(rules[r]["resources"], at + ".resources");
        auto verbs = Strings(rules[r]["verbs"], at + ".verbs");
        if (!groups.ok()) return groups.status();
        if (!resources.ok()) return resources.status();
        if (!verbs.ok()) return verbs.status();
        rule.api_groups = std::move(*groups);
        rule.resources = std::move(*resources);
        rule.verbs = std::move(*verbs);
        into.push_back(std::move(rule));
      }
    }
    for (const std::string& name : bound) {
      auto role = roles.find(name);
      if (role == roles.end()) continue;  // bound, but defined elsewhere: nothing known of it
      out.rules_.insert(out.rules_.end(), role->second.begin(), role->second.end());
    }
  } catch (const YAML::Exception& e) {
    return Status::Invalid(fmt::format("line {}: {}", e.mark.line + 1, e.msg));
  }
  if (out.rules_.empty()) return Status::Invalid("no ClusterRole with rules that a ClusterRoleBinding binds");
  return out;
}

bool Rbac::Allows(const RequestAttributes& a) const {
  if (!a.resource_request) return true;
  return std::any_of(rules_.begin(), rules_.end(), [&](const RbacRule& r) {
    if (!r.resource_names.empty() &&
        (a.name.empty() || std::find(r.resource_names.begin(), r.resource_names.end(), a.name) ==
                               r.resource_names.end())) {
      return false;
    }
    return Names(r.api_groups, a.group) && Names(r.resources, a.resource) && Names(r.verbs, a.verb);
  });
}

std::string Rbac::Refusal(const RequestAttributes& a) {
  std::string where = a.ns.empty() ? "at the cluster scope" : fmt::format("in the namespace \"{}\"", a.ns);
  return fmt::format("{}{} is forbidden: User \"gantry\" cannot {} resource \"{}\" in API group \"{}\" {} (gantry-sim)",
                     a.resource.substr(0, a.resource.find('/')), a.group.empty() ? "" : "." + a.group, a.verb,
                     a.resource, a.group, where);
}

}  // namespace gantry::sim
