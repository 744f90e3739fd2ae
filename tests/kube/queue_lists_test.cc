// The probe's reading of a worker's queues: every ClusterQueue described
// (flavors, cohort, Active) beside the sums, the LocalQueues mapped to
// them, and what a failed list of either makes of the probe.
#include <catch2/catch.hpp>

#include "gantry/kube/kube_prober.h"

namespace gantry::testing {
namespace {

using nlohmann::json;
using placement::QueueActivity;

json Resource(const char* name, const char* nominal, const char* borrowing_limit = nullptr) {
  json r = {{"name", name}, {"nominalQuota", nominal}};
  if (borrowing_limit) r["borrowingLimit"] = borrowing_limit;
  return r;
}

json Condition(const char* status, const char* reason, const char* message) {
  return {{"type", "Active"}, {"status", status}, {"reason", reason}, {"message", message}};
}

// team-a-cq (v1beta2 cohortName research): gpu in flavors a100 (8) and
// h100 (4, borrowingLimit 2), cpu in one group of its own; 3 a100 GPUs
// reserved. team-b-cq (v1beta1 cohort research): 64 h100, 16 reserved.
// idle-cq: inactive, no cohort, no Active reason text beyond its reason.
json ClusterQueues() {
  json team_a = {
      {"metadata", {{"name", "team-a-cq"}}},
      {"spec",
       {{"cohortName", "research"},
        {"resourceGroups",
         {{{"coveredResources", {"nvidia.com/gpu"}},
           {"flavors",
            {{{"name", "a100"}, {"resources", {Resource("nvidia.com/gpu", "8")}}},
             {{"name", "h100"}, {"resources", {Resource("nvidia.com/gpu", "4", "2")}}}}}},
          {{"coveredResources", {"cpu"}},
           {"flavors", {{{"name", "default"}, {"resources", {Resource("cpu", "100")}}}}}}}}}},
      {"status",
       {{"pendingWorkloads", 2},
        {"conditions", {Condition("True", "Ready", "Can admit new workloads")}},
        {"flavorsReservation",
         {{{"name", "a100"}, {"resources", {{{"name", "nvidia.com/gpu"}, {"total", "3"}}}}},
          {{"name", "h100"}, {"resources", {{{"name", "nvidia.com/gpu"}, {"total", "0"}}}}}}}}}};
  json team_b = {
      {"metadata", {{"name", "team-b-cq"}}},
      {"spec",
       {{"cohort", "research"},
        {"resourceGroups",
         {{{"coveredResources", {"nvidia.com/gpu"}},
           {"flavors", {{{"name", "h100"}, {"resources", {Resource("nvidia.com/gpu", "64")}}}}}}}}}},
      {"status",
       {{"conditions", {Condition("True", "Ready", "Can admit new workloads")}},
        {"flavorsReservation",
         {{{"name", "h100"}, {"resources", {{{"name", "nvidia.com/gpu"}, {"total", "16"}}}}}}}}}};
  json idle = {
      {"metadata", {{"name", "idle-cq"}}},
      {"spec",
       {{"resourceGroups",
         {{{"coveredResources", {"nvidia.com/gpu"}},
           {"flavors", {{{"name", "l4"}, {"resources", {Resource("nvidia.com/gpu", "2")}}}}}}}}}},
      {"status",
       {{"conditions",
         {Condition("False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): [l4]")}}}}};
  return {{"kind", "ClusterQueueList"}, {"items", {team_a, team_b, idle}}};
}

json LocalQueue(const char* ns, const char* name, const char* cq) {
  return {{"metadata", {{"namespace", ns}, {"name", name}}}, {"spec", {{"clusterQueue", cq}}}};
}

json LocalQueues() {
  return {{"kind", "LocalQueueList"},
          {"items",
           {LocalQueue("ml", "team-a", "team-a-cq"), LocalQueue("ml", "team-b", "team-b-cq"),
            LocalQueue("web", "team-a", "team-b-cq"), LocalQueue("ml", "idle", "idle-cq")}}};
}

kube::KubeReply Reply(int status, json body = json::object(), const char* message = "") {
  kube::KubeReply r;
  r.status = status;
  r.body = std::move(body);
  if (status >= 300) r.error = kube::KubeError{status, "", message};
  return r;
}

json StatusBody(int code) { return {{"kind", "Status"}, {"apiVersion", "v1"}, {"code", code}}; }

}  // namespace

TEST_CASE("each ClusterQueue is described beside the sums, and each LocalQueue mapped to its own",
          "[kube][prober][queues]") {
  const json lqs = LocalQueues();
  const inventory::CapacityReading r = kube::ParseClusterQueues(ClusterQueues(), &lqs);
  REQUIRE(r.unreadable.empty());
  // The sums stay what gantry clusters and the metrics show.
  CHECK(r.quota.at("nvidia.com/gpu").nominal_milli == 78'000);
  CHECK(r.quota.at("nvidia.com/gpu").reserved_milli == 19'000);
  CHECK(r.quota.at("cpu").nominal_milli == 100'000);
  CHECK(r.pending_workloads == 2);
  CHECK(r.cluster_queues == std::vector<std::string>{"team-a-cq", "team-b-cq", "idle-cq"});

  REQUIRE(r.queues);
  const placement::ClusterQueues& q = *r.queues;
  REQUIRE(q.by_name.size() == 3);
  const placement::ClusterQueueInfo& a = q.by_name.at("team-a-cq");
  CHECK(a.cohort == "research");
  CHECK(a.activity == QueueActivity::kActive);
  REQUIRE(a.resources.at("nvidia.com/gpu").size() == 2);
  const placement::FlavorQuota& a100 = a.resources.at("nvidia.com/gpu")[0];
  const placement::FlavorQuota& h100 = a.resources.at("nvidia.com/gpu")[1];
  CHECK(a100.flavor == "a100");
  CHECK(a100.nominal_milli == 8'000);
  CHECK(a100.reserved_milli == 3'000);
  CHECK_FALSE(a100.borrowing_limit_milli);
  CHECK(h100.flavor == "h100");
  CHECK(h100.nominal_milli == 4'000);
  CHECK(h100.borrowing_limit_milli == 2'000);
  CHECK(h100.reserved_milli == 0);
  CHECK(a.resources.at("cpu").at(0).nominal_milli == 100'000);
  const placement::ClusterQueueInfo& b = q.by_name.at("team-b-cq");
  CHECK(b.cohort == "research");  // v1beta1's spec.cohort
  CHECK(b.resources.at("nvidia.com/gpu").at(0).reserved_milli == 16'000);
  CHECK_FALSE(b.resources.count("cpu"));
  const placement::ClusterQueueInfo& idle = q.by_name.at("idle-cq");
  CHECK(idle.cohort.empty());
  CHECK(idle.activity == QueueActivity::kInactive);
  CHECK(idle.inactive_message ==
        "FlavorNotFound: Can't admit new workloads: references missing ResourceFlavor(s): [l4]");

  CHECK(q.local_queues_known);
  CHECK(q.local_queues == std::map<std::string, std::string>{{"ml/team-a", "team-a-cq"},
                                                             {"ml/team-b", "team-b-cq"},
                                                             {"web/team-a", "team-b-cq"},
                                                             {"ml/idle", "idle-cq"}});
}

TEST_CASE("a ClusterQueue without an Active condition is of unknown activity", "[kube][prober][queues]") {
  json list = ClusterQueues();
  list["items"][0]["status"].erase("conditions");
  const inventory::CapacityReading r = kube::ParseClusterQueues(list);
  REQUIRE(r.queues);
  CHECK(r.queues->by_name.at("team-a-cq").activity == QueueActivity::kUnknown);
  // No LocalQueue list given: they are unknown, with a reason.
  CHECK_FALSE(r.queues->local_queues_known);
  CHECK_FALSE(r.queues->local_queues_error.empty());
}

TEST_CASE("a LocalQueue list refused or failed leaves the mapping unknown, and the probe a reading",
          "[kube][prober][queues]") {
  const kube::KubeReply cqs = Reply(200, ClusterQueues());
  struct Case {
    const char* what;
    Result<kube::KubeReply> lqs;
    const char* error;
  };
  const Case cases[] = {
      {"403", Reply(403, StatusBody(403), "localqueues.kueue.x-k8s.io is forbidden"),
       "listing LocalQueues is forbidden (403: localqueues.kueue.x-k8s.io is forbidden); grant gantry list on "
       "localqueues.kueue.x-k8s.io"},
      {"500", Reply(500, StatusBody(500), "etcd timed out"), "listing LocalQueues answered 500: etcd timed out"},
      {"no answer", Status::Deadline("timed out after 5000 ms"),
       "listing LocalQueues failed: timed out after 5000 ms"},
      {"not a list", Reply(200, json::array()), "the LocalQueue list is not a Kubernetes list"},
      {"a broken item", Reply(200, {{"items", {{{"metadata", {{"name", 7}}}}}}}), "the LocalQueue list: "},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto r = kube::ReadCapacity(cqs, c.lqs, true, "v1beta2");
    REQUIRE(r.ok());
    CHECK(r->unreadable.empty());
    CHECK(r->quota.at("nvidia.com/gpu").nominal_milli == 78'000);
    REQUIRE(r->queues);
    CHECK(r->queues->by_name.size() == 3);
    CHECK_FALSE(r->queues->local_queues_known);
    CHECK(r->queues->local_queues.empty());
    CHECK_THAT(r->queues->local_queues_error, Catch::StartsWith(c.error));
  }
  auto ok = kube::ReadCapacity(cqs, Reply(200, LocalQueues()), true, "v1beta2");
  REQUIRE(ok.ok());
  CHECK(ok->queues->local_queues_known);
  CHECK(ok->queues->local_queues.size() == 4);
}

TEST_CASE("a ClusterQueue list answering 404 or 5xx after /readyz is an unreadable capacity, not an outage",
          "[kube][prober][queues]") {
  const Result<kube::KubeReply> not_asked = Status::Unavailable("not asked");
  struct Case {
    kube::KubeReply cqs;
    const char* unreadable;
  };
  const Case cases[] = {
      {Reply(404, StatusBody(404), "the server could not find the requested resource"),
       "listing ClusterQueues answered 404: Kueue's CRDs at v1beta1 are not served"},
      {Reply(500, StatusBody(500), "conversion webhook for kueue.x-k8s.io failed"),
       "listing ClusterQueues answered 500: conversion webhook for kueue.x-k8s.io failed"},
      {Reply(503, json(nullptr)), "listing ClusterQueues answered 503: the cluster is up"},
      {Reply(403, StatusBody(403), "clusterqueues.kueue.x-k8s.io is forbidden"),
       "listing ClusterQueues is forbidden (403: clusterqueues.kueue.x-k8s.io is forbidden)"},
  };
  for (const Case& c : cases) {
    INFO(c.cqs.status);
    auto r = kube::ReadCapacity(c.cqs, not_asked, true, "v1beta1");
    REQUIRE(r.ok());  // the cluster stays Ready
    CHECK_THAT(r->unreadable, Catch::StartsWith(c.unreadable));
    CHECK(r->quota.empty());
    CHECK_FALSE(r->queues);
  }
  // The API server's own 401 is a refusal of the credentials, as on /readyz.
  auto refused = kube::ReadCapacity(Reply(401, StatusBody(401), "Unauthorized"), not_asked, true, "v1beta2");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kUnauthenticated);
}

TEST_CASE("the queues' stamp moves when a LocalQueue or a ClusterQueue's activity changes, not with usage",
          "[kube][prober][queues]") {
  const json lqs = LocalQueues();
  const uint64_t stamp = kube::ParseClusterQueues(ClusterQueues(), &lqs).queues->stamp;
  CHECK(stamp != 0);
  json busier = ClusterQueues();
  busier["items"][1]["status"]["flavorsReservation"][0]["resources"][0]["total"] = "40";
  CHECK(kube::ParseClusterQueues(busier, &lqs).queues->stamp == stamp);
  json more = LocalQueues();
  more["items"].push_back(LocalQueue("ml", "team-c", "team-b-cq"));
  CHECK(kube::ParseClusterQueues(ClusterQueues(), &more).queues->stamp != stamp);
  json active = ClusterQueues();
  active["items"][2]["status"]["conditions"][0]["status"] = "True";
  CHECK(kube::ParseClusterQueues(active, &lqs).queues->stamp != stamp);
  CHECK(kube::ParseClusterQueues(ClusterQueues()).queues->stamp == 0);  // LocalQueues unknown
}

json PriorityClass(const char* name, json value) {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "WorkloadPriorityClass"},
          {"metadata", {{"name", name}}}, {"value", std::move(value)}};
}

TEST_CASE("the WorkloadPriorityClass list gives each class's value, or says why it is unknown",
          "[kube][prober][queues]") {
  const json lqs = LocalQueues();
  const json classes = {{"items", {PriorityClass("high", 10000), PriorityClass("low", -5)}}};
  inventory::CapacityReading r = kube::ParseClusterQueues(ClusterQueues(), &lqs);
  const uint64_t without = r.queues->stamp;
  kube::AddPriorityClasses(r, Reply(200, classes));
  REQUIRE(r.queues);
  CHECK(r.queues->priority_classes_known);
  CHECK(r.queues->priority_classes == std::map<std::string, int32_t>{{"high", 10000}, {"low", -5}});
  CHECK(r.queues->local_queues.size() == 4);  // the rest of the reading kept
  CHECK(r.queues->stamp != without);          // a job waiting for a class is looked at again

  struct Case {
    const char* what;
    Result<kube::KubeReply> answer;
    const char* error;
  };
  const Case cases[] = {
      {"403", Reply(403, StatusBody(403), "workloadpriorityclasses.kueue.x-k8s.io is forbidden"),
       "listing WorkloadPriorityClasses is forbidden (403: workloadpriorityclasses.kueue.x-k8s.io is forbidden); "
       "grant gantry list on workloadpriorityclasses.kueue.x-k8s.io"},
      {"404", Reply(404, StatusBody(404), "not found"), "listing WorkloadPriorityClasses answered 404: not found"},
      {"no answer", Status::Deadline("timed out after 5000 ms"),
       "listing WorkloadPriorityClasses failed: timed out after 5000 ms"},
      {"not a list", Reply(200, json::array()), "the WorkloadPriorityClass list is not a Kubernetes list"},
      {"a value too large", Reply(200, {{"items", {PriorityClass("huge", int64_t{1} << 31)}}}),
       "the WorkloadPriorityClass list: item \"huge\" has no name or no int32 value"},
      {"a value that is a string", Reply(200, {{"items", {PriorityClass("text", "7")}}}),
       "the WorkloadPriorityClass list: item \"text\" has no name or no int32 value"},
      {"metadata that is a list", Reply(200, {{"items", {{{"metadata", json::array()}, {"value", 1}}}}}),
       "the WorkloadPriorityClass list: item ? has no name or no int32 value"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    inventory::CapacityReading failed = kube::ParseClusterQueues(ClusterQueues(), &lqs);
    kube::AddPriorityClasses(failed, c.answer);
    REQUIRE(failed.queues);
    CHECK_FALSE(failed.queues->priority_classes_known);
    CHECK(failed.queues->priority_classes.empty());
    CHECK(failed.queues->priority_classes_error == c.error);
    CHECK(failed.queues->local_queues_known);  // the LocalQueues stand
  }
  // A failure in passing (no answer, 5xx) keeps what the last list gave;
  // one for good (403) does not.
  const std::map<std::string, int32_t> last = {{"high", 10000}};
  inventory::CapacityReading listed = kube::ParseClusterQueues(ClusterQueues(), &lqs);
  kube::AddPriorityClasses(listed, Reply(200, {{"items", {PriorityClass("high", 10000)}}}));
  for (const Result<kube::KubeReply>& passing :
       {Result<kube::KubeReply>(Status::Deadline("timed out")), Result<kube::KubeReply>(Reply(503, StatusBody(503)))}) {
    inventory::CapacityReading kept = kube::ParseClusterQueues(ClusterQueues(), &lqs);
    CHECK_FALSE(kube::AddPriorityClasses(kept, passing, &last));
    CHECK(kept.queues->priority_classes_known);
    CHECK(kept.queues->priority_classes == last);
    CHECK(kept.queues->stamp == listed.queues->stamp);  // no wake-up for a passing failure
  }
  inventory::CapacityReading forbidden = kube::ParseClusterQueues(ClusterQueues(), &lqs);
  kube::AddPriorityClasses(forbidden, Reply(403, StatusBody(403), "no"), &last);
  CHECK_FALSE(forbidden.queues->priority_classes_known);
  CHECK(forbidden.queues->priority_classes.empty());
  // A reading with no queue description stays as it is.
  inventory::CapacityReading none = inventory::CapacityReading::Unreadable("listing ClusterQueues answered 500");
  kube::AddPriorityClasses(none, Reply(200, classes));
  CHECK_FALSE(none.queues);
}

}  // namespace gantry::testing
