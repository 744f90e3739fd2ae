// The simulator's RBAC: what a request asks of the authorizer, which rules
// grant it, and the manifest gantry ships (config/worker-rbac.yaml).
#include "rbac.h"

#include <catch2/catch.hpp>

#include "test_support.h"

namespace gantry::sim {
namespace {

http::Request Req(std::string method, std::string path, std::string watch = "") {
  http::Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  if (!watch.empty()) r.query.emplace("watch", watch);
  return r;
}

std::string Judge(const http::Request& r) {
  const RequestAttributes a = AttributesOf(r);
  if (!a.resource_request) return "non-resource";
  return a.verb + " " + a.resource + " in \"" + a.group + "\" ns \"" + a.ns + "\"";
}

const char* const kRole = R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: gantry}
---
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {kind: ClusterRole, name: r}
---
kind: ClusterRole
metadata: {name: unbound}
rules:
- {apiGroups: ["batch"], resources: ["jobs"], verbs: ["*"]}
---
kind: ClusterRole
metadata: {name: r}
rules:
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["clusterqueues"]
  resourceNames: ["cluster-queue"]
  verbs: ["get", "list"]
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["*"]
  verbs: ["get"]
)";

}  // namespace

TEST_CASE("AttributesOf reads group, resource, subresource, verb and namespace as the API server does",
          "[sim][rbac]") {
  const std::string wl = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";
  CHECK(Judge(Req("GET", wl)) == "list workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("GET", wl, "true")) == "watch workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("GET", wl, "false")) == "list workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("GET", wl + "/w1")) == "get workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("POST", wl)) == "create workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("PATCH", wl + "/w1/status")) == "patch workloads/status in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("PUT", wl + "/w1")) == "update workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("DELETE", wl + "/w1")) == "delete workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("DELETE", wl)) == "deletecollection workloads in \"kueue.x-k8s.io\" ns \"team-a\"");
  CHECK(Judge(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues")) ==
        "list clusterqueues in \"kueue.x-k8s.io\" ns \"\"");
  CHECK(Judge(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads", "1")) ==
        "watch workloads in \"kueue.x-k8s.io\" ns \"\"");
  CHECK(Judge(Req("POST", "/api/v1/namespaces/team-a/pods")) == "create pods in \"\" ns \"team-a\"");
  CHECK(Judge(Req("GET", "/api/v1/namespaces")) == "list namespaces in \"\" ns \"\"");
  CHECK(Judge(Req("GET", "/api/v1/namespaces/team-a")) == "get namespaces in \"\" ns \"team-a\"");
  CHECK(Judge(Req("PUT", "/api/v1/namespaces/team-a/status")) == "update namespaces/status in \"\" ns \"team-a\"");
  CHECK(Judge(Req("PUT", "/api/v1/namespaces/team-a/finalize")) ==
        "update namespaces/finalize in \"\" ns \"team-a\"");
  for (const char* path : {"/readyz", "/version", "/api", "/api/v1", "/apis", "/apis/batch", "/apis/batch/v1"}) {
    INFO(path);
    CHECK(Judge(Req("GET", path)) == "non-resource");
  }
}

TEST_CASE("Rbac grants what one rule names, whole, and nothing else", "[sim][rbac]") {
  auto rbac = Rbac::Parse(kRole);
  REQUIRE(rbac.ok());
  auto allows = [&](const http::Request& r) { return rbac->Allows(AttributesOf(r)); };
  const std::string wl = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";
  CHECK(allows(Req("POST", wl)));
  CHECK(allows(Req("GET", wl, "true")));
  CHECK(allows(Req("PATCH", wl + "/w1/status")));
  CHECK_FALSE(allows(Req("PATCH", wl + "/w1")));         // the object, not its status
  CHECK_FALSE(allows(Req("GET", wl + "/w1/status")));    // status: patch only
  CHECK_FALSE(allows(Req("DELETE", wl)));                // delete is not deletecollection
  CHECK_FALSE(allows(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues")));  // resourceNames: not modelled
  CHECK_FALSE(allows(Req("GET", "/apis/batch/v1/namespaces/team-a/jobs/j")));  // only an unbound role grants it
  CHECK(allows(Req("GET", "/api/v1/namespaces/team-a/pods/p")));               // "*" resources
  CHECK_FALSE(allows(Req("GET", "/api/v1/namespaces/team-a/pods")));
  CHECK(allows(Req("GET", "/readyz")));
  const std::string refusal = Rbac::Refusal(AttributesOf(Req("DELETE", wl)));
  CHECK(refusal.find("cannot deletecollection resource \"workloads\" in API group \"kueue.x-k8s.io\" in the "
                     "namespace \"team-a\"") != std::string::npos);
}

TEST_CASE("Rbac refuses a manifest without a bound role, or with rules of the wrong shape", "[sim][rbac]") {
  auto message = [](const std::string& yaml) { return Rbac::Parse(yaml).status().message(); };
  const std::string binding = "kind: ClusterRoleBinding\nroleRef: {kind: ClusterRole, name: r}\n---\n";
  CHECK(message("kind: ServiceAccount\n").find("no ClusterRole") != std::string::npos);
  // Rules, but no binding; or a binding of a Role; or a namespaced Role.
  CHECK(message("kind: ClusterRole\nmetadata: {name: r}\nrules:\n- {apiGroups: [''], resources: [pods], verbs: [get]}\n")
            .find("that a ClusterRoleBinding binds") != std::string::npos);
  CHECK(message("kind: ClusterRoleBinding\nroleRef: {kind: Role, name: r}\n---\nkind: ClusterRole\n"
                "metadata: {name: r}\nrules:\n- {apiGroups: [''], resources: [pods], verbs: [get]}\n")
            .find("that a ClusterRoleBinding binds") != std::string::npos);
  CHECK(message(binding + "kind: Role\nmetadata: {name: r}\nrules:\n- {apiGroups: [''], resources: [pods], verbs: [get]}\n")
            .find("no ClusterRole") != std::string::npos);
  CHECK(message(binding + "kind: ClusterRole\nmetadata: {name: r}\nrules: {a: b}\n").find("rules: must be a list") !=
        std::string::npos);
  CHECK(message(binding + "kind: ClusterRole\nmetadata: {name: r}\nrules:\n- verbs: get\n")
            .find("rules[0].verbs: must be a list") != std::string::npos);
  CHECK(message(binding + "kind: ClusterRole\nmetadata: {name: r}\nrules: [get]\n").find("rules[0]: must be a mapping") !=
        std::string::npos);
  CHECK_FALSE(Rbac::Parse("kind: [unclosed\n").ok());
}

TEST_CASE("the worker manifest gantry ships grants what gantry does, and no more", "[sim][rbac]") {
  auto rbac = Rbac::Parse(gantry::testing::ReadFile(GANTRY_SOURCE_DIR "/config/worker-rbac.yaml"));
  REQUIRE(rbac.ok());
  auto allows = [&](const http::Request& r) { return rbac->Allows(AttributesOf(r)); };
  const std::string wl = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";
  const std::string jobs = "/apis/batch/v1/namespaces/team-a/jobs";
  CHECK(allows(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads", "true")));
  CHECK(allows(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues")));
  CHECK(allows(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/localqueues")));  // every namespace's, by the probe
  CHECK(allows(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses")));  // by the probe too
  CHECK_FALSE(allows(Req("POST", "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses")));
  CHECK(allows(Req("PATCH", wl + "/w1/status")));
  CHECK(allows(Req("DELETE", jobs + "/j1")));
  CHECK(allows(Req("GET", "/apis/jobset.x-k8s.io/v1alpha2/jobsets", "true")));
  CHECK_FALSE(allows(Req("PATCH", wl + "/w1")));
  CHECK_FALSE(allows(Req("PUT", jobs + "/j1")));
  CHECK_FALSE(allows(Req("GET", "/api/v1/namespaces/team-a/secrets")));
  CHECK(allows(Req("GET", "/api/v1/namespaces/kube-system")));  // its uid: which cluster this is, by the probe
  CHECK_FALSE(allows(Req("GET", "/api/v1/namespaces/team-a")));
  CHECK_FALSE(allows(Req("GET", "/api/v1/namespaces")));
  CHECK_FALSE(allows(Req("DELETE", wl)));
  CHECK_FALSE(allows(Req("GET", "/apis/kueue.x-k8s.io/v1beta2/localqueues", "true")));  // listed, never watched
}

}  // namespace gantry::sim
