// A list in pages (limit, continue): every page says the first page's
// resourceVersion, as an API server's do, so that a client watching from it
// is sent what changed after the first page (objects it has read already
// included); and the token carries that version.
#include <catch2/catch.hpp>

#include "cluster_state.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;
using testing::MakeWorkload;

TEST_CASE("a list's pages all say the first page's resourceVersion, whatever changed between them",
          "[sim][list]") {
  testing::ClusterFixture f;
  for (const char* name : {"a", "b", "c"}) REQUIRE(f.state.Create(f.wl, "team-a", MakeWorkload(name, 1, 1)).ok());
  const std::string kApi = "kueue.x-k8s.io/v1beta2";
  auto first = f.state.List(f.wl, kApi, "team-a", {}, 2, "");
  REQUIRE(first.ok());
  const std::string rv = (*first)["metadata"]["resourceVersion"];
  REQUIRE((*first)["items"].size() == 2);
  const std::string token = (*first)["metadata"].value("continue", "");
  REQUIRE(token.starts_with(rv + "|"));

  // Read on the first page, then changed: the change is newer than the list.
  f.state.Tick();  // admits them: status writes
  auto second = f.state.List(f.wl, kApi, "team-a", {}, 2, token);
  REQUIRE(second.ok());
  CHECK((*second)["metadata"]["resourceVersion"] == rv);
  CHECK((*second)["items"].size() == 1);
  CHECK_FALSE((*second)["metadata"].contains("continue"));
  auto now = f.state.List(f.wl, kApi, "team-a", {}, 0, "");
  REQUIRE(now.ok());
  CHECK(std::stoll((*now)["metadata"]["resourceVersion"].get<std::string>()) > std::stoll(rv));

  // A token not made here is refused, as the API server does.
  for (const char* bad : {"team-a/a", "x|team-a/a", "|team-a/a"}) {
    INFO(bad);
    CHECK(f.state.List(f.wl, kApi, "team-a", {}, 2, bad).status().code() == Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace gantry::sim
