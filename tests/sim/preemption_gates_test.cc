// Preemption gates (Kueue v1beta2 spec.preemptionGates / status.preemptionGates)
// as the simulator reads and validates them, held to the Workload CRD's
// schema, and the preemption policy in the simulator's cluster config.
#include <catch2/catch.hpp>

#include "crd_schema.h"
#include "preemption_gates.h"
#include "sim_config.h"
#include "sim_test_util.h"
#include "validation.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

json Gates(std::initializer_list<const char*> names) {
  json gates = json::array();
  for (const char* n : names) gates.push_back({{"name", n}});
  return gates;
}

json State(const std::string& name, const std::string& position) {
  return {{"name", name}, {"position", position}, {"lastTransitionTime", "2026-12-03T04:00:00Z"}};
}

TEST_CASE("a preemption gate is closed unless status says it is Open", "[sim][preemption]") {
  struct Case {
    const char* what;
    json spec_gates;
    json status_gates;
    std::vector<std::string> closed;
  };
  std::vector<Case> cases = {
      {"no gates: may preempt", nullptr, nullptr, {}},
      {"a gate without a state is closed", Gates({"g"}), nullptr, {"g"}},
      {"a gate in state Open is open", Gates({"g"}), json::array({State("g", "Open")}), {}},
      {"a gate in state Closed is closed", Gates({"g"}), json::array({State("g", "Closed")}), {"g"}},
      {"another gate's Open opens nothing", Gates({"g"}), json::array({State("other", "Open")}), {"g"}},
      {"each gate by its own state", Gates({"a", "b", "c"}),
       json::array({State("b", "Open"), State("a", "Closed")}), {"a", "c"}},
      {"a state for a gate the spec no longer names is ignored", nullptr, json::array({State("g", "Closed")}), {}},
      {"malformed entries name no gate", json::array({"g", {{"name", 3}}}), nullptr, {}},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      json wl = testing::MakeWorkload("w", 1, 1);
      if (!c.spec_gates.is_null()) wl["spec"]["preemptionGates"] = c.spec_gates;
      if (!c.status_gates.is_null()) wl["status"]["preemptionGates"] = c.status_gates;
      CHECK(ClosedPreemptionGates(wl) == c.closed);
    }
  }
}

// The CRD schema's verdict on wl in `version`, the API server's own fields
// left out of metadata.
std::string SchemaErrors(json wl, const std::string& version) {
  wl["metadata"] = {{"name", wl["metadata"]["name"]}, {"namespace", "team-a"}};
  gantry::testing::SchemaValidator validator;
  return gantry::testing::Joined(validator.Validate(wl, gantry::testing::WorkloadSchema(version)));
}

TEST_CASE("spec.preemptionGates is validated in v1beta2 as the CRD says, and unknown in v1beta1",
          "[sim][preemption][validation]") {
  struct Case {
    const char* what;
    json gates;
    std::string error;  // "" = valid in v1beta2
  };
  std::vector<Case> cases = {
      {"one gate", Gates({"gantry.dev/preemption"}), ""},
      {"eight gates", Gates({"a", "b", "c", "d", "e", "f", "g", "h"}), ""},
      {"an empty list", json::array(), ""},
      {"nine gates", Gates({"a", "b", "c", "d", "e", "f", "g", "h", "i"}),
       "spec.preemptionGates: Too many: 9: must have at most 8 items"},
      {"an empty name", Gates({""}),
       "spec.preemptionGates[0].name: Invalid value: \"\": should be at least 1 chars long"},
      {"a name of 64 characters", json::array({{{"name", std::string(64, 'g')}}}),
       "spec.preemptionGates[0].name: Too long: may not be more than 63 bytes"},
      {"no name", json::array({json::object()}), "spec.preemptionGates[0].name: Required value"},
      {"a name twice", Gates({"g", "h", "g"}), "spec.preemptionGates[2].name: Duplicate value: \"g\""},
      {"not a list", "g", "spec.preemptionGates: Invalid value: must be a list"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      json wl = testing::MakeWorkload("w", 1, 1);
      wl["spec"]["preemptionGates"] = c.gates;
      Status v1beta2 = ValidateWorkload(wl, "v1beta2");
      if (c.error.empty()) {
        CHECK(v1beta2.ok());
        CHECK(SchemaErrors(wl, "v1beta2") == "");
      } else {
        CHECK(v1beta2.code() == Code::kInvalidArgument);
        CHECK(v1beta2.message() == "Workload.kueue.x-k8s.io \"w\" is invalid: " + c.error);
        CHECK_FALSE(SchemaErrors(wl, "v1beta2").empty());  // the CRD refuses it too
      }
      // v1beta1 has no such field: the simulator keeps it unchecked, as it
      // keeps any field a version does not know (the API server would prune it).
      CHECK(ValidateWorkload(wl, "v1beta1").ok());
      CHECK_THAT(SchemaErrors(wl, "v1beta1"), Catch::Contains("spec.preemptionGates: unknown field"));
    }
  }
}

