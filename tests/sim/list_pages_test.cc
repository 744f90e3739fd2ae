// A list in pages (limit, continue) is served from one snapshot, as an API
// server serves it: every page says the first page's resourceVersion and
// shows the objects as they were then, so that a client watching from that
// version is sent every later change, in order.
#include <catch2/catch.hpp>

#include "cluster_state.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;
using testing::MakeWorkload;

TEST_CASE("a list's pages come from one snapshot: the first page's resourceVersion, its objects as they were then",
          "[sim][list]") {
  testing::ClusterFixture f;
  for (const char* name : {"a", "b", "c"}) REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload(name, 1, 1)).ok());
  const std::string kApi = "kueue.x-k8s.io/v1beta2";
  auto first = f.state.List(f.wl, kApi, "team-a", {}, 2, "");
  REQUIRE(first.ok());
  const std::string rv = (*first)["metadata"]["resourceVersion"];
  REQUIRE((*first)["items"].size() == 2);
  CHECK((*first)["metadata"]["remainingItemCount"] == 1);
  const std::string token = (*first)["metadata"].value("continue", "");
  REQUIRE_FALSE(token.empty());

  f.state.Tick();  // admits all three: status writes after the first page
  REQUIRE(HasCondition(f.Get(f.wl, "c"), "QuotaReserved"));
  auto second = f.state.List(f.wl, kApi, "team-a", {}, 2, token);
  REQUIRE(second.ok());
  CHECK((*second)["metadata"]["resourceVersion"] == rv);
  REQUIRE((*second)["items"].size() == 1);
  CHECK((*second)["items"][0]["metadata"]["name"] == "c");
  CHECK((*second)["items"][0]["apiVersion"] == kApi);
  CHECK_FALSE(HasCondition((*second)["items"][0], "QuotaReserved"));  // as it was at rv
  CHECK_FALSE((*second)["metadata"].contains("continue"));
  auto now = f.state.List(f.wl, kApi, "team-a", {}, 0, "");
  REQUIRE(now.ok());
  CHECK(std::stoll((*now)["metadata"]["resourceVersion"].get<std::string>()) > std::stoll(rv));
  CHECK_FALSE((*now)["metadata"].contains("continue"));

  // A snapshot read to its end, or never made: expired (the API server's
  // 410), and the client lists anew.
  CHECK(f.state.List(f.wl, kApi, "team-a", {}, 2, token).status().code() == Code::kNotFound);
  CHECK(f.state.List(f.wl, kApi, "team-a", {}, 2, "999|0").status().code() == Code::kNotFound);
  // A token not made here: refused.
  for (const char* bad : {"team-a/a", "x|1", "|1", "1|", "1|2|3", "99999999999999999999|0", "1|99999999999999999999"}) {
    INFO(bad);
    CHECK(f.state.List(f.wl, kApi, "team-a", {}, 2, bad).status().code() == Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace gantry::sim
