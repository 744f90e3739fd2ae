#include "gantry/placement/explain.h"

#include <catch2/catch.hpp>
#include <string>

#include "fixtures.h"
#include "gantry/placement/place.h"

namespace gantry::placement {
namespace {

using namespace gantry::placement::testing;  // NOLINT: test-local builders

TEST_CASE("ExplainText names candidates, scores and reasons", "[placement][explain]") {
  JobDemand job = Workers(1, 1, 4, 16);
  job.constraints.regions = {"eu-central-1"};
  const std::string text = ExplainText(Place(job, TableFleet()));
  CHECK(text.find("3 candidates of 3 feasible clusters (9 excluded): eu-a100, eu-h100, eu-stale") !=
        std::string::npos);
  CHECK(text.find("*  1. eu-a100  score ") != std::string::npos);
  CHECK(text.find("fits_now 100.00") != std::string::npos);
  CHECK(text.find("  ap-a100: Region: region ap-northeast-1 not in [eu-central-1]\n") !=
        std::string::npos);
  CHECK(text.find("  eu-cordoned: Cordoned: cordoned by an operator (transient)\n") !=
        std::string::npos);
}

TEST_CASE("ExplainText says when a job is unschedulable", "[placement][explain]") {
  JobDemand job = Workers(1, 1, 4, 16);
  job.constraints.cluster_match_labels = {{"team", "ml"}};
  const std::string text = ExplainText(Place(job, TableFleet()));
  CHECK(text.rfind("unschedulable: none of 12 clusters can ever run this job\n", 0) == 0);
  CHECK(text.find("us-cpu: ClusterLabels: label team=ml required; cluster has no label team") !=
        std::string::npos);
}

TEST_CASE("DecisionToJson has one entry per cluster", "[placement][explain]") {
  const Decision d = Place(Workers(8, 8, 64, 512), TableFleet());
  const nlohmann::json j = DecisionToJson(d);
  CHECK(j["candidates"] == nlohmann::json(d.candidates));
  CHECK(j["unschedulable"] == false);
  CHECK(j["feasibleCount"] == 6);
  REQUIRE(j["clusters"].size() == 12);
  const auto& first = j["clusters"][0];
  CHECK(first["name"] == "us-west-h100");
  CHECK(first["feasible"] == true);
  CHECK(first["rank"] == 1);
  CHECK(first["selected"] == true);
  CHECK(first["scoreTerms"]["fits_now"]["points"] == 100.0);
  CHECK(first["scoreTerms"].size() == kTermCount);
  bool found = false;
  for (const auto& c : j["clusters"]) {
    if (c["name"] != "eu-l4") continue;
    found = true;
    CHECK(c["feasible"] == false);
    CHECK(c["filter"] == "NodeFit");
    CHECK(c["message"] == "pod set 'workers' needs 8 nvidia.com/gpu per pod; nodes have 4");
    CHECK(c["permanent"] == true);
  }
  CHECK(found);
}

}  // namespace
}  // namespace gantry::placement
