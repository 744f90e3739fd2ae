// Admission checks in the simulated Kueue, through a whole ClusterState (no
// HTTP) on a fake clock: quota first with every check Pending, Admitted when
// all are Ready, Retry (evicted, requeued) and Rejected (deactivated), by a
// check's configured outcome or set by hand. Every Workload version written
// is checked against the Kueue CRD's schema.
#include <catch2/catch.hpp>

#include "cluster_state.h"
#include "crd_schema.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;
using testing::kGpu;
using testing::MakeJob;
using testing::MakeWorkload;

ClusterConfig WithChecks(std::vector<AdmissionCheckConfig> checks) {
  ClusterConfig c = testing::SmallCluster("c1", 2);
  c.admission_checks = std::move(checks);
  return c;
}

struct Fixture : testing::ClusterFixture {
  explicit Fixture(std::vector<AdmissionCheckConfig> checks) : ClusterFixture(WithChecks(std::move(checks))) {
    WatchRequest req;
    req.resource = &wl;
    req.api_version = "kueue.x-k8s.io/v1beta2";
    req.stream = stream = std::make_shared<http::ResponseStream>();
    state.Watch(req);
  }

  // The Workload watch events since the last call; each object must be one
  // the CRD accepts (metadata as a client writes it: the API server's own
  // fields are not the CRD's to check).
  std::vector<json> Events() {
    std::vector<json> out = testing::StreamEvents(stream);
    for (const json& e : out) {
      json o = e["object"];
      o["metadata"] = {{"name", o["metadata"]["name"]}, {"namespace", o["metadata"]["namespace"]}};
      std::vector<std::string> errors = validator.Validate(o, gantry::testing::WorkloadSchema("v1beta2"));
      INFO(o.dump(2));
      CHECK(gantry::testing::Joined(errors) == "");
    }
    return out;
  }
  // Condition `type` of Workload `name`: "True", "False", or "" when absent.
  std::string Cond(const std::string& name, const std::string& type, std::string* reason = nullptr) {
    for (const json& c : Get(wl, name)["status"].value("conditions", json::array())) {
      if (c["type"] != type) continue;
      if (reason) *reason = c.value("reason", "");
      return c["status"];
    }
    return "";
  }
  // Admission check `check` of Workload `name` (null when absent).
  json Check(const std::string& name, const std::string& check) {
    for (const json& c : Get(wl, name)["status"].value("admissionChecks", json::array())) {
      if (c["name"] == check) return c;
    }
    return nullptr;
  }
  bool Suspended(const std::string& job) { return Get(jobs, job)["spec"]["suspend"] == true; }
  // Creates Workload `name` (one pod, 8 GPUs) and lets it get quota.
  void Reserve(const std::string& name) {
    REQUIRE(state.Create(wl, "team-a", MakeWorkload(name, 1, 8)).ok());
    state.Tick();
  }

  std::shared_ptr<http::ResponseStream> stream;
  gantry::testing::SchemaValidator validator;
};

TEST_CASE("with admission checks a Workload gets quota with every check Pending, and Admitted once all are Ready",
          "[sim][checks]") {
  Fixture f({{"provisioning", CheckState::kReady, 1'000}, {"budget", CheckState::kReady, 2'000}});
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 8)).ok());
  // The real job comes at quota reservation (gantry's leaseOn: QuotaReserved).
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "a", "uid-a", "30s")).ok());
  f.state.Tick();
  std::vector<json> events = f.Events();
  REQUIRE(events.size() == 2);  // ADDED, then the reservation: one write
  const json& reserved = events[1]["object"];
  CHECK(HasCondition(reserved, "QuotaReserved"));
  CHECK(reserved["status"]["admission"]["clusterQueue"] == "cluster-queue");
  CHECK(reserved["status"]["admissionChecks"].size() == 2);
  std::string reason;
  CHECK(f.Cond("a", "Admitted", &reason) == "False");
  CHECK(reason == "UnsatisfiedChecks");
  CHECK(f.Check("a", "provisioning")["state"] == "Pending");
  CHECK(f.Check("a", "budget")["state"] == "Pending");
  CHECK(f.ReservedGpus() == 8);
  json cq = f.Get(ResourceByPlural("clusterqueues"), "cluster-queue", "");
  CHECK(cq["status"]["reservingWorkloads"] == 1);
  CHECK(cq["status"]["admittedWorkloads"] == 0);
  CHECK(f.Suspended("job-a"));  // not before Admitted
  CHECK(f.journal.Snapshot().empty());

  f.TickAfter(999);
  CHECK(f.Events().empty());
  f.TickAfter(1);
  events = f.Events();
  REQUIRE(events.size() == 1);
  CHECK(f.Check("a", "provisioning")["state"] == "Ready");
  CHECK(f.Check("a", "budget")["state"] == "Pending");
  CHECK(f.Cond("a", "Admitted") == "False");
  CHECK(f.Suspended("job-a"));

  f.TickAfter(1'000);
  events = f.Events();
  REQUIRE_FALSE(events.empty());
  // The last check's Ready and Admitted in one write; then the job's adoption.
  CHECK(HasCondition(events[0]["object"], "Admitted"));
  CHECK(f.Check("a", "budget")["state"] == "Ready");
  CHECK_FALSE(f.Suspended("job-a"));
  auto runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].start_ms == f.clock.NowMillis());
  cq = f.Get(ResourceByPlural("clusterqueues"), "cluster-queue", "");
  CHECK(cq["status"]["admittedWorkloads"] == 1);
  // The ClusterQueue names its checks (v1beta2: admissionChecksStrategy).
  CHECK(cq["spec"]["admissionChecksStrategy"]["admissionChecks"] ==
        json::array({{{"name", "provisioning"}}, {{"name", "budget"}}}));
}

