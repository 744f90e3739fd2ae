// The pure admission decision: order, all-or-nothing fit and preemption
// within the ClusterQueue, as tables.
#include <catch2/catch.hpp>

#include "admission.h"
#include "demand.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using testing::kGpu;

ResourceList Gpus(int64_t n) { return {{kGpuResource, n * kGpu}}; }

struct Case {
  const char* what;
  int64_t quota_gpus;
  int64_t reserved_gpus;
  std::vector<AdmissionCandidate> pending;
  std::vector<std::string> admitted;  // in admission order
};

TEST_CASE("DecideAdmissions: order and all-or-nothing fit", "[sim][admission]") {
  std::vector<Case> cases = {
      {"fits exactly", 16, 0, {{"a", 0, 1, 0, Gpus(16)}}, {"a"}},
      {"one GPU too many stays pending", 16, 0, {{"a", 0, 1, 0, Gpus(17)}}, {}},
      {"reserved quota counts", 16, 8, {{"a", 0, 1, 0, Gpus(16)}, {"b", 0, 2, 1, Gpus(8)}}, {"b"}},
      {"creation order", 16, 0, {{"late", 0, 5, 1, Gpus(16)}, {"early", 0, 1, 0, Gpus(16)}}, {"early"}},
      {"priority beats age", 16, 0, {{"old", 0, 1, 0, Gpus(16)}, {"vip", 100, 9, 1, Gpus(16)}}, {"vip"}},
      {"big one does not block smaller (BestEffortFIFO)", 16, 0,
       {{"big", 0, 1, 0, Gpus(32)}, {"s1", 0, 2, 1, Gpus(8)}, {"s2", 0, 3, 2, Gpus(8)}, {"s3", 0, 4, 3, Gpus(8)}},
       {"s1", "s2"}},
      {"same creation time: arrival order", 8, 0, {{"second", 0, 1, 1, Gpus(8)}, {"first", 0, 1, 0, Gpus(8)}}, {"first"}},
      {"resource without quota never fits", 16, 0, {{"tpu", 0, 1, 0, {{"google.com/tpu", 1000}}}}, {}},
      {"zero demand fits", 0, 0, {{"empty", 0, 1, 0, {}}}, {"empty"}},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      auto verdicts = DecideAdmissions(Gpus(c.quota_gpus), Gpus(c.reserved_gpus), c.pending, "h100");
      std::vector<std::string> admitted;
      for (const auto& v : verdicts) {
        if (v.admitted) admitted.push_back(v.key);
        if (!v.admitted) CHECK_FALSE(v.message.empty());
      }
      CHECK(admitted == c.admitted);
    }
  }
}

