#include <catch2/catch.hpp>

#include <future>

#include "gantry/store/sqlite_store.h"
#include "test_support.h"

namespace gantry {
namespace {

bool Save(SqliteStore& store, const std::string& cluster, std::optional<int64_t> first_lost,
          const std::string& error = "") {
  std::promise<bool> done;
  store.SaveOutage(cluster, first_lost, error, [&](Result<bool> r) { done.set_value(r.ok()); });
  return done.get_future().get();
}

bool SaveRefusal(SqliteStore& store, const std::string& cluster, std::optional<int64_t> since) {
  std::promise<bool> done;
  store.SaveWatchRefusal(cluster, since, [&](Result<bool> r) { done.set_value(r.ok()); });
  return done.get_future().get();
}

}  // namespace

TEST_CASE("cluster outages survive a reopen, the first loss is kept", "[store]") {
  testing::TempDir dir;
  SqliteStoreOptions options;
  options.path = dir.File("gantry.db");
  {
    auto store = OpenSqliteStore(options);
    REQUIRE(store.ok());
    CHECK((*store)->LoadOutages()->empty());
    REQUIRE(Save(**store, "c1", 1000, "connection refused"));
    REQUIRE(Save(**store, "c1", 5000, "timeout"));  // same outage: 1000 stays
    REQUIRE(Save(**store, "c2", 2000));
    REQUIRE(Save(**store, "c2", std::nullopt));  // recovered
  }
  auto store = OpenSqliteStore(options);
  REQUIRE(store.ok());
  auto outages = (*store)->LoadOutages();
  REQUIRE(outages.ok());
  CHECK(*outages == std::map<std::string, int64_t>{{"c1", 1000}});
  CHECK(LatestSchemaVersion() >= 2);
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
