// ClusterObserver: decoding of Workloads, Jobs and JobSets (table-driven), and
// the observer end to end against two gantry-sim clusters.
#include "gantry/dispatch/observer.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <set>
#include <vector>

#include "gantry/common/clock.h"
#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/kube/kube_client.h"
#include "observer_cache.h"
#include "process.h"
#include "test_support.h"

namespace gantry::dispatch {
namespace {

using nlohmann::json;

json Condition(const std::string& type, const std::string& status, const std::string& reason = "") {
  return {{"type", type}, {"status", status}, {"reason", reason}, {"message", reason + " message"}};
}

// metadata for gantry's objects; "" leaves a label or annotation out.
json Meta(const std::string& job_uid, const std::string& epoch = "3") {
  json m = {{"name", "train-0123abcd"},
            {"namespace", "team-a"},
            {"uid", "k8s-1"},
            {"resourceVersion", "7"}};
  m["labels"][kOriginLabel] = "gantry";
  if (!job_uid.empty()) m["labels"][kJobUidLabel] = job_uid;
  if (!epoch.empty()) m["annotations"][kEpochAnnotation] = epoch;
  return m;
}

json WithConditions(json o, std::vector<json> conditions) {
  o["status"]["conditions"] = conditions;
  return o;
}

}  // namespace

TEST_CASE("FinishedGone keeps the results of deleted Workloads for a while, and only results", "[observer]") {
  using observer_internal::FinishedGone;
  auto finished = [](const std::string& uid, const std::string& reason) {
    ObservedWorkload w;
    w.job_uid = uid;
    w.epoch = 2;
    w.finished = true;
    w.reason = reason;
    w.message = std::string(5000, 'm');
    return w;
  };
  auto of = [](const FinishedGone& g, const std::string& uid) {
    std::map<std::string, std::vector<ObservedWorkload>> out;
    g.ForJob(uid, &out);
    return out;
  };
  FinishedGone gone;
  gone.Remember("c1", finished("a", "Succeeded"), 1'000);
  gone.Remember("c2", finished("a", "Failed"), 2'000);
  gone.Remember("c1", finished("b", "OwnerNotFound"), 2'000);  // its job deleted: no result
  auto a = of(gone, "a");
  REQUIRE(a.size() == 2);
  CHECK(a["c1"].at(0).reason == "Succeeded");
  CHECK(a["c1"].at(0).message.size() == 1024);  // trimmed
  CHECK(a["c2"].at(0).reason == "Failed");
  CHECK(of(gone, "b").empty());
  CHECK(gone.size() == 2);
  // Kept kKeepMs from when each was seen.
  gone.Remember("c3", finished("c", "Succeeded"), 1'000 + FinishedGone::kKeepMs);
  a = of(gone, "a");
  CHECK(a.count("c1") == 0);
  CHECK(a.count("c2") == 1);
  CHECK(gone.size() == 2);
  // At most kMaxKept: the oldest go first.
  FinishedGone full;
  for (std::size_t i = 0; i <= FinishedGone::kMaxKept; ++i) {
    full.Remember("c1", finished("job-" + std::to_string(i), "Succeeded"), 10'000 + static_cast<int64_t>(i));
  }
  CHECK(full.size() == FinishedGone::kMaxKept);
  CHECK(of(full, "job-0").empty());
  CHECK(of(full, "job-1").size() == 1);
  CHECK(of(full, "job-" + std::to_string(FinishedGone::kMaxKept)).size() == 1);
}

TEST_CASE("ParseWorkload reads identity, epoch and conditions", "[observer]") {
  auto w = ParseWorkload(WithConditions({{"metadata", Meta("uid-1")}},
                                        {Condition("QuotaReserved", "True", "QuotaReserved"),
                                         Condition("Admitted", "True", "Admitted")}));
  REQUIRE(w);
  CHECK(w->ns == "team-a");
  CHECK(w->name == "train-0123abcd");
  CHECK(w->k8s_uid == "k8s-1");
  CHECK(w->job_uid == "uid-1");
  CHECK(w->epoch == 3);
  CHECK(w->quota_reserved);
  CHECK(w->admitted);
  CHECK_FALSE(w->evicted);
  CHECK_FALSE(w->finished);
  CHECK(w->reason == "QuotaReserved");
  CHECK(w->message == "QuotaReserved message");
}

TEST_CASE("ParseWorkload leaves the preemptor's uids out of an eviction's message: another tenant's job uid",
          "[observer]") {
  json evicted = Condition("Evicted", "True", "Preempted");
  evicted["message"] =
      "Preempted to accommodate a workload (UID: 5f1c-k8s, JobUID: a9e0-gantry) due to prioritization in the "
      "ClusterQueue; preemptor path: /gpu; preemptee path: /gpu";
  auto w = ParseWorkload(WithConditions({{"metadata", Meta("uid-1")}}, {evicted}));
  REQUIRE(w);
  CHECK(w->evicted);
  CHECK(w->message ==
        "Preempted to accommodate a workload due to prioritization in the ClusterQueue; preemptor path: /gpu; "
        "preemptee path: /gpu");
  evicted["message"] = "cut (UID: 5f1c";  // cut short: to its end
  CHECK(ParseWorkload(WithConditions({{"metadata", Meta("uid-1")}}, {evicted}))->message == "cut");
}

TEST_CASE("ParseWorkload reads when Kueue deactivated a copy for good, and why", "[observer]") {
  auto read = [](std::vector<json> conditions) {
    json o = WithConditions({{"metadata", Meta("uid-1")}}, std::move(conditions));
    o["spec"]["active"] = false;
    auto w = ParseWorkload(o);
    REQUIRE(w);
    CHECK_FALSE(w->active);
    return w->deactivated_for;
  };
  // Kueue from v0.11: the cause in Evicted's reason.
  CHECK(read({Condition("Evicted", "True", "DeactivatedDueToMaximumExecutionTimeExceeded")}) ==
        "MaximumExecutionTimeExceeded");
  CHECK(read({Condition("Evicted", "True", "DeactivatedDueToRequeuingLimitExceeded")}) == "RequeuingLimitExceeded");
  // Before the eviction, or from an older Kueue: the DeactivationTarget condition.
  CHECK(read({Condition("DeactivationTarget", "True", "MaximumExecutionTimeExceeded")}) ==
        "MaximumExecutionTimeExceeded");
  CHECK(read({Condition("Evicted", "True", "InactiveWorkload"),
              Condition("DeactivationTarget", "True", "RequeuingLimitExceeded")}) == "RequeuingLimitExceeded");
  // Other deactivations and evictions are not for good.
  CHECK(read({Condition("Evicted", "True", "DeactivatedDueToAdmissionCheck")}).empty());
  CHECK(read({Condition("Evicted", "True", "Deactivated")}).empty());
  CHECK(read({Condition("Evicted", "True", "Preempted")}).empty());
  CHECK(read({Condition("DeactivationTarget", "False", "MaximumExecutionTimeExceeded")}).empty());
}

TEST_CASE("ParseWorkload and ParseJob read when Evicted last changed and when the job was created", "[observer]") {
  json again = Condition("Evicted", "False", "QuotaReserved");  // admitted again after an eviction
  again["lastTransitionTime"] = "2026-12-04T10:00:07Z";
  json admitted = Condition("Admitted", "True", "Admitted");
  admitted["lastTransitionTime"] = "2026-12-04T10:00:08Z";
  auto w = ParseWorkload(WithConditions({{"metadata", Meta("uid-1")}}, {admitted, again}));
  REQUIRE(w);
  CHECK_FALSE(w->evicted);
  CHECK(w->evicted_changed_ms == *ParseRfc3339("2026-12-04T10:00:07Z"));
  CHECK(w->admitted_ms == *ParseRfc3339("2026-12-04T10:00:08Z"));
  auto never = ParseWorkload(WithConditions({{"metadata", Meta("uid-1")}}, {Condition("Admitted", "True")}));
  REQUIRE(never);
  CHECK(never->evicted_changed_ms == 0);

  json job = {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", Meta("uid-1")}};
  job["metadata"]["creationTimestamp"] = "2026-12-04T10:00:05Z";
  auto j = ParseJob("Job", job);
  REQUIRE(j);
  CHECK(j->created_ms == *ParseRfc3339("2026-12-04T10:00:05Z"));
}

TEST_CASE("ParseWorkload: which condition gives the reason", "[observer]") {
  struct Case {
    const char* name;
    std::vector<json> conditions;
    std::string flags;  // the booleans expected true, by name
    std::string reason;
  };
  std::vector<Case> cases = {
      {"no status", {}, "", ""},
      {"pending", {Condition("QuotaReserved", "False", "Pending")}, "", "Pending"},
      {"evicted wins over quota",
       {Condition("QuotaReserved", "False", "Preempted"), Condition("Evicted", "True", "Evicted")},
       "evicted",
       "Evicted"},
      {"finished",
       {Condition("QuotaReserved", "True", "Q"), Condition("Finished", "True", "Succeeded")},
       "quota_reserved finished",
       "Succeeded"},
      {"evicted and finished: evicted's reason",
       {Condition("Finished", "True", "F"), Condition("Evicted", "True", "E")},
       "evicted finished",
       "E"},
      {"False and Unknown count for nothing",
       {Condition("Admitted", "False", "A"), Condition("Evicted", "False", "E"),
        Condition("Finished", "Unknown")},
       "",
       ""},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto w = ParseWorkload(WithConditions({{"metadata", Meta("uid-1")}}, c.conditions));
    REQUIRE(w);
    auto want = [&](const char* flag) { return c.flags.find(flag) != std::string::npos; };
    CHECK(w->quota_reserved == want("quota_reserved"));
    CHECK(w->admitted == want("admitted"));
    CHECK(w->evicted == want("evicted"));
    CHECK(w->finished == want("finished"));
    CHECK(w->reason == c.reason);
  }
}

TEST_CASE("ParseWorkload: gantry's preemption gate, in the spec and its position in the status", "[observer]") {
  json o = WithConditions({{"metadata", Meta("uid-1")}}, {Condition("QuotaReserved", "False", "Pending")});
  auto plain = ParseWorkload(o);
  REQUIRE(plain);
  CHECK_FALSE(plain->gated);
  CHECK_FALSE(plain->gate_open);

  o["spec"]["preemptionGates"] = json::array({{{"name", "other.example/gate"}}});
  CHECK_FALSE(ParseWorkload(o)->gated);  // someone else's gate only
  o["spec"]["preemptionGates"].push_back({{"name", kPreemptionGate}});
  CHECK(ParseWorkload(o)->gated);
  CHECK_FALSE(ParseWorkload(o)->gate_open);

  auto state = [](const char* name, const char* position) {
    return json{{"name", name}, {"position", position}, {"lastTransitionTime", "2026-12-03T04:00:00Z"}};
  };
  o["status"]["preemptionGates"] = json::array({state(kPreemptionGate, "Closed"), state("other.example/gate", "Open")});
  CHECK_FALSE(ParseWorkload(o)->gate_open);
  o["status"]["preemptionGates"][0] = state(kPreemptionGate, "Open");
  CHECK(ParseWorkload(o)->gate_open);
  // The other gates' entries are kept for the gate patch, which replaces the list.
  CHECK(ParseWorkload(o)->other_gate_states == json::array({state("other.example/gate", "Open")}));
  o["metadata"]["resourceVersion"] = "977";
  CHECK(ParseWorkload(o)->resource_version == "977");
}

TEST_CASE("ParseWorkload: a copy held back by its gate, and one waiting for its victims to stop", "[observer]") {
  const std::string flavors = "couldn't assign flavors to pod set main: insufficient unused quota for cpu";
  auto quota = [&](const std::string& status, const std::string& reason, const std::string& message) {
    json c = {{"type", "QuotaReserved"}, {"status", status}, {"reason", reason}, {"message", message}};
    return ParseWorkload(WithConditions({{"metadata", Meta("uid-1")}}, {c}));
  };
  auto pending = quota("False", "Pending", flavors);
  CHECK_FALSE(pending->held_by_gate);
  CHECK_FALSE(pending->preempting);
  CHECK(quota("False", "PreemptionGated", flavors)->held_by_gate);
  CHECK_FALSE(quota("False", "PreemptionGated", flavors)->preempting);
  CHECK(quota("False", "WaitingForPreemptedWorkloads", flavors + ". Pending the preemption of 1 workload(s)")->preempting);
  // Older Kueue: reason Pending, the same message.
  CHECK(quota("False", "Pending", flavors + ". Pending the preemption of 2 workload(s)")->preempting);
  // Holding quota: neither, whatever the words.
  auto reserved = quota("True", "WaitingForPreemptedWorkloads", "Pending the preemption of 1 workload(s)");
  CHECK_FALSE(reserved->preempting);
  CHECK_FALSE(reserved->held_by_gate);
}

TEST_CASE("ParseWorkload: spec.active and the admission checks' states", "[observer]") {
  auto check = [](const std::string& state) {
    return json{{"name", "prov-" + state}, {"state", state}, {"message", ""}, {"lastTransitionTime", "t"}};
  };
  struct Case {
    const char* name;
    json active;             // spec.active (null: unset)
    std::vector<json> checks;  // status.admissionChecks
    bool want_active;
    bool want_check_failed;
  };
  std::vector<Case> cases = {
      {"unset: active, no checks", nullptr, {}, true, false},
      {"deactivated", false, {}, false, false},
      {"not a boolean: active", "no", {}, true, false},
      {"pending and ready", true, {check("Pending"), check("Ready")}, true, false},
      {"a Retry", nullptr, {check("Ready"), check("Retry")}, true, true},
      {"a Rejected, before Kueue deactivates it", true, {check("Rejected")}, true, true},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    json o = WithConditions({{"metadata", Meta("uid-1")}}, {Condition("QuotaReserved", "True", "QuotaReserved")});
    if (!c.active.is_null()) o["spec"]["active"] = c.active;
    if (!c.checks.empty()) o["status"]["admissionChecks"] = c.checks;
    auto w = ParseWorkload(o);
    REQUIRE(w);
    CHECK(w->quota_reserved);
    CHECK(w->active == c.want_active);
    CHECK(w->check_failed == c.want_check_failed);
  }
}

TEST_CASE("ParseWorkload: epoch annotation and missing identity", "[observer]") {
  const std::vector<std::pair<std::string, int64_t>> epochs = {
      {"7", 7}, {"", 0}, {"abc", 0}, {"-2", 0}, {"0", 0}, {"5x", 0}, {"99999999999999999999", 0}};
  for (const auto& [text, epoch] : epochs) {
    INFO(text);
    auto w = ParseWorkload({{"metadata", Meta("uid-1", text)}});
    REQUIRE(w);
    CHECK(w->epoch == epoch);
  }
  // Without a job-uid label (or a name) an object is not gantry's to track.
  CHECK_FALSE(ParseWorkload({{"metadata", Meta("")}}));
  json nameless = {{"metadata", Meta("uid-1")}};
  nameless["metadata"].erase("name");
  CHECK_FALSE(ParseWorkload(nameless));
  CHECK_FALSE(ParseWorkload(json::array()));
  CHECK_FALSE(ParseWorkload({{"metadata", "not an object"}}));
  CHECK_FALSE(ParseJob("Job", {{"metadata", Meta("")}}));
}

TEST_CASE("ParseJob: state, reason and summary of Jobs and JobSets", "[observer]") {
  using enum RemoteJobState;
  struct Case {
    const char* name;
    json suspend;  // spec.suspend; null = absent
    RemoteJobState state;
    std::string reason;
    std::vector<json> conditions;
  };
  std::vector<Case> cases = {
      {"suspended", true, kSuspended, "Stopped", {Condition("Suspended", "True", "Stopped")}},
      {"running", false, kRunning, "", {Condition("Suspended", "False", "JobResumed")}},
      {"suspend absent: running", nullptr, kRunning, "", {}},
      {"complete", false, kSucceeded, "Done", {Condition("Complete", "True", "Done")}},
      {"failed", false, kFailed, "Backoff", {Condition("Failed", "True", "Backoff")}},
      {"failed while suspended: failed", true, kFailed, "F", {Condition("Failed", "True", "F")}},
      {"False terminal conditions",
       true,
       kSuspended,
       "",
       {Condition("Complete", "False"), Condition("Failed", "False")}},
  };
  for (const std::string kind : {"Job", "JobSet", "TrainJob"}) {  // TrainJob: a generic kind
    for (const Case& c : cases) {
      INFO(kind << ": " << c.name);
      json o = WithConditions({{"metadata", Meta("uid-9")}}, c.conditions);
      if (!c.suspend.is_null()) o["spec"]["suspend"] = c.suspend;
      if (kind == "JobSet") {  // JobSet says Completed where Job says Complete
        for (json& cond : o["status"]["conditions"]) {
          if (cond["type"] == "Complete") cond["type"] = "Completed";
        }
      }
      auto j = ParseJob(kind, o);
      REQUIRE(j);
      CHECK(j->kind == kind);
      CHECK(j->job_uid == "uid-9");
      CHECK(j->epoch == 3);
      CHECK(j->state == c.state);
      CHECK(j->reason == c.reason);
    }
  }

  // When it ended, by the cluster's clock: the deciding condition's time.
  json ended = WithConditions({{"metadata", Meta("uid-9")}}, {Condition("Complete", "True", "Done")});
  CHECK(ParseJob("Job", ended)->ended_ms == 0);  // none given
  ended["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-07T10:05:03Z";
  CHECK(ParseJob("Job", ended)->ended_ms == *ParseRfc3339("2026-12-07T10:05:03Z"));
  ended["status"]["conditions"][0]["type"] = "Failed";
  CHECK(ParseJob("Job", ended)->ended_ms == *ParseRfc3339("2026-12-07T10:05:03Z"));
  ended["status"]["conditions"][0]["type"] = "Suspended";
  CHECK(ParseJob("Job", ended)->ended_ms == 0);  // not ended

  json job = {{"metadata", Meta("uid-9")}, {"status", {{"active", 2}, {"failed", 1}}}};
  CHECK(ParseJob("Job", job)->summary == "active 2, succeeded 0, failed 1");
  CHECK_FALSE(ParseJob("Job", job)->deleting);
  job["metadata"]["deletionTimestamp"] = "2026-12-04T00:00:00Z";  // a foreground delete's, its pods stopping
  CHECK(ParseJob("Job", job)->deleting);
  json jobset = {{"metadata", Meta("uid-9")}};
  jobset["status"]["replicatedJobsStatus"] = {{{"name", "a"}, {"active", 1}, {"succeeded", 2}},
                                              {{"name", "b"}, {"active", 3}, {"failed", 1}}};
  jobset["status"]["restarts"] = 1;
  CHECK(ParseJob("JobSet", jobset)->summary == "active 4, succeeded 2, failed 1, restarts 1");
  // A generic kind's status is its own: no counts are made up for it.
  CHECK(ParseJob("TrainJob", job)->summary.empty());
}

}  // namespace gantry::dispatch

namespace gantry::testing {
namespace {

using dispatch::ClusterObserver;
using dispatch::ObservedCluster;
using nlohmann::json;

const std::string kWorkloadsPath = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";
const std::string kJobsPath = "/apis/batch/v1/namespaces/team-a/jobs";
const std::string kTrainJobsPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs";

json Metadata(const std::string& name, const std::string& job_uid, bool origin) {
  json m = {{"name", name}, {"namespace", "team-a"}};
  m["labels"][dispatch::kJobUidLabel] = job_uid;
  if (origin) m["labels"][dispatch::kOriginLabel] = "gantry";
  m["annotations"][dispatch::kEpochAnnotation] = "2";
  return m;
}

json PodTemplate() {
  json container = {{"name", "c"}, {"image", "i"}};
  container["resources"]["requests"] = {{"cpu", "1"}, {"memory", "1Gi"}};
  return {{"spec", {{"containers", {container}}, {"restartPolicy", "Never"}}}};
}

json Workload(const std::string& name, const std::string& job_uid, bool origin = true) {
  json w = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "Workload"}};
  w["metadata"] = Metadata(name, job_uid, origin);
  w["spec"]["queueName"] = "team-a";
  w["spec"]["podSets"] = {{{"name", "main"}, {"count", 1}, {"template", PodTemplate()}}};
  return w;
}

// A suspended Job that the sim's Kueue adopts into the prebuilt Workload and runs.
json Job(const std::string& name, const std::string& job_uid, const std::string& workload) {
  json j = {{"apiVersion", "batch/v1"}, {"kind", "Job"}};
  j["metadata"] = Metadata(name, job_uid, true);
  j["metadata"]["annotations"][dispatch::kPrebuiltWorkloadAnnotation] = workload;
  j["spec"] = {{"suspend", true}, {"parallelism", 1}, {"template", PodTemplate()}};
  return j;
}

// The same as a Kubeflow TrainJob, a kind only the generic adapter runs.
json TrainJob(const std::string& name, const std::string& job_uid, const std::string& workload) {
  json j = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"}, {"kind", "TrainJob"}};
  j["metadata"] = Metadata(name, job_uid, true);
  j["metadata"]["annotations"][dispatch::kPrebuiltWorkloadAnnotation] = workload;
  j["spec"] = {{"suspend", true}, {"trainer", {{"numNodes", 1}}}};
  return j;
}

// The job uids on_change was called with, and those it called "gone" for.
class ChangeLog {
 public:
  void Add(const ClusterObserver::Observed& what) {
    std::lock_guard lock(mu_);
    uids_.insert(what.job_uid);
    if (what.change == ClusterObserver::Change::kGone) gone_.insert(what.job_uid);
    if (what.change == ClusterObserver::Change::kAppeared) {
      appeared_.push_back(what.cluster + " " + what.kind + " " + std::to_string(what.epoch) +
                          (what.as_created ? " as created" : " changed"));
    }
    if (what.change == ClusterObserver::Change::kChanged) {
      changed_.push_back(what.job_uid + " " + what.kind + (what.status_only ? " status only" : " for decisions"));
    }
  }
  // "<uid> <kind> status only|for decisions", each change in turn.
  std::vector<std::string> Changed(const std::string& uid) const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const std::string& c : changed_) {
      if (c.rfind(uid + " ", 0) == 0) out.push_back(c);
    }
    return out;
  }
  std::vector<std::string> Appeared(const std::string& prefix) const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const std::string& a : appeared_) {
      if (a.rfind(prefix, 0) == 0) out.push_back(a);
    }
    return out;
  }
  bool Has(const std::string& uid) const {
    std::lock_guard lock(mu_);
    return uids_.count(uid) > 0;
  }
  bool HasGone(const std::string& uid) const {
    std::lock_guard lock(mu_);
    return gone_.count(uid) > 0;
  }
  void Clear() {
    std::lock_guard lock(mu_);
    uids_.clear();
    gone_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::set<std::string> uids_;
  std::set<std::string> gone_;
  std::vector<std::string> appeared_;  // "cluster kind epoch as created|changed"
  std::vector<std::string> changed_;   // see Changed
};

template <class Fn>
std::chrono::milliseconds Timed(Fn&& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

}  // namespace

TEST_CASE("ClusterObserver against two gantry-sim clusters", "[observer][e2e]") {
  const std::string sim_bin = std::string(GANTRY_BIN_DIR "/gantry-sim");
  if (ReadFile(sim_bin).empty()) {
    WARN("gantry-sim was not built: skipping");
    return;
  }
  TempDir dir;
  std::string sim_dir = dir.File("sim");
  WriteFile(dir.File("sim.yaml"),
            "clusters:\n"
            "- {name: c1, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 4}\n"
            "- {name: c2, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 4}\n");
  Process sim({sim_bin, "--config", dir.File("sim.yaml"), "--out-dir", sim_dir}, dir.path());
  REQUIRE(WaitFor([&] { return !ReadFile(sim_dir + "/ready").empty(); }, std::chrono::seconds(20)));
  auto cluster = [&](const std::string& name) {
    auto creds = inventory::LoadKubeconfig(sim_dir + "/" + name + ".kubeconfig", "", false);
    REQUIRE(creds.ok());
    return ObservedCluster{name, inventory::KueueApiVersion::kV1beta2, *creds};
  };
  const ObservedCluster c1 = cluster("c1"), c2 = cluster("c2");
  auto client = [](const ObservedCluster& c) {
    auto kc = kube::KubeClient::Create(c.credentials);
    REQUIRE(kc.ok());
    return std::move(*kc);
  };
  auto kc1 = client(c1), kc2 = client(c2);

  dispatch::ObserverOptions options;
  options.watch_timeout_seconds = 1;  // bounds Stop(); see observer_impl.h
  options.request_timeout = std::chrono::seconds(2);
  options.max_backoff = std::chrono::milliseconds(200);
  options.unserved_recheck = std::chrono::seconds(2);
  // TrainJobs are served by the sim; Widgets are not (no CRD): listed as empty.
  options.generic_kinds = {{"trainer.kubeflow.org/v1alpha1", "TrainJob"}, {"example.com/v1", "Widget"}};
  FakeClock clock(1'800'000'000'000);  // stamps when a view fell behind
  options.clock = &clock;
  ChangeLog changes;
  ClusterObserver observer(options, [&](const ClusterObserver::Observed& what) {
    changes.Add(what);
  });
  observer.SetClusters({c1, c2});
  REQUIRE(WaitFor([&] { return observer.Synced("c1") && observer.Synced("c2"); },
                  std::chrono::seconds(20)));
  CHECK_FALSE(observer.Synced("c3"));
  auto in = [&](const std::string& cluster_name, const std::string& uid) {
    return observer.ForJob(uid).clusters[cluster_name];
  };

  SECTION("objects appear, change and disappear; objects without the origin label are never seen") {
    // The stray goes first: had its event been let through, it would precede w1's on the same
    // stream.
    REQUIRE(kc1->Create(kWorkloadsPath, Workload("stray", "uid-stray", false))->status == 201);
    auto created = kc1->Create(kWorkloadsPath, Workload("w1", "uid-1"));
    REQUIRE(created->status == 201);
    REQUIRE(kc1->Create(kJobsPath, Job("j1", "uid-1", "w1"))->status == 201);
    REQUIRE(WaitFor([&] {
      auto o = in("c1", "uid-1");
      return o.workloads.size() == 1 && o.jobs.size() == 1 && changes.Has("uid-1");
    }));
    // Both appeared as created, at the epoch of their annotation.
    CHECK(changes.Appeared("c1 Workload") == std::vector<std::string>{"c1 Workload 2 as created"});
    CHECK(changes.Appeared("c1 Job") == std::vector<std::string>{"c1 Job 2 as created"});
    auto seen = observer.ForJob("uid-1");
    auto& all = seen.clusters;
    CHECK(*seen.synced == std::set<std::string>{"c1", "c2"});
    REQUIRE(all.size() == 1);  // only the clusters that show objects of the job
    CHECK(all.count("c2") == 0);
    const auto& w = all["c1"].workloads[0];
    CHECK(w.name == "w1");
    CHECK(w.ns == "team-a");
    CHECK(w.k8s_uid == created->body["metadata"]["uid"]);
    CHECK(w.epoch == 2);
    CHECK(all["c1"].jobs[0].kind == "Job");
    CHECK(all["c1"].jobs[0].name == "j1");
    CHECK_FALSE(changes.Has("uid-stray"));
    CHECK(in("c1", "uid-stray").workloads.empty());
    CHECK(observer.AllJobUids() == std::vector<std::string>{"uid-1"});

    // The sim's Kueue admits w1 and starts j1: MODIFIED events.
    CHECK(WaitFor([&] {
      auto o = in("c1", "uid-1");
      return o.workloads.size() == 1 && o.workloads[0].admitted && o.jobs.size() == 1 &&
             o.jobs[0].state != dispatch::RemoteJobState::kSuspended;
    }));

    CHECK_FALSE(changes.HasGone("uid-1"));  // appearing and changing is not going
    changes.Clear();
    REQUIRE(kc1->Delete(kWorkloadsPath + "/w1")->ok());
    CHECK(WaitFor([&] { return in("c1", "uid-1").workloads.empty() && changes.HasGone("uid-1"); }));
    // The job's last object gone, the job is gone from the view.
    CHECK(in("c1", "uid-1").jobs.size() == 1);
    CHECK(observer.AllJobUids() == std::vector<std::string>{"uid-1"});
    REQUIRE(kc1->Delete(kJobsPath + "/j1")->ok());
    CHECK(WaitFor([&] { return observer.ForJob("uid-1").clusters.empty(); }));
    CHECK(observer.AllJobUids().empty());
    CHECK(observer.ForJob("uid-1").finished_gone.empty());  // deleted unfinished: nothing to tell
  }

  SECTION("a finished Workload deleted in its cluster is remembered as it was last seen") {
    REQUIRE(kc1->Create(kWorkloadsPath, Workload("w6", "uid-6"))->status == 201);
    json finished = {{"type", "Finished"}, {"status", "True"}, {"reason", "Succeeded"},
                     {"message", "Job finished successfully"}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
    auto patched = kc1->MergePatch(kWorkloadsPath + "/w6/status", {{"status", {{"conditions", {finished}}}}});
    REQUIRE(patched.ok());
    REQUIRE(patched->ok());
    REQUIRE(WaitFor([&] {
      auto o = in("c1", "uid-6");
      return o.workloads.size() == 1 && o.workloads[0].finished;
    }));
    CHECK(observer.ForJob("uid-6").finished_gone.empty());  // still there: nothing remembered
    changes.Clear();
    REQUIRE(kc1->Delete(kWorkloadsPath + "/w6")->ok());
    REQUIRE(WaitFor([&] { return changes.HasGone("uid-6"); }));
    const dispatch::JobObservation after = observer.ForJob("uid-6");
    CHECK(after.clusters.empty());
    REQUIRE(after.finished_gone.count("c1") == 1);
    REQUIRE(after.finished_gone.at("c1").size() == 1);
    const dispatch::ObservedWorkload& last = after.finished_gone.at("c1")[0];
    CHECK(last.finished);
    CHECK(last.epoch == 2);
    CHECK(last.reason == "Succeeded");
    CHECK(last.message == "Job finished successfully");
    CHECK(after.finished_gone.count("c2") == 0);
  }

  SECTION("a running job whose pod counts alone change is told so; a change of state is not status only") {
    REQUIRE(kc1->Create(kWorkloadsPath, Workload("w5", "uid-5"))->status == 201);
    REQUIRE(kc1->Create(kJobsPath, Job("j5", "uid-5", "w5"))->status == 201);
    REQUIRE(WaitFor([&] {
      auto o = in("c1", "uid-5");
      return o.jobs.size() == 1 && o.jobs[0].state == dispatch::RemoteJobState::kRunning;
    }));
    // It started: a change for decisions (the sim's unsuspend).
    CHECK(changes.Changed("uid-5 Job") == std::vector<std::string>{"uid-5 Job for decisions"});
    auto counts = kc1->MergePatch(kJobsPath + "/j5/status", {{"status", {{"active", 7}}}});
    REQUIRE(counts.ok());
    REQUIRE(counts->ok());
    REQUIRE(WaitFor([&] { return changes.Changed("uid-5 Job").size() == 2; }));
    CHECK(changes.Changed("uid-5 Job").back() == "uid-5 Job status only");
    CHECK(in("c1", "uid-5").jobs[0].summary.find("active 7") != std::string::npos);
    // Its end is a change of state, whatever the counts.
    json complete = {{"type", "Complete"}, {"status", "True"}, {"reason", "Done"}};
    auto done = kc1->MergePatch(kJobsPath + "/j5/status",
                                {{"status", {{"active", 0}, {"succeeded", 1}, {"conditions", {complete}}}}});
    REQUIRE(done.ok());
    REQUIRE(done->ok());
    REQUIRE(WaitFor([&] { return changes.Changed("uid-5 Job").size() == 3; }));
    CHECK(changes.Changed("uid-5 Job").back() == "uid-5 Job for decisions");
    CHECK(in("c1", "uid-5").jobs[0].state == dispatch::RemoteJobState::kSucceeded);
  }

  SECTION("a cluster whose watches break is behind, still synced, until a relist shows what came meanwhile") {
    REQUIRE(kc2->Create(kWorkloadsPath, Workload("w2", "uid-2"))->status == 201);
    REQUIRE(WaitFor([&] { return in("c2", "uid-2").workloads.size() == 1; }));
    CHECK_FALSE(observer.Behind("c2"));
    CHECK(observer.ForJob("uid-2").behind->empty());
    // Every resource listed at the clock's time (the kind it does not serve
    // counts): a relist for an outage that ended then asks none to list again.
    CHECK(observer.Relist("c2", 1'800'000'000'000) == 0);
    CHECK_FALSE(observer.Behind("c2"));
    CHECK(observer.Relist("c9", 1) == 0);  // not watched
    // Its apiserver down: the watches break, and the view may now miss changes.
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "partition", "c2", "1"}).code == 0);
    // (Each watch finds its stream broken on its own: Behind says one did,
    // the job's view counts the Workloads' watch, which may come a moment later.)
    REQUIRE(WaitFor([&] { return observer.Behind("c2") && !observer.ForJob("uid-2").behind->empty(); },
                    std::chrono::seconds(10)));
    CHECK(observer.ViewBehind("c2").since_ms == 1'800'000'000'000);  // the observer's clock, not the system's
    clock.Advance(1000);
    const dispatch::JobObservation during = observer.ForJob("uid-2");
    CHECK(*during.behind == std::set<std::string>{"c2"});
    CHECK(during.synced->count("c2") == 1);  // what it held is still shown
    CHECK(during.clusters.count("c2") == 1);
    CHECK_FALSE(observer.Behind("c1"));
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "heal", "c2"}).code == 0);
    REQUIRE(WaitFor([&] {
      auto r = kc2->Create(kWorkloadsPath, Workload("w4", "uid-4"));
      return r.ok() && (r->status == 201 || r->status == 409);
    }, std::chrono::seconds(10)));
    observer.Relist("c2");
    REQUIRE(WaitFor([&] { return !observer.Behind("c2"); }, std::chrono::seconds(20)));
    CHECK(in("c2", "uid-4").workloads.size() == 1);  // the relist brought it
    // Every resource listed after the heal: none to list again for it.
    CHECK(observer.Relist("c2", 1'800'000'001'000) == 0);
    CHECK_FALSE(observer.Behind("c2"));
    CHECK(in("c2", "uid-2").workloads.size() == 1);
    CHECK(observer.ForJob("uid-4").behind->empty());

