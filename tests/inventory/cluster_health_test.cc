#include "gantry/inventory/cluster_health.h"

#include <catch2/catch.hpp>

#include <limits>

namespace gantry::inventory {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

struct Step {
  bool ok;
  int64_t at;  // ms after kT0
  HealthState state;
  int64_t since;                      // ms after kT0
  std::optional<int64_t> first_lost;  // ms after kT0
  int failures;
};

TEST_CASE("Health transitions follow the documented table", "[inventory][health]") {
  const Step steps[] = {
      {true, 0, HealthState::kReady, 0, std::nullopt, 0},
      {true, 1000, HealthState::kReady, 0, std::nullopt, 0},  // since unchanged
      {false, 2000, HealthState::kNotReady, 2000, 2000, 1},   // outage starts
      {false, 7000, HealthState::kNotReady, 2000, 2000, 2},   // same outage
      {false, 17000, HealthState::kNotReady, 2000, 2000, 3},
      {true, 20000, HealthState::kReady, 20000, std::nullopt, 0},  // recovered
      {false, 30000, HealthState::kNotReady, 30000, 30000, 1},     // a new outage
  };
  ClusterHealth h;
  CHECK(h.state == HealthState::kUnknown);
  for (const Step& s : steps) {
    INFO("at +" << s.at);
    if (s.ok) {
      h.OnProbeOk(kT0 + s.at);
    } else {
      h.OnProbeFailed(kT0 + s.at, "connection refused");
    }
    CHECK(h.state == s.state);
    CHECK(h.since_ms == kT0 + s.since);
    CHECK(h.first_lost_ms ==
          (s.first_lost ? std::optional<int64_t>(kT0 + *s.first_lost) : std::nullopt));
    CHECK(h.consecutive_failures == s.failures);
  }
  CHECK(h.last_error == "connection refused");
  CHECK(h.LostForMs(kT0 + 45000) == 15000);
  CHECK(HealthStateName(h.state) == "NotReady");
}

TEST_CASE("A cluster failing from its first probe is lost from that probe", "[inventory][health]") {
  ClusterHealth h;
  h.OnProbeFailed(kT0, "tls: certificate signed by unknown authority");
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.first_lost_ms == kT0);
  CHECK(h.last_error == "tls: certificate signed by unknown authority");
}