TEST_CASE("a held check is decided by hand: Ready admits, and what cannot be set is refused", "[sim][checks]") {
  Fixture f({{"provisioning", CheckState::kPending, 0}});
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 8)).ok());
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("big", 3, 8)).ok());  // 24 > 16: no quota
  f.state.Tick();
  f.TickAfter(600'000);  // ten minutes (within the watch's timeout)
  CHECK(f.Check("a", "provisioning")["state"] == "Pending");
  CHECK(f.Cond("a", "Admitted") == "False");

  CHECK(f.state.SetCheckState("team-a", "nope", "", CheckState::kReady).code() == Code::kNotFound);
  CHECK(f.state.SetCheckState("team-a", "a", "other", CheckState::kReady).code() == Code::kNotFound);
  CHECK(f.state.SetCheckState("team-a", "big", "", CheckState::kReady).code() == Code::kInvalidArgument);
  f.Events();

  REQUIRE(f.state.SetCheckState("team-a", "a", "provisioning", CheckState::kReady).ok());
  CHECK(f.Events().size() == 1);
  CHECK(f.Cond("a", "Admitted") == "True");
  REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob("job-a", "a", "uid-a")).ok());
  CHECK_FALSE(f.Suspended("job-a"));
  CHECK(f.journal.Snapshot().size() == 1);
}

