// The lease losers' withdrawal in batches (withdrawals.h): what one batch
// asks a cluster to delete. Against gantry-sim, the e2e tests run it.
#include <catch2/catch.hpp>

#include "withdrawals.h"

namespace gantry::dispatch {

TEST_CASE("a withdrawal batch selects by origin, epoch and job uids, in its namespace's collection",
          "[dispatch][withdrawals]") {
  CHECK(Withdrawals::Selector("gantry", 3, {"uid-a", "uid-b"}) ==
        "kueue.x-k8s.io/multikueue-origin=gantry,gantry.dev/epoch=3,gantry.dev/job-uid in (uid-a,uid-b)");
  CHECK(Withdrawals::CollectionOf("/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/train-0123abcd") ==
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads");
}

}  // namespace gantry::dispatch