TEST_CASE("The outage a loss is judged on is the one a failed probe has shown, not the time since",
          "[inventory][health]") {
  ClusterHealth h;
  CHECK(h.ShownLostForMs() == 0);
  h.OnProbeFailed(kT0, "timeout");
  CHECK(h.ShownLostForMs() == 0);
  h.OnProbeFailed(kT0 + 20'000, "timeout");
  CHECK(h.ShownLostForMs() == 20'000);
  // A minute later, with no probe since (backing off): the cluster may be
  // back; the outage shown stays at the last failure.
  CHECK(h.LostForMs(kT0 + 80'000) == 80'000);
  CHECK(h.ShownLostForMs() == 20'000);
  h.OnProbeOk(kT0 + 81'000);
  CHECK(h.ShownLostForMs() == 0);
  // After a restart: nothing until a probe fails, then from the kept start.
  ClusterHealth restored;
  restored.RestoreFirstLost(kT0 - 600'000);
  CHECK(restored.ShownLostForMs() == 0);
  restored.OnProbeFailed(kT0, "timeout");
  CHECK(restored.ShownLostForMs() == 600'000);
}

TEST_CASE("first_lost_ms survives a restart via RestoreFirstLost", "[inventory][health]") {
  const int64_t persisted = kT0 - 600'000;  // outage began 10 min before the restart
  ClusterHealth failing;
  failing.RestoreFirstLost(persisted);
  CHECK(failing.state == HealthState::kUnknown);
  // Not counted before a probe confirms it: a restart must not judge a
  // cluster lost on an outage that may have ended while the daemon was down.
  CHECK(failing.LostForMs(kT0) == 0);
  failing.OnProbeFailed(kT0, "timeout");
  CHECK(failing.first_lost_ms == persisted);  // not reset by the restart
  CHECK(failing.LostForMs(kT0) == 600'000);
  CHECK(failing.since_ms == persisted);  // NotReady since the outage began (gantry clusters' SINCE)

  ClusterHealth recovering;
  recovering.RestoreFirstLost(persisted);
  recovering.OnProbeOk(kT0);
  CHECK_FALSE(recovering.first_lost_ms.has_value());
  CHECK(recovering.LostForMs(kT0) == 0);

  ClusterHealth none;
  none.RestoreFirstLost(std::nullopt);
  none.OnProbeFailed(kT0, "timeout");
  CHECK(none.first_lost_ms == kT0);
}

TEST_CASE("A refusal is an outage with a timeout of its own, and its clock runs on", "[inventory][health]") {
  ClusterHealth h;
  h.OnProbeOk(kT0);
  h.OnProbeFailed(kT0 + 1000, "connect: connection timed out");  // a partition first
  REQUIRE(h.first_lost_ms == kT0 + 1000);
  CHECK(h.LostTimeoutMs(60'000, 3'600'000) == 60'000);
  h.OnProbeRefused(kT0 + 5000, "/readyz answered 401");  // then it answers, refusing us
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.since_ms == kT0 + 1000);
  CHECK(h.credentials_refused);
  CHECK(h.first_lost_ms == kT0 + 1000);  // one outage: the clock does not restart
  CHECK(h.LostTimeoutMs(60'000, 3'600'000) == 3'600'000);
  CHECK(h.LostTimeoutMs(60'000, 0) == std::numeric_limits<int64_t>::max());  // 0: never lost
  CHECK(h.consecutive_failures == 2);  // still backs off
  CHECK(h.last_error == "/readyz answered 401");

  // A plain failure after refusals: the timeout follows the latest failure,
  // and its clock counts the time without any answer only (measured from
  // the refusals' start, a cluster that refused for longer than the plain
  // timeout would be lost at once): the 4 s from the first failure to the
  // first refusal.
  h.OnProbeFailed(kT0 + 9000, "connect: connection refused");
  CHECK_FALSE(h.credentials_refused);
  CHECK(h.first_lost_ms == kT0 + 5000);
  CHECK(h.LostForMs(kT0 + 9000) == 4000);
  CHECK(h.LostTimeoutMs(60'000, 3'600'000) == 60'000);
  h.OnProbeFailed(kT0 + 11000, "connect: connection refused");  // and it runs on
  CHECK(h.first_lost_ms == kT0 + 5000);

  h.OnProbeRefused(kT0 + 12000, "/readyz answered 403");
  h.OnProbeOk(kT0 + 15000);
  CHECK(h.state == HealthState::kReady);
  CHECK_FALSE(h.credentials_refused);
  CHECK_FALSE(h.first_lost_ms.has_value());
  CHECK(h.consecutive_failures == 0);
}

TEST_CASE("Two hours of refusals, then one probe out of reach: not lost at once", "[inventory][health]") {
  ClusterHealth h;
  h.OnProbeOk(kT0);
  h.OnProbeRefused(kT0 + 1000, "/readyz answered 401");
  h.OnProbeRefused(kT0 + 7'200'000, "/readyz answered 401");
  REQUIRE(h.LostForMs(kT0 + 7'200'000) == 7'199'000);  // past clusterLostTimeout, within the refused one
  h.OnProbeFailed(kT0 + 7'205'000, "TLS handshake: timed out");
  CHECK(h.LostTimeoutMs(900'000, 86'400'000) == 900'000);
  CHECK(h.LostForMs(kT0 + 7'205'000) < 900'000);
  CHECK(h.LostForMs(kT0 + 7'205'000 + 900'000) >= 900'000);  // out of reach for the whole timeout since
}

TEST_CASE("A cluster alternating between refusals and no answer is lost once its silences add up", "[inventory][health]") {
  // Probes 5 s apart: no answer, a 401, no answer, ... The gaps after a
  // probe without an answer count (each gap as the earlier probe's kind):
  // half the time.
  ClusterHealth h;
  h.OnProbeOk(kT0);
  int64_t t = kT0;
  bool lost = false;
  for (int i = 0; i < 2000 && !lost; ++i) {
    t += 5000;
    if (i % 2 == 0) {
      h.OnProbeFailed(t, "connect: connection timed out");
      lost = h.LostForMs(t) >= h.LostTimeoutMs(900'000, 86'400'000);
    } else {
      h.OnProbeRefused(t, "/readyz answered 401");
      lost = h.LostForMs(t) >= h.LostTimeoutMs(900'000, 86'400'000);
    }
  }
  CHECK(lost);
  // 900 s of silence at half the time: about 30 minutes, far short of the
  // 24 hours a cluster that only refuses is given.
  CHECK(t - kT0 >= 1'800'000 - 10'000);
  CHECK(t - kT0 <= 1'800'000 + 10'000);
  CHECK_FALSE(h.credentials_refused);  // lost on a probe without an answer
}

TEST_CASE("A refusal at the first probe after a restart keeps the persisted outage", "[inventory][health]") {
  ClusterHealth h;
  h.RestoreFirstLost(kT0 - 600'000);
  h.OnProbeRefused(kT0, "/readyz answered 401");
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.first_lost_ms == kT0 - 600'000);
  CHECK(h.credentials_refused);
}

TEST_CASE("Recovery keeps the last error for display", "[inventory][health]") {
  ClusterHealth h;
  h.OnProbeFailed(kT0, "503");
  h.OnProbeOk(kT0 + 1);
  CHECK(h.state == HealthState::kReady);
  CHECK(h.last_error == "503");
  CHECK(h.consecutive_failures == 0);
}

TEST_CASE("Ready after an outage keeps when its last failed probe was, and Ready from Unknown has none",
          "[inventory][health]") {
  ClusterHealth h;
  h.OnProbeOk(kT0);
  CHECK(h.ready_after_failure_mono_ms == 0);
  h.OnProbeFailed(kT0 + 1'000, "timeout");
  h.OnProbeFailed(kT0 + 6'000, "timeout");
  h.OnProbeOk(kT0 + 9'000);
  CHECK(h.ready_after_failure_mono_ms == kT0 + 6'000);
  CHECK(h.last_failure_ms == 0);
  h.OnProbeOk(kT0 + 14'000);  // still Ready: the same outage's
  CHECK(h.ready_after_failure_mono_ms == kT0 + 6'000);
  h.OnProbeRefused(kT0 + 20'000, "401");
  h.OnProbeOk(kT0 + 25'000);
  CHECK(h.ready_after_failure_mono_ms == kT0 + 20'000);

  // The monotonic time given, not the wall's: the wall clock stepped back a
  // minute during the outage, and a watch that listed before the outage's
  // last failure must not look as if it listed after it.
  h.OnProbeFailed(kT0 + 30'000, "timeout", 700'000);
  h.OnProbeFailed(kT0 - 30'000, "timeout", 740'000);
  h.OnProbeOk(kT0 - 25'000);
  CHECK(h.ready_after_failure_mono_ms == 740'000);
  CHECK(h.last_failure_mono_ms == 0);
}

TEST_CASE("With a failure threshold of 2 one failed probe leaves a Ready cluster Ready and its outage begun",
          "[inventory][health]") {
  ClusterHealth h;
  h.failure_threshold = 2;
  h.OnProbeOk(kT0);
  h.OnProbeFailed(kT0 + 5'000, "readyz: 500");
  CHECK(h.state == HealthState::kReady);
  CHECK(h.since_ms == kT0);
  CHECK(h.Doubted());
  CHECK(h.first_lost_ms == kT0 + 5'000);  // clusterLostTimeout's clock runs from here
  CHECK(h.LostForMs(kT0 + 6'000) == 0);  // only a NotReady outage counts, from that first failure
  CHECK(h.ShownLostForMs() == 0);
  h.OnProbeOk(kT0 + 6'000);        // a blip: no new Ready period
  CHECK(h.state == HealthState::kReady);
  CHECK(h.since_ms == kT0);
  CHECK_FALSE(h.Doubted());
  CHECK(h.ready_after_failure_mono_ms == 0);
  CHECK_FALSE(h.first_lost_ms);

  // Two in a row: NotReady since the first of them.
  h.OnProbeFailed(kT0 + 10'000, "timeout");
  h.OnProbeFailed(kT0 + 11'000, "timeout");
  CHECK(h.state == HealthState::kNotReady);
  CHECK_FALSE(h.Doubted());
  CHECK(h.since_ms == kT0 + 10'000);
  CHECK(h.first_lost_ms == kT0 + 10'000);
  CHECK(h.ShownLostForMs() == 1'000);
  // The backoff counts the failures since it went NotReady: 5 s next, as
  // with a threshold of 1 after its first failure.
  std::mt19937 rng(7);
  const BackoffPolicy none{5'000, 300'000, Jitter::kNone};
  CHECK(h.NextRetryDelayMs(rng, none) == 5'000);
  h.OnProbeFailed(kT0 + 16'000, "timeout");
  CHECK(h.NextRetryDelayMs(rng, none) == 10'000);
  h.OnProbeOk(kT0 + 26'000);
  CHECK(h.ready_after_failure_mono_ms == kT0 + 16'000);
  CHECK(h.since_ms == kT0 + 26'000);
}

TEST_CASE("With a failure threshold of 2 a conclusive failure makes a Ready cluster NotReady at once",
          "[inventory][health]") {
  ClusterHealth h;
  h.failure_threshold = 2;
  h.OnProbeOk(kT0);
  // Sent at +10 s, given up at +15 s: no answer all that while.
  h.OnProbeFailed(kT0 + 10'000, "GET /readyz: no answer within 5000 ms", std::nullopt, kT0 + 15'000);
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.since_ms == kT0 + 10'000);
  CHECK(h.first_lost_ms == kT0 + 10'000);
  CHECK(h.ShownLostForMs() == 5'000);
  // The next, refused at once at +20 s: the 5 s between count as no answer.
  h.OnProbeFailed(kT0 + 20'000, "connect: connection refused");
  CHECK(h.ShownLostForMs() == 10'000);
  CHECK(h.unreachable_ms == 10'000);
}

TEST_CASE("With a failure threshold of 2 a cluster never seen Ready is NotReady at its first failure",
          "[inventory][health]") {
  ClusterHealth h;
  h.failure_threshold = 2;
  h.RestoreFirstLost(kT0 - 60'000);
  h.OnProbeFailed(kT0, "timeout");
  CHECK(h.state == HealthState::kNotReady);
  CHECK(h.since_ms == kT0 - 60'000);  // the outage restored after a restart
  ClusterHealth fresh;
  fresh.failure_threshold = 2;
  fresh.OnProbeRefused(kT0, "401");
  CHECK(fresh.state == HealthState::kNotReady);
  CHECK(fresh.credentials_refused);
}

TEST_CASE("With a failure threshold of 2 a refusal and a failure in a row make a cluster NotReady",
          "[inventory][health]") {
  ClusterHealth h;
  h.failure_threshold = 2;
  h.OnProbeOk(kT0);
  h.OnProbeRefused(kT0 + 1'000, "401");
  CHECK(h.state == HealthState::kReady);
  h.OnProbeFailed(kT0 + 2'000, "timeout");
  CHECK(h.state == HealthState::kNotReady);
  CHECK_FALSE(h.credentials_refused);
  CHECK(h.since_ms == kT0 + 1'000);
}

TEST_CASE("NextRetryDelayMs grows with consecutive failures", "[inventory][health]") {
  std::mt19937 rng(7);
  ClusterHealth h;
  const BackoffPolicy none{5'000, 300'000, Jitter::kNone};
  CHECK(h.NextRetryDelayMs(rng, none) == 5'000);
  for (int i = 0; i < 3; ++i) h.OnProbeFailed(kT0 + i, "x");
  CHECK(h.NextRetryDelayMs(rng, none) == 20'000);
  for (int i = 0; i < 20; ++i) h.OnProbeFailed(kT0 + i, "x");
  CHECK(h.NextRetryDelayMs(rng, none) == 300'000);
  const int64_t jittered = h.NextRetryDelayMs(rng);  // defaults: equal jitter, 30 s cap
  CHECK(jittered >= 15'000);
  CHECK(jittered <= 30'000);
}

}  // namespace
}  // namespace gantry::inventory