TEST_CASE("a Retry evicts the Workload, releases its quota, resets its checks and requeues it", "[sim][checks]") {
  Fixture f({{"provisioning", CheckState::kRetry, 5'000}});
  f.Reserve("a");
  CHECK(f.ReservedGpus() == 8);
  f.Events();

  f.TickAfter(5'000);
  CHECK(f.Events().size() == 1);
  std::string reason;
  CHECK(f.Cond("a", "Evicted", &reason) == "True");
  CHECK(reason == "AdmissionCheck");
  CHECK(f.Cond("a", "QuotaReserved") == "False");
  CHECK(f.Cond("a", "Requeued") == "True");
  CHECK_FALSE(f.Get(f.wl, "a")["status"].contains("admission"));
  json check = f.Check("a", "provisioning");
  CHECK(check["state"] == "Pending");
  CHECK(check["message"] == "Reset to Pending after eviction. Previously: Retry");
  CHECK(check["retryCount"] == 1);
  CHECK(f.ReservedGpus() == 0);

  // Back in the queue: quota again at the next pass, no longer evicted.
  f.state.Tick();
  CHECK(f.Events().size() == 1);
  CHECK(f.Cond("a", "QuotaReserved") == "True");
  CHECK(f.Cond("a", "Evicted", &reason) == "False");
  CHECK(reason == "QuotaReserved");
  CHECK(f.ReservedGpus() == 8);
  // The check's delay counts from the new reservation.
  f.TickAfter(4'999);
  CHECK(f.Cond("a", "QuotaReserved") == "True");
  f.TickAfter(1);
  CHECK(f.Cond("a", "Evicted") == "True");
  CHECK(f.Check("a", "provisioning")["retryCount"] == 2);
}

TEST_CASE("a check that turns after admission stops the job: Retry requeues it, Rejected deactivates it",
          "[sim][checks]") {
  Fixture f({{"provisioning", CheckState::kPending, 0}});
  for (const char* name : {"a", "b"}) {
    f.Reserve(name);
    REQUIRE(f.state.SetCheckState("team-a", name, "", CheckState::kReady).ok());
    REQUIRE(f.state.Create(f.jobs, "team-a", MakeJob(std::string("job-") + name, name, name, "60s")).ok());
    REQUIRE_FALSE(f.Suspended(std::string("job-") + name));
  }
  f.Events();
  // A ProvisioningRequest's capacity revoked, say.
  REQUIRE(f.state.SetCheckState("team-a", "a", "", CheckState::kRetry).ok());
  REQUIRE(f.state.SetCheckState("team-a", "b", "", CheckState::kRejected).ok());
  CHECK(f.Events().size() == 2);
  CHECK(f.Suspended("job-a"));
  CHECK(f.Suspended("job-b"));
  auto runs = f.journal.Snapshot();
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].end_reason == "Evicted");
  CHECK(runs[1].end_reason == "Deactivated");
  CHECK(f.ReservedGpus() == 0);

  // a gets quota again and, once its check is Ready, runs again; b never does.
  f.TickAfter(100);
  CHECK(f.Cond("a", "QuotaReserved") == "True");
  CHECK(f.Cond("b", "QuotaReserved") == "False");
  REQUIRE(f.state.SetCheckState("team-a", "a", "", CheckState::kReady).ok());
  f.TickAfter(100);
  CHECK_FALSE(f.Suspended("job-a"));
  CHECK(f.Suspended("job-b"));
  CHECK(f.journal.Snapshot().size() == 3);
}

TEST_CASE("a Rejected check deactivates the Workload: evicted for good, its quota released", "[sim][checks]") {
  Fixture f({{"provisioning", CheckState::kRejected, 1'000}});
  f.Reserve("a");
  const int64_t generation = f.Get(f.wl, "a")["metadata"]["generation"];
  f.Events();
  f.TickAfter(1'000);
  CHECK(f.Events().size() == 1);  // spec.active and the status in one write
  json a = f.Get(f.wl, "a");
  CHECK(a["spec"]["active"] == false);
  CHECK(a["metadata"]["generation"] == generation + 1);
  std::string reason;
  CHECK(f.Cond("a", "Evicted", &reason) == "True");
  CHECK(reason == "DeactivatedDueToAdmissionCheck");
  CHECK_THAT(ConditionMessage(a, "Evicted"), Catch::Contains("Rejected state: \"provisioning\""));
  CHECK(f.Cond("a", "QuotaReserved") == "False");
  CHECK(f.Check("a", "provisioning")["message"] == "Reset to Pending after eviction. Previously: Rejected");
  CHECK(f.ReservedGpus() == 0);
  // Out of the queue: never given quota again (counted pending, as one
  // deactivated through the API is).
  f.TickAfter(60'000);
  CHECK(f.Cond("a", "QuotaReserved") == "False");
  json cq = f.Get(ResourceByPlural("clusterqueues"), "cluster-queue", "");
  CHECK(cq["status"]["reservingWorkloads"] == 0);
  CHECK(f.state.SetCheckState("team-a", "a", "", CheckState::kReady).code() == Code::kInvalidArgument);
}

TEST_CASE("admissionChecks in the simulator's cluster config", "[sim][checks][config]") {
  auto parsed = ParseSimConfig(R"(clusters:
- name: c1
  admissionChecks:
  - {name: provisioning, outcome: Ready, delay: 2s}
  - {name: budget, outcome: Pending}
  - {name: flaky, outcome: Retry, delay: 500ms}
- {name: c2}
)");
  REQUIRE(parsed.ok());
  const auto& checks = parsed->clusters[0].admission_checks;
  REQUIRE(checks.size() == 3);
  CHECK(checks[0].name == "provisioning");
  CHECK(checks[0].outcome == CheckState::kReady);
  CHECK(checks[0].delay_ms == 2'000);
  CHECK(checks[1].outcome == CheckState::kPending);
  CHECK(checks[1].delay_ms == 0);
  CHECK(checks[2].outcome == CheckState::kRetry);
  CHECK(parsed->clusters[1].admission_checks.empty());  // the default: none

  struct Bad {
    const char* checks;
    const char* error;
  };
  for (const Bad& bad : {Bad{"[{name: p, outcome: Maybe}]", "want Pending, Ready, Retry or Rejected"},
                         Bad{"[{name: p, outcome: Retry}]", "outcome Retry needs a delay"},
                         Bad{"[{name: p}, {name: p}]", "duplicate name p"},
                         Bad{"[{name: p, after: 1s}]", "unknown field after"},
                         Bad{"[{outcome: Ready}]", "name"},
                         Bad{"{name: p}", "want a list"}}) {
    INFO(bad.checks);
    auto r = ParseSimConfig(std::string("clusters:\n- name: c1\n  admissionChecks: ") + bad.checks + "\n");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(bad.error));
  }
}

TEST_CASE("without admission checks admission stays one write and names no checks", "[sim][checks]") {
  testing::ClusterFixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload("a", 1, 1)).ok());
  f.state.Tick();
  json a = f.Get(f.wl, "a");
  CHECK(HasCondition(a, "Admitted"));
  CHECK_FALSE(a["status"].contains("admissionChecks"));
  CHECK_FALSE(f.Get(ResourceByPlural("clusterqueues"), "cluster-queue", "")["spec"].contains("admissionChecksStrategy"));
  CHECK(f.state.SetCheckState("team-a", "a", "", CheckState::kReady).code() == Code::kNotFound);
}

}  // namespace
}  // namespace gantry::sim
