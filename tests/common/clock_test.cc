#include <catch2/catch.hpp>

#include "gantry/common/clock.h"
#include "gantry/common/job_phase.h"

namespace gantry {

TEST_CASE("RFC 3339 and ages", "[clock]") {
  CHECK(FormatRfc3339(0) == "1970-01-01T00:00:00Z");
  CHECK(FormatRfc3339(1'795'948'754'000) == "2026-11-29T10:39:14Z");
  CHECK(FormatAge(42'000) == "42s");
  CHECK(FormatAge(192'000) == "3m12s");
  CHECK(FormatAge(3'600'000) == "1h");
  CHECK(FormatAge(5 * 3'600'000 + 3 * 60'000) == "5h3m");
  CHECK(FormatAge(13LL * 86'400'000) == "13d");
  CHECK(FormatAge(-5) == "0s");
}

TEST_CASE("fake clock advances only when told", "[clock]") {
  FakeClock clock(1000);
  CHECK(clock.NowMillis() == 1000);
  clock.Advance(500);
  CHECK(clock.NowMillis() == 1500);
}

TEST_CASE("phase names round-trip", "[phase]") {
  for (JobPhase p : kAllJobPhases) {
    CHECK(ParseJobPhase(JobPhaseName(p)) == p);
  }
  CHECK_FALSE(ParseJobPhase("running").has_value());
  CHECK(IsFinal(JobPhase::kCancelled));
  CHECK_FALSE(IsFinal(JobPhase::kCancelling));
}

}  // namespace gantry
