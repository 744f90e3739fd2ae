// ClientPools: one pool per cluster, kept across an inventory reload while
// the cluster's connection is unchanged, so that its open connections and
// its learned limit survive the reload; dropped when the connection changed
// or the cluster left.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gantry/inventory/token_source.h"
#include "gantry/kube/client_pools.h"
#include "unreachable.h"

namespace gantry::testing {
TEST_CASE("ClientPools keeps a cluster's pool across a reload while its connection is unchanged",
          "[kube][pools]") {
  std::map<std::string, inventory::ClusterCredentials> inventory = {
      {"a", UnreachableCluster(1)}, {"b", UnreachableCluster(2)}, {"c", UnreachableCluster(3)}};
  kube::ClientPoolOptions options;
  options.size = 16;
  options.min_size = 4;
  options.acquire_timeout = std::chrono::milliseconds(20);
  kube::ClientPools pools(options, [&](const std::string& cluster) -> std::optional<inventory::ClusterCredentials> {
    auto it = inventory.find(cluster);
    if (it == inventory.end()) return std::nullopt;
    return it->second;
  });

  CHECK(pools.Limit("a") == 0);  // no pool before its first request
  std::shared_ptr<kube::ClientPool> a = pools.For("a");
  REQUIRE(a);
  CHECK(pools.For("a") == a);
  CHECK(pools.Limit("a") == 4);
  CHECK_FALSE(pools.For("not-in-the-inventory"));
  std::shared_ptr<kube::ClientPool> b = pools.For("b");
  std::shared_ptr<kube::ClientPool> c = pools.For("c");
  REQUIRE(b);
  REQUIRE(c);
  std::optional<kube::ClientPool::Lease> held;  // a pass still at work on b through the reload
  {
    auto lease = b->Acquire();
    REQUIRE(lease.ok());
    held.emplace(std::move(lease.value()));
  }

  SECTION("nothing changed: every pool is kept") {
    inventory["a"].token_source = nullptr;  // re-read, the same: still no token
    CHECK(pools.Retain() == 0);
    CHECK(pools.For("a") == a);
    CHECK(pools.For("b") == b);
    CHECK(pools.For("c") == c);
  }

  SECTION("a changed server and a cluster gone: those two dropped, the rest kept") {
    inventory["b"] = UnreachableCluster(4);
    inventory.erase("c");
    inventory["d"] = UnreachableCluster(5);
    CHECK(pools.Retain() == 2);
    CHECK(pools.For("a") == a);
    std::shared_ptr<kube::ClientPool> b2 = pools.For("b");
    REQUIRE(b2);
    CHECK(b2 != b);
    CHECK(b2->credentials().port == 4);
    CHECK(pools.Limit("c") == 0);
    CHECK_FALSE(pools.For("c"));
    CHECK(pools.For("d"));
    // The old pool lives on while the lease holds it, and takes it back.
    CHECK(b->in_use() == 1);
    held.reset();
    CHECK(b->in_use() == 0);
    CHECK(b2->in_use() == 0);
  }

  SECTION("a changed identity drops the pool; the same token from a source read again keeps it") {
    inventory["a"].token_source = inventory::TokenSource::Static("token-1");
    inventory["b"].token_source = inventory::TokenSource::Static("token-1");
    CHECK(pools.Retain() == 2);  // no token before, one now
    std::shared_ptr<kube::ClientPool> a2 = pools.For("a");
    std::shared_ptr<kube::ClientPool> b2 = pools.For("b");
    inventory["a"].token_source = inventory::TokenSource::Static("token-2");  // another identity
    inventory["b"].token_source = inventory::TokenSource::Static("token-1");  // read again, the same
    CHECK(pools.Retain() == 1);
    CHECK(pools.For("a") != a2);
    CHECK(pools.For("b") == b2);
    inventory["b"].client_cert_pem = "a client certificate";
    CHECK(pools.Retain() == 1);
    CHECK(pools.For("b") != b2);
  }

  SECTION("a changed trust drops the pool as a changed server does") {
    inventory["a"].ca_pem = "a CA of its own";  // was the system store
    CHECK(pools.Retain() == 1);
    CHECK(pools.For("a") != a);
    CHECK(pools.For("b") == b);
  }
}

}  // namespace gantry::testing
