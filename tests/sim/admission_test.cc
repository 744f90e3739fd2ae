// The pure admission decision: order and all-or-nothing fit, as a table.
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

TEST_CASE("ComputeDemand sums count x requests and knows what never fits", "[sim][admission]") {
  NodeShape shape{"H100-80GB", 8};
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

  auto no_gpus = ComputeDemand(testing::MakeWorkload("w", 1, 1), NodeShape{"", 0});
  REQUIRE(no_gpus.ok());
  CHECK_FALSE(no_gpus->never_fits.empty());
}

}  // namespace
}  // namespace gantry::sim
