// ConcurrencyLimit: the requests in flight to one cluster follow its round
// trips: many for a distant cluster whose round trips stay near its own,
// few for one whose round trips lengthen as requests queue in it.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <vector>

#include "gantry/kube/client_pool.h"
#include "gantry/kube/concurrency_limit.h"
#include "unreachable.h"

namespace gantry::testing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

kube::ConcurrencyLimitOptions Options() {
  kube::ConcurrencyLimitOptions o;
  o.min = 8;
  o.max = 64;
  o.initial = 8;
  o.window_ms = 10'000;
  return o;
}

// n answers of round trip rtt, each sent with the limit's worth in flight
// (the pool is full: the limit binds), 1 ms apart from now_ms on.
int64_t Answer(kube::ConcurrencyLimit& l, int n, microseconds rtt, int64_t now_ms) {
  for (int i = 0; i < n; ++i) l.OnAnswer(rtt, l.limit(), now_ms++);
  return now_ms;
}

}  // namespace

TEST_CASE("a cluster whose round trips stay near its own gets up to the most connections", "[kube][limit]") {
  kube::ConcurrencyLimit l(Options());
  CHECK(l.limit() == 8);
  // 20 ms away, give or take the cluster's own work: within twice the base.
  int64_t now = 0;
  for (int i = 0; i < 50; ++i) {
    now = Answer(l, 1, microseconds(20'000), now);
    now = Answer(l, 1, microseconds(34'000), now);
  }
  CHECK(l.limit() == 64);
  CHECK(l.base() == microseconds(20'000));
}

TEST_CASE("a cluster whose round trips lengthen with queueing is held to the fewest", "[kube][limit]") {
  kube::ConcurrencyLimit l(Options());
  int64_t now = Answer(l, 100, microseconds(20'000), 0);
  REQUIRE(l.limit() == 64);
  // Requests queue in it: round trips five times its own.
  now = Answer(l, 100, microseconds(100'000), now);
  CHECK(l.limit() == 8);
  SECTION("and it grows again once they are short again") {
    Answer(l, 100, microseconds(21'000), now);
    CHECK(l.limit() == 64);
  }
}

TEST_CASE("a nearby cluster, answering in well under a millisecond, stays at the fewest under load",
          "[kube][limit]") {
  kube::ConcurrencyLimit l(Options());
  int64_t now = Answer(l, 100, microseconds(60), 0);  // idle: 60 us
  REQUIRE(l.limit() == 64);
  // Loaded: its API server has others' requests in hand; a round trip takes 0.5 to 3 ms.
  for (int i = 0; i < 100; ++i) now = Answer(l, 1, microseconds(500 + 25 * i), now);
  CHECK(l.limit() == 8);
}

TEST_CASE("a limit tells whether its cluster answered lately, and whether its answers come late", "[kube][limit]") {
  kube::ConcurrencyLimit l(Options());
  CHECK_FALSE(l.answered_since(0));
  CHECK_FALSE(l.congested());
  int64_t now = Answer(l, 20, microseconds(20'000), 1'000);
  CHECK(l.answered_since(now));
  CHECK_FALSE(l.answered_since(now + 10'000));  // a window later, nothing since
  CHECK_FALSE(l.congested());
  now = Answer(l, 30, microseconds(50'000), now);  // beyond twice its base
  CHECK(l.congested());
  // Quiet for two windows, then quick again: the late answers before are forgotten.
  Answer(l, 1, microseconds(20'000), now + 20'000);
  CHECK_FALSE(l.congested());
}

TEST_CASE("a limit that is not used does not grow", "[kube][limit]") {
  kube::ConcurrencyLimit l(Options());
  // Round trips at the base, but never more than 2 of 8 in flight.
  for (int64_t now = 0; now < 200; ++now) l.OnAnswer(microseconds(20'000), 2, now);
  CHECK(l.limit() == 8);
}

TEST_CASE("an overloaded cluster's limit shrinks by a tenth, never below the fewest", "[kube][limit]") {
  kube::ConcurrencyLimit l(Options());
  Answer(l, 100, microseconds(20'000), 0);
  REQUIRE(l.limit() == 64);
  l.OnOverload();
  CHECK(l.limit() == 57);  // 64 * 0.9
  for (int i = 0; i < 50; ++i) l.OnOverload();
  CHECK(l.limit() == 8);
}

TEST_CASE("the base follows a cluster that moved farther away", "[kube][limit]") {
  kube::ConcurrencyLimit l(Options());
  Answer(l, 10, microseconds(5'000), 0);
  CHECK(l.base() == microseconds(5'000));
  // Two windows later, only 40 ms round trips: that is its base now, and at
  // it the limit grows again.
  Answer(l, 10, microseconds(40'000), 10'000);
  CHECK(l.base() == microseconds(5'000));  // still within the last two windows
  Answer(l, 100, microseconds(40'000), 20'000);
  CHECK(l.base() == microseconds(40'000));
  CHECK(l.limit() == 64);
  SECTION("after a quiet spell, the base is what comes next") {
    Answer(l, 1, microseconds(90'000), 60'000);
    CHECK(l.base() == microseconds(90'000));
  }
}

TEST_CASE("a pool with a least size starts there and adapts up to its size, and without one it is fixed",
          "[kube][limit]") {
  inventory::ClusterCredentials creds = UnreachableCluster();
  kube::ClientPoolOptions options;
  options.size = 16;
  options.acquire_timeout = milliseconds(20);
  CHECK(kube::ClientPool::Create(creds, options)->limit() == 16);
  options.min_size = 4;
  std::shared_ptr<kube::ClientPool> pool = kube::ClientPool::Create(creds, options);
  CHECK(pool->limit() == 4);
  std::vector<kube::ClientPool::Lease> held;
  for (int i = 0; i < 4; ++i) {
    auto lease = pool->Acquire();
    REQUIRE(lease.ok());
    held.push_back(std::move(*lease));
  }
  // A fifth waits for the limit, not for the size, and is refused after the timeout.
  auto fifth = pool->Acquire();
  REQUIRE_FALSE(fifth.ok());
  CHECK(fifth.status().code() == Code::kUnavailable);
  held.clear();  // no request was made: nothing to learn from, the limit stays
  CHECK(pool->limit() == 4);
  CHECK(pool->in_use() == 0);
}

}  // namespace gantry::testing
