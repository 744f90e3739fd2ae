#include <catch2/catch.hpp>

#include "label_selector.h"

namespace gantry::sim {
namespace {

TEST_CASE("LabelSelector parses and matches", "[sim][selector]") {
  const std::map<std::string, std::string> labels = {
      {"kueue.x-k8s.io/multikueue-origin", "gantry"}, {"env", "prod"}, {"tier", "gpu"}};
  struct Case {
    const char* selector;
    bool matches;
  };
  const Case cases[] = {
      {"", true},
      {"env=prod", true},
      {"env==prod", true},
      {"env=dev", false},
      {"env!=dev", true},
      {"env!=prod", false},
      {"missing!=x", true},
      {"env in (prod, staging)", true},
      {"env in (dev)", false},
      {"env notin (dev,qa)", true},
      {"env notin (prod)", false},
      {"tier", true},
      {"missing", false},
      {"!missing", true},
      {"!tier", false},
      {"kueue.x-k8s.io/multikueue-origin=gantry,env=prod", true},
      {"kueue.x-k8s.io/multikueue-origin=gantry,env=dev", false},
      {" env = prod , tier ", true},
  };
  for (const Case& c : cases) {
    INFO(c.selector);
    auto s = LabelSelector::Parse(c.selector);
    REQUIRE(s.ok());
    CHECK(s->Matches(labels) == c.matches);
    CHECK(s->MatchesLabels(nlohmann::json(labels)) == c.matches);
  }
}

TEST_CASE("LabelSelector on a labels object ignores values that are not strings", "[sim][selector]") {
  const nlohmann::json labels = {{"env", "prod"}, {"count", 3}};
  CHECK(LabelSelector::Parse("env=prod")->MatchesLabels(labels));
  CHECK_FALSE(LabelSelector::Parse("count")->MatchesLabels(labels));
  CHECK(LabelSelector::Parse("!count")->MatchesLabels(labels));
  CHECK(LabelSelector::Parse("!env")->MatchesLabels(nullptr));
  CHECK_FALSE(LabelSelector::Parse("env")->MatchesObject({{"metadata", {{"name", "x"}}}}));
}

TEST_CASE("LabelSelector rejects malformed selectors", "[sim][selector]") {
  for (const char* bad : {"env in (prod", "env in prod", "=x", "env=prod,", "bad key!=x", "env=not valid"}) {
    INFO(bad);
    CHECK_FALSE(LabelSelector::Parse(bad).ok());
  }
}

}  // namespace
}  // namespace gantry::sim