TEST_CASE("DecideAdmissions: all-or-nothing across resources", "[sim][admission]") {
  ResourceList quota = {{"cpu", 10'000}, {kGpuResource, 16 * kGpu}};
  // GPUs fit but cpu does not: nothing of it is admitted.
  auto v = DecideAdmissions(quota, {}, {{"a", 0, 1, 0, {{"cpu", 11'000}, {kGpuResource, 8 * kGpu}}}}, "h100");
  REQUIRE(v.size() == 1);
  CHECK_FALSE(v[0].admitted);
  CHECK(v[0].message.find("cpu") != std::string::npos);
}

// Preemption within the ClusterQueue. The queue has 16 GPUs; the holders
// hold what their usage says (reserved is their sum).
QuotaHolder Holder(const std::string& key, int32_t priority, int64_t reserved_seq, int64_t gpus) {
  return {key, priority, reserved_seq, Gpus(gpus)};
}

AdmissionCandidate Pending(const std::string& key, int32_t priority, int64_t created_ms, int64_t gpus,
                           std::vector<std::string> closed_gates = {}) {
  return {key, priority, created_ms, created_ms, Gpus(gpus), std::move(closed_gates)};
}

struct PreemptionCase {
  const char* what;
  PreemptionPolicy policy;
  std::vector<QuotaHolder> holders;
  std::vector<AdmissionCandidate> pending;
  // The admitted, in admission order, as "key" or "key<-victim,victim".
  std::vector<std::string> admitted;
  // The message of the first Workload left pending ("" = none is).
  std::string first_pending_message = "";
};

const std::string kShort8 = "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in "
                            "flavor h100, 8 more needed";

TEST_CASE("DecideAdmissions: preemption within the ClusterQueue, behind preemption gates", "[sim][admission]") {
  const auto kLower = PreemptionPolicy::kLowerPriority;
  const std::vector<std::string> kGate = {"gantry.dev/preemption"};
  std::vector<PreemptionCase> cases = {
      {"fits: no victims", kLower, {Holder("low", 0, 0, 8)}, {Pending("vip", 100, 1, 8)}, {"vip"}},
      {"policy Never: none, it waits", PreemptionPolicy::kNever, {Holder("a", 0, 0, 8), Holder("b", 0, 1, 8)},
       {Pending("vip", 100, 1, 8)}, {}, kShort8},
      {"LowerPriority: the most recently reserved of the lowest priority", kLower,
       {Holder("old", 0, 0, 8), Holder("new", 0, 1, 8)}, {Pending("vip", 100, 1, 8)}, {"vip<-new"}},
      {"lowest priority first, however old", kLower, {Holder("mid", 50, 9, 8), Holder("low", 0, 0, 8)},
       {Pending("vip", 100, 1, 8)}, {"vip<-low"}},
      {"only as many as needed: taken until it fits", kLower,
       {Holder("a", 0, 0, 4), Holder("b", 0, 1, 4), Holder("c", 0, 2, 4), Holder("d", 0, 3, 4)},
       {Pending("vip", 100, 1, 8)}, {"vip<-d,c"}},
      {"only as many as needed: a victim it fits without is given back", kLower,
       {Holder("other", 10, 0, 6), Holder("big", 0, 1, 8), Holder("tiny", 0, 5, 2)},
       {Pending("vip", 100, 1, 8)}, {"vip<-big"}},
      {"equal priority is never a victim", kLower, {Holder("a", 100, 0, 8), Holder("b", 100, 1, 8)},
       {Pending("vip", 100, 1, 8)}, {}, kShort8},
      {"cannot fit even with every victim: none", kLower, {Holder("low", 0, 0, 8), Holder("high", 200, 1, 8)},
       {Pending("vip", 100, 1, 16)},
       {},
       "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in flavor h100, 16 more "
       "needed"},
      {"gate closed: none, it waits and says why", kLower, {Holder("a", 0, 0, 8), Holder("b", 0, 1, 8)},
       {Pending("vip", 100, 1, 8, kGate)}, {}, kShort8 + "; preemption is gated (closed: gantry.dev/preemption)"},
      {"gates closed: every closed one named", kLower, {Holder("a", 0, 0, 8), Holder("b", 0, 1, 8)},
       {Pending("vip", 100, 1, 8, {"g1", "g2"})}, {}, kShort8 + "; preemption is gated (closed: g1, g2)"},
      {"gate open: it preempts", kLower, {Holder("a", 0, 0, 8), Holder("b", 0, 1, 8)}, {Pending("vip", 100, 1, 8)},
       {"vip<-b"}},
      {"gate closed where preemption would not help: not said to be gated", kLower, {Holder("high", 200, 0, 16)},
       {Pending("vip", 100, 1, 8, kGate)}, {}, kShort8},
      {"a victim is taken once: the next preemptor takes the next", kLower,
       {Holder("a", 0, 0, 8), Holder("b", 0, 1, 8)}, {Pending("v2", 100, 2, 8), Pending("v1", 100, 1, 8)},
       {"v1<-b", "v2<-a"}},
      {"freed quota goes to the preemptor, not to one of the victims' priority", kLower,
       {Holder("a", 0, 0, 8), Holder("b", 0, 1, 8)}, {Pending("low", 0, 0, 8), Pending("vip", 100, 1, 8)},
       {"vip<-b"}, kShort8},
      {"a gated preemptor does not hold up smaller ones behind it", kLower, {Holder("a", 0, 0, 12)},
       {Pending("vip", 100, 1, 8, kGate), Pending("small", 0, 2, 4)}, {"small"},
       "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more "
       "needed; preemption is gated (closed: gantry.dev/preemption)"},
      {"a resource without quota: no preemption helps", kLower, {Holder("a", 0, 0, 16)},
       {{"tpu", 100, 1, 1, {{"google.com/tpu", 1000}}}}, {},
       "couldn't assign flavors to pod set: resource google.com/tpu unavailable in ClusterQueue"},
  };
  for (const PreemptionCase& c : cases) {
    SECTION(c.what) {
      ClusterQueueSnapshot cq{Gpus(16), {}, c.holders, c.policy, "h100"};
      for (const QuotaHolder& h : c.holders) AddTo(&cq.reserved, h.usage);
      std::vector<std::string> admitted;
      std::string first_pending_message;
      bool any_pending = false;
      for (const AdmissionVerdict& v : DecideAdmissions(cq, c.pending)) {
        if (!v.admitted) {
          CHECK(v.victims.empty());
          // Said to be held back by its gate exactly when the message says so.
          CHECK((v.reason == PendingReason::kPreemptionGated) ==
                (v.message.find("preemption is gated") != std::string::npos));
          CHECK(v.reason != PendingReason::kWaitingForPreemptedWorkloads);  // its victims stop at once
          if (!any_pending) first_pending_message = v.message;
          any_pending = true;
          continue;
        }
        CHECK(v.message.empty());
        CHECK(v.reason == PendingReason::kPending);
        std::string entry = v.key;
        for (std::size_t i = 0; i < v.victims.size(); ++i) entry += (i == 0 ? "<-" : ",") + v.victims[i];
        admitted.push_back(entry);
      }
      CHECK(admitted == c.admitted);
      CHECK(first_pending_message == c.first_pending_message);
    }
  }
}

// A victim evicted for `preemptor` that has not stopped yet: it still holds its quota.
QuotaHolder StoppingFor(const std::string& preemptor, const std::string& key, int64_t reserved_seq, int64_t gpus) {
  return {key, 0, reserved_seq, Gpus(gpus), preemptor};
}

struct StopCase {
  const char* what;
  std::vector<QuotaHolder> holders;
  std::vector<AdmissionCandidate> pending;
  // Every verdict, in admission order: "key Admitted" or "key <reason>",
  // then " <-victim,victim" for those it evicts now.
  std::vector<std::string> verdicts;
  std::string first_pending_message;
};

std::string Describe(const AdmissionVerdict& v) {
  std::string out = v.key + " " + (v.admitted ? "Admitted" : PendingReasonName(v.reason));
  for (std::size_t i = 0; i < v.victims.size(); ++i) out += (i == 0 ? " <-" : ",") + v.victims[i];
  return out;
}

TEST_CASE("DecideAdmissions: victims that need time to stop (victimStopDelay)", "[sim][admission]") {
  const std::vector<std::string> kGate = {"gantry.dev/preemption"};
  const std::string kWaiting1 = kShort8 + ". Pending the preemption of 1 workload(s)";
  std::vector<StopCase> cases = {
      {"it evicts its victims now and waits for them", {Holder("old", 0, 0, 8), Holder("new", 0, 1, 8)},
       {Pending("vip", 100, 1, 8)}, {"vip WaitingForPreemptedWorkloads <-new"}, kWaiting1},
      {"its victim still stopping: it waits, evicting no other", {Holder("old", 0, 0, 8), StoppingFor("vip", "new", 1, 8)},
       {Pending("vip", 100, 1, 8)}, {"vip WaitingForPreemptedWorkloads"}, kWaiting1},
      {"held quota of stopping victims counts as used", {StoppingFor("gone", "b", 0, 8)},
       {Pending("big", 0, 1, 12), Pending("fits", 0, 2, 8)}, {"big Pending", "fits Admitted"},
       "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more "
       "needed"},
      {"a victim stopping for another preemptor is never taken again",
       {Holder("a", 0, 0, 8), StoppingFor("v1", "b", 1, 8)}, {Pending("v2", 100, 2, 8), Pending("v1", 100, 1, 8)},
       {"v1 WaitingForPreemptedWorkloads", "v2 WaitingForPreemptedWorkloads <-a"}, kWaiting1},
      {"nor by a higher priority one: its quota is spoken for", {StoppingFor("v1", "b", 1, 16)},
       {Pending("v0", 1000, 0, 8)}, {"v0 Pending"}, kShort8},
      {"a stopping victim and one more: both counted", {Holder("a", 0, 0, 8), StoppingFor("vip", "b", 1, 4),
                                                         Holder("c", 0, 2, 4)},
       {Pending("vip", 100, 1, 8)}, {"vip WaitingForPreemptedWorkloads <-c"},
       kShort8 + ". Pending the preemption of 2 workload(s)"},
      {"its gate closed since: its stopping victim is enough, it waits for it",
       {Holder("a", 0, 0, 8), StoppingFor("vip", "b", 1, 8)}, {Pending("vip", 100, 1, 8, kGate)},
       {"vip WaitingForPreemptedWorkloads"}, kWaiting1},
      {"its gate closed since and one more victim needed: gated",
       {Holder("a", 0, 0, 8), StoppingFor("vip", "b", 1, 4), Holder("c", 0, 2, 4)}, {Pending("vip", 100, 1, 8, kGate)},
       {"vip PreemptionGated"}, kShort8 + "; preemption is gated (closed: gantry.dev/preemption)"},
      {"fits without its stopping victim: admitted", {StoppingFor("vip", "b", 1, 8)}, {Pending("vip", 100, 1, 8)},
       {"vip Admitted"}, ""},
      {"a waiting preemptor keeps the room it counts on from those after it",
       {Holder("a", 0, 0, 4), Holder("b", 50, 1, 8)}, {Pending("vip", 100, 1, 8), Pending("small", 0, 2, 4)},
       {"vip WaitingForPreemptedWorkloads <-a", "small Pending"},
       "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more "
       "needed. Pending the preemption of 1 workload(s)"},
      {"room it does not count on stays free", {Holder("a", 0, 0, 12)},
       {Pending("vip", 100, 1, 8), Pending("small", 0, 2, 4)}, {"vip WaitingForPreemptedWorkloads <-a", "small Admitted"},
       "couldn't assign flavors to pod set: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more "
       "needed. Pending the preemption of 1 workload(s)"},
  };
  for (const StopCase& c : cases) {
    SECTION(c.what) {
      ClusterQueueSnapshot cq{Gpus(16), {}, c.holders, PreemptionPolicy::kLowerPriority, "h100", false};
      for (const QuotaHolder& h : c.holders) AddTo(&cq.reserved, h.usage);
      std::vector<std::string> verdicts;
      std::string first_pending_message;
      for (const AdmissionVerdict& v : DecideAdmissions(cq, c.pending)) {
        verdicts.push_back(Describe(v));
        CHECK(v.message.empty() == v.admitted);
        if (v.admitted) CHECK(v.victims.empty());  // a preemptor is never admitted with its victims
        if (!v.admitted && first_pending_message.empty()) first_pending_message = v.message;
      }
      CHECK(verdicts == c.verdicts);
      CHECK(first_pending_message == c.first_pending_message);
    }
  }
}

TEST_CASE("ComputeDemand sums count x requests and knows what never fits", "[sim][admission]") {
  NodeShape shape{"H100-80GB", 8, {}};
  auto d = ComputeDemand(testing::MakeWorkload("w", 4, 8), shape);
  REQUIRE(d.ok());
  CHECK(d->total.at(kGpuResource) == 32 * kGpu);
  CHECK(d->total.at("cpu") == 4'000);
  CHECK(d->never_fits.empty());

  auto too_wide = ComputeDemand(testing::MakeWorkload("w", 1, 16), shape);
  REQUIRE(too_wide.ok());
  CHECK_FALSE(too_wide->never_fits.empty());

  auto wl = testing::MakeWorkload("w", 1, 8);
  wl["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"] = {{kGpuProductLabel, "A100-80GB"}};
  auto wrong_model = ComputeDemand(wl, shape);
  REQUIRE(wrong_model.ok());
  CHECK(wrong_model->never_fits.find("A100-80GB") != std::string::npos);

  auto no_gpus = ComputeDemand(testing::MakeWorkload("w", 1, 1), NodeShape{"", 0, {}});
  REQUIRE(no_gpus.ok());
  CHECK_FALSE(no_gpus->never_fits.empty());
}

TEST_CASE("ComputeDemand leaves out what the cluster's Kueue excludes by prefix", "[sim][admission]") {
  auto wl = testing::MakeWorkload("w", 2, 1);
  auto& requests = wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"];
  requests["ephemeral-storage"] = "10Gi";
  requests["example.com/foo"] = "1";
  auto counted = ComputeDemand(wl, NodeShape{"H100-80GB", 8, {}});
  REQUIRE(counted.ok());
  CHECK(counted->total.count("ephemeral-storage") == 1);
  CHECK(counted->total.count("example.com/foo") == 1);
  auto excluded = ComputeDemand(wl, NodeShape{"H100-80GB", 8, {"ephemeral-", "example.com/"}});
  REQUIRE(excluded.ok());
  CHECK(excluded->total.count("ephemeral-storage") == 0);
  CHECK(excluded->total.count("example.com/foo") == 0);
  CHECK(excluded->total.at(kGpuResource) == 2 * kGpu);
  CHECK(excluded->pod_sets[0].per_pod.count("ephemeral-storage") == 0);
}

}  // namespace
}  // namespace gantry::sim
