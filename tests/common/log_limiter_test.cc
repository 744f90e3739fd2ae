#include <catch2/catch.hpp>

#include "gantry/common/log_limiter.h"

namespace gantry {

TEST_CASE("a repeating log line is let through once an interval, with how many were held back", "[log]") {
  LogLimiter limiter(10'000);
  int64_t held = -1;
  REQUIRE(limiter.Allow(1'000, &held));  // the first at once
  CHECK(held == 0);
  CHECK(limiter.HeldText(held).empty());
  for (int i = 0; i < 45; ++i) CHECK_FALSE(limiter.Allow(1'000 + i * 200, &held));
  CHECK_FALSE(limiter.Allow(10'999, &held));
  REQUIRE(limiter.Allow(11'000, &held));  // the interval is up
  CHECK(held == 46);
  CHECK(limiter.HeldText(held) == " (46 more like it held back since the last such line: at most one every 10 s)");
  REQUIRE(limiter.Allow(60'000, &held));  // quiet since: nothing held
  CHECK(held == 0);

  // A success while failures still come (a disk with room for small
  // writes only): nothing changes, the lines stay limited.
  CHECK_FALSE(limiter.Allow(61'000, &held));
  CHECK(limiter.Reset(61'001) == 0);
  CHECK_FALSE(limiter.Allow(61'002, &held));
  CHECK(limiter.Reset(61'003) == 0);
  CHECK_FALSE(limiter.Allow(69'999, &held));
  // Over (a success with no failure for an interval before it): what was
  // held back is handed over, and the next line goes at once.
  CHECK(limiter.Reset(79'999) == 3);
  CHECK(limiter.Reset(80'000) == 0);
  REQUIRE(limiter.Allow(80'001, &held));
  CHECK(held == 0);
  // A clock stepped back does not hold lines back for good.
  REQUIRE(limiter.Allow(1'000, &held));
}

}  // namespace gantry
