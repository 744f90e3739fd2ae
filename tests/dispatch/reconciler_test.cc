// Reconciler: the order in which woken jobs are served.
#include <catch2/catch.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "gantry/dispatch/reconciler.h"
#include "gantry/store/sqlite_store.h"
#include "test_support.h"

namespace gantry {

TEST_CASE("urgent wakes first, then plain ones, then new jobs by priority and submission order", "[dispatch]") {
  testing::TempDir dir;
  SqliteStoreOptions options;
  options.path = dir.File("gantry.db");
  auto store = OpenSqliteStore(options);
  REQUIRE(store.ok());
  SystemClock clock;
  std::mutex mu;
  std::vector<std::string> served;
  Reconciler reconciler(**store, clock, [&](const std::string& uid) {
    std::lock_guard lock(mu);
    served.push_back(uid);
    return int64_t{-1};
  });
  // Queued before the worker starts, so the order is the queues' alone.
  reconciler.WakeNew("low-seq1", 0, 1);
  reconciler.WakeNew("high-seq3", 10, 3);
  reconciler.WakeNew("high-seq2", 10, 2);
  reconciler.WakeNew("mid-seq4", 5, 4);
  reconciler.WakeNew("negative-seq5", -3, 5);
  reconciler.Wake("plain");
  reconciler.WakeUrgent("urgent");
  reconciler.WakeNew("plain", 100, 6);         // already queued: served once, as a plain wake
  reconciler.WakeUrgent("mid-seq4");           // moves ahead; its new-job entry is skipped
  REQUIRE(reconciler.Start().ok());
  REQUIRE(testing::WaitFor([&] {
    std::lock_guard lock(mu);
    return served.size() >= 7;
  }));
  reconciler.Stop();
  CHECK(served == std::vector<std::string>{"urgent", "mid-seq4", "plain", "high-seq2", "high-seq3", "low-seq1",
                                           "negative-seq5"});
}

}  // namespace gantry
