// KubeClientOptions::stop_fd: a client whose owner has stopped sends
// nothing, and sleeps out no backoff between attempts.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>

#include "gantry/common/stop_signal.h"
#include "gantry/http/server.h"
#include "gantry/kube/kube_client.h"
#include "tls_cluster.h"
#include "unreachable.h"

namespace gantry::testing {

TEST_CASE("a client whose owner has stopped sends nothing and sleeps out no backoff between its attempts",
          "[kube]") {
  std::atomic<int> received{0};
  TlsCluster cluster("stop", [&](http::Request, http::Responder respond) {
    ++received;
    respond(http::JsonResponse(503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable"})"));
  });
  inventory::ClusterCredentials creds = UnreachableCluster(cluster.port());
  creds.ca_pem = cluster.ca_pem();
  StopSignal signal;
  REQUIRE(signal.fd() >= 0);
  kube::KubeClientOptions options;
  options.max_attempts = 3;
  // Each failed attempt is followed by 60 s of backoff, unless the stop ends it.
  options.first_backoff = std::chrono::milliseconds(60'000);
  options.max_backoff = std::chrono::milliseconds(60'000);
  options.stop_fd = signal.fd();
  auto client = kube::KubeClient::Create(creds, options);
  REQUIRE(client.ok());
  signal.Set();
  const auto start = std::chrono::steady_clock::now();
  auto reply = (*client)->Get("/api/v1/namespaces/kube-system");
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.status().message(), Catch::Contains("not tried, stopping"));
  CHECK(received.load() == 0);
  CHECK(took < std::chrono::seconds(30));  // not the two 60 s backoffs
}

}  // namespace gantry::testing
