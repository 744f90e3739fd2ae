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

TEST_CASE("RFC 3339 times are read as plugins and Kubernetes write them", "[clock]") {
  CHECK(ParseRfc3339("2026-11-29T10:39:14Z") == 1'795'948'754'000);
  CHECK(ParseRfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(ParseRfc3339("2026-11-29T10:39:14.25Z") == 1'795'948'754'250);
  CHECK(ParseRfc3339("2026-11-29T10:39:14.123456789Z") == 1'795'948'754'123);
  CHECK(ParseRfc3339("2026-11-29T12:39:14+02:00") == 1'795'948'754'000);
  CHECK(ParseRfc3339("2026-11-29T05:09:14-05:30") == 1'795'948'754'000);
  CHECK(ParseRfc3339("2026-11-29t10:39:14z") == 1'795'948'754'000);
  CHECK(ParseRfc3339("2024-02-29T00:00:00Z").has_value());  // a leap day
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T10:39:14", "2026-11-29 10:39:14Z", "2026-13-01T00:00:00Z",
        "2025-02-29T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T10:39:14.Z",
        "2026-11-29T10:39:14+0200", "2026-11-29T10:39:14Zjunk", "20x6-11-29T10:39:14Z"}) {
    INFO(bad);
    CHECK_FALSE(ParseRfc3339(bad).has_value());
  }
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

TEST_CASE("HTTP dates: formatted and read back as RFC 9110's IMF-fixdate", "[common][clock]") {
  CHECK(FormatHttpDate(784'111'777'000) == "Sun, 06 Nov 1994 08:49:37 GMT");  // RFC 9110's example
  CHECK(FormatHttpDate(0) == "Thu, 01 Jan 1970 00:00:00 GMT");
  CHECK(FormatHttpDate(*ParseRfc3339("2026-12-07T07:30:59.999Z")) == "Mon, 07 Dec 2026 07:30:59 GMT");
  CHECK(FormatHttpDate(*ParseRfc3339("2028-02-29T23:59:59Z")) == "Tue, 29 Feb 2028 23:59:59 GMT");
  CHECK(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784'111'777'000);
  CHECK(ParseHttpDate("Mon, 07 Dec 2026 07:30:59 GMT") == *ParseRfc3339("2026-12-07T07:30:59Z"));
  for (int64_t t : {int64_t{0}, int64_t{951'782'400'000}, int64_t{1'764'000'123'000}}) {
    CHECK(ParseHttpDate(FormatHttpDate(t)) == t);
  }
  // The obsolete forms, and what is not a date, are not read.
  CHECK_FALSE(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT"));
  CHECK_FALSE(ParseHttpDate("Sun Nov  6 08:49:37 1994"));
  CHECK_FALSE(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 UTC"));
  CHECK_FALSE(ParseHttpDate("Sun, 31 Feb 1994 08:49:37 GMT"));
  CHECK_FALSE(ParseHttpDate("Sun, 06 Foo 1994 08:49:37 GMT"));
  CHECK_FALSE(ParseHttpDate("Sun, 06 Nov 1994 24:49:37 GMT"));
  CHECK_FALSE(ParseHttpDate(""));
}

}  // namespace gantry
