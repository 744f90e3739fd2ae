#include <catch2/catch.hpp>

#include <future>

#include "gantry/store/sqlite_store.h"
#include "test_support.h"

namespace gantry {
namespace {

bool Save(SqliteStore& store, const std::string& cluster, std::optional<ClusterOutage> outage,
          const std::string& error = "") {
  std::promise<bool> done;
  store.SaveOutage(cluster, outage, error, [&](Result<bool> r) { done.set_value(r.ok()); });
  return done.get_future().get();
}

bool SaveRefusal(SqliteStore& store, const std::string& cluster, std::optional<int64_t> since) {
  std::promise<bool> done;
  store.SaveWatchRefusal(cluster, since, [&](Result<bool> r) { done.set_value(r.ok()); });
  return done.get_future().get();
}

}  // namespace

TEST_CASE("cluster outages survive a reopen with their kind, and the last one saved stands", "[store]") {
  testing::TempDir dir;
  SqliteStoreOptions options;
  options.path = dir.File("gantry.db");
  {
    auto store = OpenSqliteStore(options);
    REQUIRE(store.ok());
    CHECK((*store)->LoadOutages()->empty());
    REQUIRE(Save(**store, "c1", ClusterOutage{1000, true}, "/readyz answered 401"));
    // Refusals ended by a timeout: the clock starts afresh (ClusterHealth),
    // and the store must keep the new start, not the refusals'.
    REQUIRE(Save(**store, "c1", ClusterOutage{5000, false}, "timeout"));
    REQUIRE(Save(**store, "c2", ClusterOutage{2000, false}));
    REQUIRE(Save(**store, "c2", std::nullopt));  // recovered
    REQUIRE(Save(**store, "c3", ClusterOutage{3000, true}));
  }
  auto store = OpenSqliteStore(options);
  REQUIRE(store.ok());
  auto outages = (*store)->LoadOutages();
  REQUIRE(outages.ok());
  CHECK(*outages == std::map<std::string, ClusterOutage>{{"c1", {5000, false}}, {"c3", {3000, true}}});
  CHECK(LatestSchemaVersion() >= 10);
}

TEST_CASE("watch refusals survive a reopen, the last time written stands", "[store]") {
  testing::TempDir dir;
  SqliteStoreOptions options;
  options.path = dir.File("gantry.db");
  {
    auto store = OpenSqliteStore(options);
    REQUIRE(store.ok());
    CHECK((*store)->LoadWatchRefusals()->empty());
    REQUIRE(SaveRefusal(**store, "c1", 500));
    REQUIRE(SaveRefusal(**store, "c1", 1000));  // a row the engine knew stale
    REQUIRE(SaveRefusal(**store, "c2", 2000));
    REQUIRE(SaveRefusal(**store, "c2", std::nullopt));  // allowed again
  }
  auto store = OpenSqliteStore(options);
  REQUIRE(store.ok());
  auto refusals = (*store)->LoadWatchRefusals();
  REQUIRE(refusals.ok());
  CHECK(*refusals == std::map<std::string, int64_t>{{"c1", 1000}});
  CHECK((*store)->LoadOutages()->empty());  // a table of its own
}

}  // namespace gantry
