// WatchHub encodes an event once per (type, apiVersion) and shares the line
// among watchers: each must still get its own apiVersion and type.
#include <catch2/catch.hpp>

#include "cluster_state.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

TEST_CASE("watchers of one event get their own apiVersion and type", "[sim][watch]") {
  testing::ClusterFixture f;
  ClusterState& state = f.state;
  const ResourceInfo& wl = f.wl;
  struct Watch {
    const char* api_version;
    const char* selector;
    std::shared_ptr<http::ResponseStream> stream;
  };
  std::vector<Watch> watches = {{"kueue.x-k8s.io/v1beta1", "", nullptr},
                                {"kueue.x-k8s.io/v1beta2", "", nullptr},
                                {"kueue.x-k8s.io/v1beta1", "", nullptr},
                                {"kueue.x-k8s.io/v1beta2", "env=prod", nullptr}};
  for (Watch& w : watches) {
    WatchRequest req;
    req.resource = &wl;
    req.api_version = w.api_version;
    req.selector = *LabelSelector::Parse(w.selector);
    req.stream = w.stream = std::make_shared<http::ResponseStream>();
    state.Watch(req);
  }
  auto a = testing::MakeWorkload("a", 1, 1);
  a["metadata"]["labels"]["env"] = "prod";
  REQUIRE(state.Create(wl, "team-a", a).ok());
  REQUIRE(state.Patch(wl, "team-a", "a", "merge", {{"metadata", {{"labels", {{"env", "dev"}}}}}}, false).ok());
  for (const Watch& w : watches) {
    INFO(w.api_version << " " << w.selector);
    auto ev = testing::StreamEvents(w.stream);
    REQUIRE(ev.size() == 2);
    CHECK(ev[0]["type"] == "ADDED");
    // Leaving the selector reads as a delete to the selecting watcher only.
    CHECK(ev[1]["type"] == (std::string(w.selector).empty() ? "MODIFIED" : "DELETED"));
    for (const json& e : ev) {
      CHECK(e["object"]["apiVersion"] == w.api_version);
      CHECK(e["object"]["metadata"]["name"] == "a");
    }
  }
}

}  // namespace
}  // namespace gantry::sim