    // Asked to relist a cluster whose watches are live (a stream may have
    // died silently): behind at once, current again once every resource
    // has listed, at its stream's end (1 s here) rather than resuming it.
    // (Its resources listed before the clock's time: each but the kind it
    // does not serve, Widgets, is asked.)
    CHECK(observer.Relist("c1", 1'800'000'001'000) == 4);
    CHECK(observer.Behind("c1"));
    CHECK(observer.ForJob("uid-4").behind->count("c1") == 1);
    CHECK(WaitFor([&] { return !observer.Behind("c1"); }, std::chrono::seconds(10)));
    CHECK(observer.Synced("c1"));
  }

  SECTION("a cluster that refuses gantry a list of Workloads is not synced, and says why, until it allows it") {
    CHECK(observer.WatchRefusals()["c1"].empty());
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c1", "workloads"}).code == 0);
    // The open watch goes on until its end (1 s here); the relist is refused.
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "kill-watches", "c1"}).code == 0);
    REQUIRE(WaitFor([&] { return !observer.Synced("c1"); }, std::chrono::seconds(10)));
    CHECK(observer.Unlisted("c1") == std::set<std::string>{"workloads"});
    CHECK(observer.Unlisted("c2").empty());
    CHECK(observer.Unlisted("c9").empty());  // not watched
    CHECK(observer.WatchRefusals()["c1"].find("403") != std::string::npos);
    CHECK(observer.WatchRefusals()["c1"].find("listing workloads answered 403") != std::string::npos);
    CHECK(observer.Synced("c2"));
    CHECK(observer.WatchRefusals()["c2"].empty());
    CHECK(*observer.ForJob("uid-x").synced == std::set<std::string>{"c2"});

    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c1"}).code == 0);
    REQUIRE(WaitFor([&] { return observer.Synced("c1"); }, std::chrono::seconds(10)));
    CHECK(observer.WatchRefusals()["c1"].empty());

    // JobSets (optional: a cluster may not grant them) refused: refused at
    // once for JobSet jobs only; the cluster stays synced, and current, for
    // its Jobs and for the kinds it does not watch.
    const dispatch::JobKind job{"batch/v1", "Job"};
    const dispatch::JobKind jobset{"jobset.x-k8s.io/v1alpha2", "JobSet"};
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c2", "jobsets"}).code == 0);
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "kill-watches", "c2"}).code == 0);
    REQUIRE(WaitFor([&] { return !observer.KindRefusals().empty(); }, std::chrono::seconds(10)));
    CHECK(observer.KindRefusals()["c2"]["jobsets"].find("listing jobsets answered 403") != std::string::npos);
    CHECK(observer.WatchRefusals().empty());
    REQUIRE(kc2->Create(kWorkloadsPath, Workload("w9", "uid-9"))->status == 201);
    REQUIRE(WaitFor([&] { return in("c2", "uid-9").workloads.size() == 1; }, std::chrono::seconds(10)));
    CHECK(observer.SyncedForJobs("c2"));
    CHECK(observer.ForJob("uid-9", job).synced->count("c2") == 1);
    CHECK(observer.ForJob("uid-9").synced->count("c2") == 1);
    CHECK(observer.ForJob("uid-9", jobset).synced->count("c2") == 0);
    // Refused, not behind: nothing of it is left to catch up with.
    CHECK(WaitFor([&] { return !observer.Behind("c2"); }, std::chrono::seconds(10)));
    CHECK(observer.ViewBehind("c2").resources.empty());
    // So from the start: a new observer syncs it for Jobs at once.
    ClusterObserver fresh(options, [](const ClusterObserver::Observed&) {});
    fresh.SetClusters({c2});
    CHECK(WaitFor([&] { return fresh.SyncedForJobs("c2") && !fresh.KindRefusals().empty(); },
                  std::chrono::seconds(10)));
    CHECK_FALSE(fresh.Synced("c2"));
    // The other kinds list (or answer 404, TrainJobs here) on their own threads, soon after.
    CHECK(WaitFor([&] { return fresh.Unlisted("c2") == std::set<std::string>{"jobsets"}; }, std::chrono::seconds(10)));
    const uint64_t changes = fresh.ListedChanges("c2");
    CHECK(changes > 0);  // from nothing listed to all but the JobSets
    CHECK(fresh.ListedChanges("nope") == 0);
    // Allowed again: listed, nothing refused; the change is counted.
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c2"}).code == 0);
    CHECK(WaitFor([&] { return fresh.Synced("c2") && fresh.KindRefusals().empty(); }, std::chrono::seconds(20)));
    CHECK(fresh.Unlisted("c2").empty());
    CHECK(fresh.ListedChanges("c2") > changes);
    fresh.Stop();
  }

  SECTION("lists of Jobs that keep failing are told once it lasts, first lists or relists; an optional kind's to its jobs only") {
    auto ctl = [&](std::vector<std::string> args) {
      std::vector<std::string> argv = {sim_bin, "ctl", "--out-dir", sim_dir};
      argv.insert(argv.end(), args.begin(), args.end());
      return Run(argv).code;
    };
    auto refused = [](const ClusterObserver& o) { return o.WatchRefusals().count("c2") > 0; };
    dispatch::ObserverOptions slow = options;
    slow.list_errors_told_after = std::chrono::seconds(5);  // of `clock`, which only the test moves
    // c2's Jobs answer 500 (a broken conversion webhook, say), and c2 is
    // watched afresh: its first lists of Jobs fail.
    REQUIRE(ctl({"forbid", "c2", "jobs=500"}) == 0);
    ClusterObserver fresh(slow, [](const ClusterObserver::Observed&) {});
    fresh.SetClusters({c2});
    REQUIRE(WaitFor([&] { return fresh.Behind("c2"); }, std::chrono::seconds(10)));
    // Failing list after list (every 200 ms here), but not for 5 s yet: not told.
    CHECK_FALSE(WaitFor([&] { return refused(fresh); }, std::chrono::seconds(2)));
    CHECK_FALSE(fresh.Synced("c2"));
    clock.Advance(5'000);
    REQUIRE(WaitFor([&] { return refused(fresh); }, std::chrono::seconds(10)));
    CHECK(fresh.WatchRefusals()["c2"].find("listing jobs answered 500") != std::string::npos);
    CHECK_FALSE(fresh.Synced("c2"));
    // Answering again: synced, nothing told.
    REQUIRE(ctl({"forbid", "c2"}) == 0);
    REQUIRE(WaitFor([&] { return fresh.Synced("c2"); }, std::chrono::seconds(10)));
    CHECK_FALSE(refused(fresh));

    // The same error to the relists of a view already listed: behind and
    // still synced while it is a blip; told, and unsynced, once it lasts.
    // (The clock moves a second at each look: a failed list must have
    // started the count first.)
    REQUIRE(ctl({"forbid", "c2", "jobs=500"}) == 0);
    REQUIRE(ctl({"kill-watches", "c2"}) == 0);
    REQUIRE(WaitFor([&] { return fresh.Behind("c2"); }, std::chrono::seconds(10)));
    CHECK_FALSE(WaitFor([&] { return refused(fresh); }, std::chrono::seconds(1)));
    CHECK(fresh.Synced("c2"));
    REQUIRE(WaitFor([&] {
      clock.Advance(1'000);
      return refused(fresh);
    }, std::chrono::seconds(10)));
    CHECK(fresh.WatchRefusals()["c2"].find("listing jobs answered 500") != std::string::npos);
    CHECK_FALSE(fresh.Synced("c2"));
    REQUIRE(ctl({"forbid", "c2"}) == 0);
    CHECK(WaitFor([&] { return fresh.Synced("c2") && !fresh.Behind("c2"); }, std::chrono::seconds(10)));
    CHECK_FALSE(refused(fresh));
    fresh.Stop();

    // An optional kind's (JobSets): the cluster is synced, and current, for
    // its Jobs (and for a kind not watched: its Workloads only) from the
    // start; only the JobSets' view is not. Once it lasts, it is told to
    // the jobs of that kind only (KindRefusals), not as the cluster's.
    REQUIRE(ctl({"forbid", "c2", "jobsets=500"}) == 0);
    ClusterObserver optional(slow, [](const ClusterObserver::Observed&) {});
    optional.SetClusters({c2});
    const dispatch::JobKind job{"batch/v1", "Job"};
    const dispatch::JobKind jobset{"jobset.x-k8s.io/v1alpha2", "JobSet"};
    REQUIRE(WaitFor([&] { return optional.ForJob("uid-x", job).synced->count("c2") == 1; },
                    std::chrono::seconds(10)));
    REQUIRE(WaitFor([&] { return optional.Behind("c2"); }, std::chrono::seconds(10)));
    CHECK(optional.ForJob("uid-x", job).behind->empty());
    CHECK(optional.ForJob("uid-x", job).resource == "jobs");
    CHECK(optional.ForJob("uid-x").synced->count("c2") == 1);
    CHECK(optional.ForJob("uid-x").resource.empty());
    CHECK(optional.ForJob("uid-x", jobset).synced->empty());
    CHECK(optional.ForJob("uid-x", jobset).behind->count("c2") == 1);
    CHECK(optional.ForJob("uid-x", jobset).resource == "jobsets");
    CHECK(optional.SyncedForJobs("c2"));
    CHECK_FALSE(optional.Synced("c2"));
    CHECK_FALSE(optional.Listed("c2", "jobsets"));
    CHECK(optional.KindRefusals().empty());
    // The other kinds have listed; JobSets never have. Their refusal, once
    // told, still moves the cluster's stamp: the health watch wakes the jobs
    // with objects there, which see it (a JobSet job's copy is withdrawn).
    REQUIRE(WaitFor([&] { return optional.Unlisted("c2") == std::set<std::string>{"jobsets"}; },
                    std::chrono::seconds(10)));
    const uint64_t stamp = optional.ListedChanges("c2");
    REQUIRE(WaitFor([&] {
      clock.Advance(1'000);
      return !optional.KindRefusals().empty();
    }, std::chrono::seconds(10)));
    CHECK(optional.ListedChanges("c2") > stamp);
    CHECK(optional.KindRefusals()["c2"]["jobsets"].find("listing jobsets answered 500") != std::string::npos);
    CHECK(optional.WatchRefusals().empty());
    CHECK(optional.ForJob("uid-x", job).synced->count("c2") == 1);
    // Listed again: synced for every kind, nothing told.
    REQUIRE(ctl({"forbid", "c2"}) == 0);
    REQUIRE(WaitFor([&] { return optional.Synced("c2"); }, std::chrono::seconds(10)));
    CHECK(optional.KindRefusals().empty());
    CHECK(optional.Listed("c2", "jobsets"));
    CHECK(optional.ForJob("uid-x", jobset).synced->count("c2") == 1);
    CHECK(optional.WatchRefusals().empty());
    // Told again (relists failing), then its CRD uninstalled (404): no
    // JobSet can be there unseen, so the refusal is over.
    REQUIRE(ctl({"forbid", "c2", "jobsets=500"}) == 0);
    REQUIRE(ctl({"kill-watches", "c2"}) == 0);
    REQUIRE(WaitFor([&] {
      clock.Advance(1'000);
      return !optional.KindRefusals().empty();
    }, std::chrono::seconds(10)));
    CHECK(optional.ForJob("uid-x", jobset).synced->empty());
    REQUIRE(ctl({"forbid", "c2", "jobsets=404"}) == 0);
    REQUIRE(WaitFor([&] { return optional.KindRefusals().empty(); }, std::chrono::seconds(10)));
    CHECK(optional.Listed("c2", "jobsets"));
    CHECK(optional.ForJob("uid-x", jobset).synced->count("c2") == 1);
    CHECK(optional.WatchRefusals().empty());
    optional.Stop();
    REQUIRE(ctl({"forbid", "c2"}) == 0);
  }

  SECTION("an optional kind unserved (404) for list_errors_told_after: what its view held is gone with its CRD") {
    const dispatch::JobKind trainjob{"trainer.kubeflow.org/v1alpha1", "TrainJob"};
    REQUIRE(kc2->Create(kWorkloadsPath, Workload("w5", "uid-5"))->status == 201);
    REQUIRE(kc2->Create(kTrainJobsPath, TrainJob("t5", "uid-5", "w5"))->status == 201);
    REQUIRE(WaitFor([&] { return observer.ForJob("uid-5", trainjob).clusters["c2"].jobs.size() == 1; }));
    // The CRD is uninstalled (or unserved a moment, in an upgrade): at first
    // the view keeps what it held.
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c2", "trainjobs=404"}).code == 0);
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "kill-watches", "c2"}).code == 0);
    CHECK_FALSE(WaitFor([&] { return observer.ForJob("uid-5", trainjob).clusters["c2"].jobs.empty(); },
                        std::chrono::seconds(2)));
    CHECK(observer.ForJob("uid-5", trainjob).synced->count("c2") == 1);
    // Unserved for a minute of the observer's clock: gone, the job told.
    changes.Clear();
    REQUIRE(WaitFor([&] {
      clock.Advance(10'000);
      return observer.ForJob("uid-5", trainjob).clusters["c2"].jobs.empty();
    }, std::chrono::seconds(10)));
    CHECK(changes.Has("uid-5"));  // the job is told (as by a relist that no longer shows it)
    CHECK(in("c2", "uid-5").workloads.size() == 1);  // the Workloads are served: untouched
    CHECK(observer.KindRefusals().empty());
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c2"}).code == 0);
  }

  SECTION("an optional kind refused, then unserved (404) a moment: its view keeps what it held") {
    const dispatch::JobKind trainjob{"trainer.kubeflow.org/v1alpha1", "TrainJob"};
    REQUIRE(kc2->Create(kWorkloadsPath, Workload("w6", "uid-6"))->status == 201);
    REQUIRE(kc2->Create(kTrainJobsPath, TrainJob("t6", "uid-6", "w6"))->status == 201);
    REQUIRE(WaitFor([&] { return observer.ForJob("uid-6", trainjob).clusters["c2"].jobs.size() == 1; }));
    // Refused (403): the kind's thread waits unserved_recheck, then asks again.
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c2", "trainjobs"}).code == 0);
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "kill-watches", "c2"}).code == 0);
    REQUIRE(WaitFor([&] { return !observer.KindRefusals().empty(); }, std::chrono::seconds(10)));
    // Asked again, it answers 404 (its CRD unserved for a moment): the
    // refusal is over, and what the view held stays until the 404s have
    // lasted list_errors_told_after.
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c2", "trainjobs=404"}).code == 0);
    REQUIRE(WaitFor([&] { return observer.KindRefusals().empty(); }, std::chrono::seconds(10)));
    CHECK(observer.ForJob("uid-6", trainjob).clusters["c2"].jobs.size() == 1);
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "forbid", "c2"}).code == 0);
  }

  SECTION("a generic kind is watched like a Job") {
    REQUIRE(kc2->Create(kWorkloadsPath, Workload("w3", "uid-3"))->status == 201);
    REQUIRE(kc2->Create(kTrainJobsPath, TrainJob("t3", "uid-3", "w3"))->status == 201);
    // The sim's Kueue admits w3 and starts t3 (spec.suspend false).
    CHECK(WaitFor([&] {
      auto o = in("c2", "uid-3");
      return o.jobs.size() == 1 && o.jobs[0].state == dispatch::RemoteJobState::kRunning;
    }));
    auto o = in("c2", "uid-3");
    REQUIRE(o.jobs.size() == 1);
    CHECK(o.jobs[0].kind == "TrainJob");
    CHECK(o.jobs[0].api_version == "trainer.kubeflow.org/v1alpha1");
    CHECK(o.jobs[0].epoch == 2);
    CHECK(changes.Appeared("c2 Job") == std::vector<std::string>{"c2 Job 2 as created"});
    // Its delete goes where it was created.
    CHECK(dispatch::DeleteJobAction("c2", o.jobs[0]).path == kTrainJobsPath + "/t3");
    changes.Clear();
    REQUIRE(kc2->Delete(kTrainJobsPath + "/t3")->ok());
    CHECK(WaitFor([&] { return in("c2", "uid-3").jobs.empty() && changes.HasGone("uid-3"); }));
  }

  SECTION("SetClusters forgets, restarts and re-adds clusters; Stop is prompt") {
    REQUIRE(kc2->Create(kWorkloadsPath, Workload("w2", "uid-2"))->status == 201);
    REQUIRE(WaitFor([&] { return in("c2", "uid-2").workloads.size() == 1; }));

    CHECK(Timed([&] { observer.SetClusters({c1}); }) <
          std::chrono::seconds(1));  // never waits on a thread
    CHECK(observer.ForJob("uid-2").clusters.count("c2") == 0);
    CHECK(observer.ForJob("uid-2").synced->count("c2") == 0);
    CHECK_FALSE(observer.Synced("c2"));
    CHECK(observer.AllJobUids().empty());

    ObservedCluster c1_v1beta1 = c1;  // a changed Kueue version restarts c1's watches
    c1_v1beta1.kueue_version = inventory::KueueApiVersion::kV1beta1;
    observer.SetClusters({c1_v1beta1});
    CHECK(WaitFor([&] { return observer.Synced("c1"); }));

    // c2 comes back answering 404 to everything: unsynced until it answers again.
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "errors", "c2", "1.0", "404"}).code == 0);
    observer.SetClusters({c1_v1beta1, c2});
    CHECK_FALSE(observer.Synced("c2"));
    CHECK(in("c2", "uid-2").workloads.empty());
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "errors", "c2", "0"}).code == 0);
    CHECK(
        WaitFor([&] { return observer.Synced("c2") && in("c2", "uid-2").workloads.size() == 1; }));

    // Bound: watch_timeout_seconds (1 s) + one request; see observer_impl.h.
    CHECK(Timed([&] { observer.Stop(); }) < std::chrono::seconds(4));
    CHECK(observer.ForJob("uid-2").clusters.empty());
    CHECK(observer.ForJob("uid-2").synced->empty());
    observer.SetClusters({c1});  // ignored after Stop
    CHECK_FALSE(observer.Synced("c1"));
  }
}

}  // namespace gantry::testing
