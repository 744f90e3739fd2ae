#include <catch2/catch.hpp>

#include "gantry/dispatch/unseen_asks.h"

namespace gantry::dispatch {

TEST_CASE("UnseenAsks: each ask of a row doubles its wait, up to the max, and rows are apart", "[dispatch]") {
  UnseenAsks asks(10'000, 40'000);
  CHECK(asks.Due("a", 0));  // never asked
  asks.Asked("a", 0);
  CHECK_FALSE(asks.Due("a", 9'999));
  CHECK(asks.Due("a", 10'000));
  CHECK(asks.Due("b", 5'000));  // another row
  asks.Asked("a", 10'000);      // waits 20 s now
  CHECK_FALSE(asks.Due("a", 29'999));
  CHECK(asks.Due("a", 30'000));
  asks.Asked("a", 30'000);  // 40 s
  asks.Asked("a", 70'000);  // still 40 s: the max
  CHECK_FALSE(asks.Due("a", 109'999));
  CHECK(asks.Due("a", 110'000));
  // A clock stepped back past the last ask: due, not stuck for the gap.
  CHECK(asks.Due("a", 60'000));
  // Not asked for twice the max: forgotten at the next prune (one a minute).
  asks.Asked("b", 100'000);
  CHECK(asks.size() == 2);
  asks.Asked("c", 300'000);
  CHECK(asks.size() == 1);
  CHECK(asks.Due("a", 300'000));
}

TEST_CASE("UnseenAsks: a row's last lookup says whether its object was found gone, and when", "[dispatch]") {
  UnseenAsks asks(10'000, 40'000);
  const std::string key = UnseenAsks::Key("uid-1", "c1", "Job", 2);
  CHECK(key != UnseenAsks::Key("uid-1", "c1", "Job", 3));
  CHECK(key != UnseenAsks::Key("uid-1", "c1", "Workload", 2));
  CHECK(asks.GoneAt(key) == 0);  // never asked
  asks.Found(key, 5'000);
  asks.Asked(key, 5'000);
  CHECK(asks.GoneAt(key) == 5'000);
  CHECK_FALSE(asks.Due(key, 14'999));  // asking does not change because of it
  CHECK(asks.GoneAt(UnseenAsks::Key("uid-1", "c1", "Workload", 2)) == 0);
  // Found there again (created anew): not gone any more.
  asks.Found(key, 0);
  asks.Asked(key, 15'000);
  CHECK(asks.GoneAt(key) == 0);
  // Nothing learned on a row never asked: no entry made.
  asks.Found(UnseenAsks::Key("uid-2", "c1", "Job", 1), 0);
  CHECK(asks.size() == 1);
}

TEST_CASE("UnseenAsks: a row's first lookup is kept through the prune that its own ask runs", "[dispatch]") {
  // Wall-clock times: the first ask of a daemon's life prunes (as one does
  // at most once a minute), and the entry Found made has no ask time yet.
  const int64_t now = 1'780'000'000'000;
  UnseenAsks asks(10'000, 300'000);
  const std::string key = UnseenAsks::Key("uid-1", "c1", "Job", 1);
  asks.Found(key, now);
  asks.Asked(key, now);
  CHECK(asks.GoneAt(key) == now);
  // Another worker's ask, pruning meanwhile, keeps it too.
  const std::string other = UnseenAsks::Key("uid-2", "c1", "Job", 1);
  asks.Found(other, now + 61'000);
  asks.Asked(UnseenAsks::Key("uid-3", "c1", "Job", 1), now + 61'000);
  asks.Asked(other, now + 61'000);
  CHECK(asks.GoneAt(other) == now + 61'000);
  CHECK(asks.GoneAt(key) == now);
}

}  // namespace gantry::dispatch