TEST_CASE("status.preemptionGates is validated on update in v1beta2", "[sim][preemption][validation]") {
  json old = testing::MakeWorkload("w", 1, 1);
  old["spec"]["preemptionGates"] = Gates({"gantry.dev/preemption"});
  struct Case {
    const char* what;
    json states;
    std::string error;  // "" = valid
  };
  std::vector<Case> cases = {
      {"open", json::array({State("gantry.dev/preemption", "Open")}), ""},
      {"closed", json::array({State("gantry.dev/preemption", "Closed")}), ""},
      {"a position Kueue does not know", json::array({State("g", "Ajar")}),
       "status.preemptionGates[0].position: Unsupported value: \"Ajar\": supported values: \"Closed\", \"Open\""},
      {"no lastTransitionTime", json::array({{{"name", "g"}, {"position", "Open"}}}),
       "status.preemptionGates[0].lastTransitionTime: Required value"},
      {"a lastTransitionTime that is no time",
       json::array({{{"name", "g"}, {"position", "Open"}, {"lastTransitionTime", "soon"}}}),
       "status.preemptionGates[0].lastTransitionTime: Invalid value: \"soon\": must be an RFC 3339 date-time"},
      {"no position", json::array({{{"name", "g"}, {"lastTransitionTime", "2026-12-03T04:00:00Z"}}}),
       "status.preemptionGates[0].position: Required value"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      json updated = old;
      updated["status"]["preemptionGates"] = c.states;
      Status s = ValidateWorkloadUpdate(old, updated, "v1beta2");
      if (c.error.empty()) {
        CHECK(s.ok());
        CHECK(SchemaErrors(updated, "v1beta2") == "");
      } else {
        CHECK(s.message() == "Workload.kueue.x-k8s.io \"w\" is invalid: " + c.error);
      }
      CHECK(ValidateWorkloadUpdate(old, updated, "v1beta1").ok());
    }
  }
}

TEST_CASE("preemption in the simulator's cluster config", "[sim][preemption][config]") {
  auto parsed = ParseSimConfig(R"(clusters:
- name: c1
  preemption: {withinClusterQueue: LowerPriority, victimStopDelay: 3s}
- name: c2
  preemption: {withinClusterQueue: Never}
- {name: c3}
- name: c4
  preemption: {withinClusterQueue: LowerPriority, victimStopDelay: 1.5}
)");
  REQUIRE(parsed.ok());
  CHECK(parsed->clusters[0].within_cluster_queue == PreemptionPolicy::kLowerPriority);
  CHECK(parsed->clusters[1].within_cluster_queue == PreemptionPolicy::kNever);
  CHECK(parsed->clusters[2].within_cluster_queue == PreemptionPolicy::kNever);  // Kueue's default
  CHECK(parsed->clusters[0].victim_stop_delay_ms == 3'000);
  CHECK(parsed->clusters[1].victim_stop_delay_ms == 0);  // default: victims stop at once
  CHECK(parsed->clusters[2].victim_stop_delay_ms == 0);
  CHECK(parsed->clusters[3].victim_stop_delay_ms == 1'500);  // no unit: seconds, as every duration

  struct Bad {
    const char* preemption;
    const char* error;
  };
  for (const Bad& bad : {Bad{"{withinClusterQueue: Sometimes}",
                             "clusters[0]: preemption: withinClusterQueue: \"Sometimes\": want Never or LowerPriority"},
                         Bad{"{withinClusterQueue: LowerOrNewerEqualPriority}", "want Never or LowerPriority"},
                         Bad{"{reclaimWithinCohort: Never}",
                             "clusters[0]: preemption: unknown field reclaimWithinCohort"},
                         Bad{"LowerPriority",
                             "preemption: want {withinClusterQueue: Never | LowerPriority, victimStopDelay: "
                             "<duration>}"},
                         Bad{"{victimStopDelay: soon}",
                             "clusters[0]: preemption: victimStopDelay: duration \"soon\": want e.g. 250ms, 30s, 5m, "
                             "1h"},
                         Bad{"{victimStopDelay: 3d}",
                             "clusters[0]: preemption: victimStopDelay: duration \"3d\": unknown unit d"},
                         Bad{"{victimStopDelay: -1s}", "victimStopDelay: duration \"-1s\": want e.g."},
                         Bad{"{victimStopDelay: .}", "victimStopDelay: duration \".\": want e.g."},
                         Bad{"{victimStopDelay: 1.2.3s}", "victimStopDelay: duration \"1.2.3s\": want e.g."},
                         Bad{"{victimStopDelay: [3s]}", "clusters[0]: preemption: victimStopDelay: want a duration, e.g. 3s"},
                         Bad{"{victimstopdelay: 3s}", "clusters[0]: preemption: unknown field victimstopdelay"}}) {
    INFO(bad.preemption);
    auto r = ParseSimConfig(std::string("clusters:\n- name: c1\n  preemption: ") + bad.preemption + "\n");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(bad.error));
  }
}

TEST_CASE("the ClusterQueue serves its preemption policy", "[sim][preemption][config]") {
  for (PreemptionPolicy policy : {PreemptionPolicy::kNever, PreemptionPolicy::kLowerPriority}) {
    ClusterConfig config = testing::SmallCluster("c1", 2);
    config.within_cluster_queue = policy;
    testing::ClusterFixture f(config);
    json cq = f.Get(ResourceByPlural("clusterqueues"), "cluster-queue", "");
    CHECK(cq["spec"]["preemption"] == json{{"borrowWithinCohort", {{"policy", "Never"}}},
                                           {"reclaimWithinCohort", "Never"},
                                           {"withinClusterQueue", PreemptionPolicyName(policy)}});
  }
}

}  // namespace
}  // namespace gantry::sim
