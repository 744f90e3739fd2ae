// Rbac: a simulated cluster that grants gantry's token only what a
// ClusterRole's rules allow, as the API server's RBAC authorizer does: a
// request's API group, resource (with its subresource, "workloads/status")
// and verb (get, list, watch, create, update, patch, delete,
// deletecollection) must all be named by one rule, or by "*". Paths that
// are not resources (/readyz, /version, API discovery) are allowed, as
// Kubernetes' default roles allow them to every user.
//
// With it, a test runs gantry under exactly the permissions the manifest it
// ships (config/worker-rbac.yaml) grants.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gantry/common/status.h"
#include "gantry/http/message.h"

namespace gantry::sim {

struct RbacRule {
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> verbs;
  // Non-empty: only requests on one object of these names (a get, update,
  // patch or delete by name), as the API server grants them.
  std::vector<std::string> resource_names;
};

// What RBAC judges of one request.
struct RequestAttributes {
  bool resource_request = false;  // false: a non-resource path, always allowed here
  std::string group;              // "" for the core group
  std::string resource;           // "jobs", "workloads/status"
  std::string verb;
  std::string ns;
  std::string name;  // the object's, for a request on one ("" for a list, watch, create)
};

RequestAttributes AttributesOf(const http::Request& req);

class Rbac {
 public:
  // The rules of the ClusterRoles in a YAML stream that a
  // ClusterRoleBinding of the same stream binds (its subjects are taken to
  // be gantry's token). Namespaced Roles and RoleBindings grant nothing
  // here: gantry's watches span every namespace, and a manifest that leans
  // on them would fail in a real cluster. A rule limited by resourceNames
  // grants requests on those objects by name alone.
  static Result<Rbac> Parse(const std::string& yaml_text);
  bool Allows(const RequestAttributes& a) const;
  // The API server's words for a request it refuses.
  static std::string Refusal(const RequestAttributes& a);

 private:
  std::vector<RbacRule> rules_;
};

}  // namespace gantry::sim
