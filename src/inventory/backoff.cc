#include "gantry/inventory/backoff.h"

#include <algorithm>
#include <cassert>

namespace gantry::inventory {

int64_t BackoffCeilingMs(int consecutive_failures, const BackoffPolicy& policy) {
  assert(policy.initial_ms > 0 && policy.initial_ms <= policy.max_ms);
  int64_t ceiling = policy.initial_ms;
  // Doubling stops at the cap, so this loop runs at most ~log2(max/initial)
  // times and never overflows however many failures there were.
  for (int i = 1; i < consecutive_failures && ceiling < policy.max_ms; ++i) ceiling *= 2;
  return std::min(ceiling, policy.max_ms);
}

int64_t BackoffDelayMs(int consecutive_failures, const BackoffPolicy& policy, std::mt19937& rng) {
  const int64_t ceiling = BackoffCeilingMs(consecutive_failures, policy);
  switch (policy.jitter) {
    case Jitter::kNone:
      return ceiling;
    case Jitter::kFull:
      return std::uniform_int_distribution<int64_t>(0, ceiling)(rng);
    case Jitter::kEqual:
      break;
  }
  const int64_t half = ceiling / 2;
  return half + std::uniform_int_distribution<int64_t>(0, ceiling - half)(rng);
}

}  // namespace gantry::inventory
