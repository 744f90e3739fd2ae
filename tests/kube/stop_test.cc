// KubeClientOptions::stop_fd: a client whose owner stops sleeps out no
// backoff between attempts, and sends no further one.
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

TEST_CASE("a client whose owner stops while it backs off from a 503 neither waits out the backoff nor tries again",
          "[kube]") {
  StopSignal signal;
  REQUIRE(signal.fd() >= 0);
  std::atomic<int> received{0};
  // Each answer a 503 with Retry-After: 60, the owner stopping meanwhile.
  TlsCluster cluster("stop", [&](http::Request, http::Responder respond) {
    ++received;
    http::Response r = http::JsonResponse(
        503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable","message":"etcd is slow"})");
    r.headers.emplace_back("Retry-After", "60");
    signal.Set();
    respond(std::move(r));
  });
  inventory::ClusterCredentials creds = UnreachableCluster(cluster.port());
  creds.ca_pem = cluster.ca_pem();
  kube::KubeClientOptions options;
  options.max_attempts = 3;
  options.max_backoff = std::chrono::milliseconds(60'000);
  options.stop_fd = signal.fd();
  auto client = kube::KubeClient::Create(creds, options);
  REQUIRE(client.ok());
  const auto start = std::chrono::steady_clock::now();
  // The 503 read, or its read given up: either way no second attempt.
  auto reply = (*client)->Get("/api/v1/namespaces/kube-system");
  const auto took = std::chrono::steady_clock::now() - start;
  if (reply.ok()) {
    CHECK(reply->status == 503);
    CHECK(reply->attempts == 1);
  } else {
    CHECK_THAT(reply.status().message(), Catch::Contains("abandoned, stopping"));
  }
  CHECK(received.load() == 1);
  CHECK(took < std::chrono::seconds(30));  // not the 60 s backoff
}

}  // namespace gantry::testing
