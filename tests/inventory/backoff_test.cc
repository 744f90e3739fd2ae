#include "gantry/inventory/backoff.h"

#include <catch2/catch.hpp>
#include <climits>

namespace gantry::inventory {
namespace {

TEST_CASE("Backoff ceiling doubles from 5 s and caps at 30 s", "[inventory][backoff]") {
  const BackoffPolicy policy;
  const struct {
    int failures;
    int64_t ceiling_ms;
  } kTable[] = {
      {0, 5'000}, {1, 5'000}, {2, 10'000}, {3, 20'000}, {4, 30'000}, {5, 30'000}, {50, 30'000},
      {INT_MAX, 30'000},
  };
  for (const auto& row : kTable) {
    INFO("failures " << row.failures);
    CHECK(BackoffCeilingMs(row.failures, policy) == row.ceiling_ms);
  }
}

TEST_CASE("Jittered delays stay within their documented bounds", "[inventory][backoff]") {
  std::mt19937 rng(42);
  for (Jitter jitter : {Jitter::kEqual, Jitter::kFull}) {
    const BackoffPolicy policy{5'000, 300'000, jitter};
    for (int failures = 1; failures <= 12; ++failures) {
      const int64_t ceiling = BackoffCeilingMs(failures, policy);
      const int64_t floor = jitter == Jitter::kEqual ? ceiling / 2 : 0;
      int64_t lo = INT64_MAX, hi = 0;
      for (int i = 0; i < 2000; ++i) {
        const int64_t d = BackoffDelayMs(failures, policy, rng);
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
      INFO("failures " << failures);
      CHECK(lo >= floor);
      CHECK(hi <= ceiling);
      CHECK(hi - lo > (ceiling - floor) / 2);  // actually spread, not constant
    }
  }
}

TEST_CASE("Backoff is deterministic for a seeded engine", "[inventory][backoff]") {
  std::mt19937 a(1234), b(1234);
  for (int failures = 1; failures < 10; ++failures) {
    CHECK(BackoffDelayMs(failures, {}, a) == BackoffDelayMs(failures, {}, b));
  }
}

}  // namespace
}  // namespace gantry::inventory
