// What the simulated API server refuses in a Workload's pod templates that a
// Job takes (pod_template_checks.h), in the real server's words and held to
// the Workload CRD's schema.
#include <catch2/catch.hpp>
#include <functional>

#include "crd_schema.h"
#include "sim_test_util.h"
#include "validation.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

json& Container(json& wl) { return wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]; }

std::string SchemaErrors(json wl, const std::string& version) {
  wl["metadata"] = {{"name", wl["metadata"]["name"]}, {"namespace", "team-a"}};
  gantry::testing::SchemaValidator validator;
  return gantry::testing::Joined(validator.Validate(wl, gantry::testing::WorkloadSchema(version)));
}

TEST_CASE("a Workload's pod template is refused where the API server refuses it",
          "[sim][validation]") {
  const std::string c0 = "spec.podSets[0].template.spec.containers[0]";
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    std::string error;  // "" = valid
  };
  const std::vector<Case> cases = {
      {"as made", [](json&) {}, ""},
      {"env with two names",
       [](json& w) {
         Container(w)["env"] =
             json::parse(R"([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])");
       },
       ""},
      {"env with a name twice",
       [](json& w) {
         Container(w)["env"] =
             json::parse(R"([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])");
       },
       c0 + ".env[1]: Duplicate value: map[string]interface {}{\"name\":\"A\"}"},
      {"a port twice, its protocol defaulted",
       [](json& w) {
         Container(w)["ports"] =
             json::parse(R"([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80}])");
       },
       c0 + ".ports[1]: Duplicate value: map[string]interface {}{\"containerPort\":80, "
            "\"protocol\":\"TCP\"}"},
      {"a port on TCP and UDP",
       [](json& w) {
         Container(w)["ports"] =
             json::parse(R"([{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}])");
       },
       ""},
      {"an image pull secret twice",
       [](json& w) {
         w["spec"]["podSets"][0]["template"]["spec"]["imagePullSecrets"] =
             json::parse(R"([{"name": "r"}, {"name": "r"}])");
       },
       "spec.podSets[0].template.spec.imagePullSecrets[1]: Duplicate value: map[string]interface "
       "{}{\"name\":\"r\"}"},
      {"a fractional cpu", [](json& w) { Container(w)["resources"]["requests"]["cpu"] = 0.5; },
       c0 + ".resources.requests.cpu: Invalid value: \"number\": " + c0 +
           ".resources.requests.cpu in body must be of type integer,string: \"number\""},
      {"a boolean limit", [](json& w) { Container(w)["resources"]["limits"]["cpu"] = true; },
       c0 + ".resources.limits.cpu: Invalid value: \"boolean\": " + c0 +
           ".resources.limits.cpu in body must be of type integer,string: \"boolean\""},
      {"integer and string quantities",
       [](json& w) {
         Container(w)["resources"]["requests"] = {{"cpu", 2}, {"memory", "1Gi"}};
       },
       ""},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      for (const char* version : {"v1beta1", "v1beta2"}) {
        CAPTURE(version);
        json wl = testing::MakeWorkload("w", 1, 1);
        c.mutate(wl);
        Status s = ValidateWorkload(wl, version);
        if (c.error.empty()) {
          CHECK(s.ok());
          CHECK(SchemaErrors(wl, version) == "");
        } else {
          CHECK(s.code() == Code::kInvalidArgument);  // 422 Invalid on the wire
          CHECK(s.message() == "Workload.kueue.x-k8s.io \"w\" is invalid: " + c.error);
          CHECK_FALSE(SchemaErrors(wl, version).empty());  // the CRD refuses it too
        }
      }
    }
  }
}

}  // namespace
}  // namespace gantry::sim
