// KubeProber against an HTTPS server made here, for what gantry-sim does not
// do: an API server replica that answers /readyz 500 while it shuts down
// (behind a load balancer, new connections reach a ready one), and a
// cluster reached without verifying its certificate (allowInsecure).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "gantry/http/server.h"
#include "gantry/inventory/token_source.h"
#include "gantry/kube/kube_prober.h"
#include "tls_cluster.h"

namespace gantry::testing {
namespace {

// Credentials for cluster, trusting ca_pem, with a token.
inventory::ClusterCredentials CredentialsFor(const TlsCluster& cluster, const std::string& ca_pem) {
  inventory::ClusterCredentials c;
  c.host = "127.0.0.1";
  c.port = cluster.port();
  c.server = "https://127.0.0.1:" + std::to_string(c.port);
  c.ca_pem = ca_pem;
  c.token_source = inventory::TokenSource::Static("prober-test-token-0123456789");
  return c;
}

// Answers /readyz 500 on the first connection that asks it (the replica
// shutting down) and 200 on any other; the Kueue lists empty.
class Replicas {
 public:
  inventory::ClusterCredentials Credentials() const { return CredentialsFor(cluster_, cluster_.ca_pem()); }

 private:
  std::atomic<uint64_t> first_{0};
  TlsCluster cluster_{"prober-test", [this](http::Request req, http::Responder respond) {
                        if (req.path == "/readyz") {
                          uint64_t none = 0;
                          first_.compare_exchange_strong(none, req.connection_id);
                          const bool draining = first_.load() == req.connection_id;
                          return respond(draining ? http::TextResponse(500, "[-]shutdown failed: reason withheld\n")
                                                  : http::TextResponse(200, "ok"));
                        }
                        respond(http::JsonResponse(
                            200, R"({"kind":"List","apiVersion":"v1","metadata":{},"items":[]})"));
                      }};
};

inventory::ClusterConfig Config() {
  inventory::ClusterConfig c;
  c.name = "c1";
  return c;
}

}  // namespace

TEST_CASE("a /readyz that is not 200 drops the probe's connection: the next probe reaches another replica",
          "[kube][prober]") {
  Replicas replicas;
  kube::KubeProber prober;
  auto draining = prober.Probe(Config(), replicas.Credentials());
  REQUIRE_FALSE(draining.ok());
  CHECK_THAT(draining.status().message(), Catch::Contains("/readyz answered 500"));
  auto next = prober.Probe(Config(), replicas.Credentials());
  CHECK(next.ok());
}

TEST_CASE("a cluster whose file allows it is probed without verifying its certificate", "[kube][prober]") {
  Replicas replicas;
  inventory::ClusterCredentials insecure = replicas.Credentials();
  insecure.ca_pem.clear();
  insecure.insecure = true;
  kube::KubeProber prober;
  (void)prober.Probe(Config(), insecure);  // the first connection's /readyz answers 500
  auto reading = prober.Probe(Config(), insecure);
  CHECK(reading.ok());
}

TEST_CASE("an API server whose certificate from the cluster's CA has expired is a refusal, not an outage, and one "
          "that the CA did not sign is an outage",
          "[kube][prober][tls]") {
  auto ok = [](http::Request, http::Responder respond) { respond(http::TextResponse(200, "ok")); };
  kube::KubeProber prober;
  // Expired a day ago (kubeadm's serving certificates last a year), and one
  // not valid until tomorrow: the CA signed them, so this is the cluster,
  // up, whose jobs most likely run on.
  for (sim::LeafValidity validity :
       {sim::LeafValidity{-400 * 86400L, -86400}, sim::LeafValidity{86400, 400 * 86400L}}) {
    TlsCluster cluster("prober-test", ok, validity);
    auto r = prober.Probe(Config(), CredentialsFor(cluster, cluster.ca_pem()));
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK(r.status().code() == Code::kUnauthenticated);
    CHECK_THAT(r.status().message(), Catch::Contains("check the certificate's dates, and this host's clock"));
    CHECK_THAT(r.status().message(), Catch::Contains("its CA signed"));
  }
  // The same expired certificate, with another cluster's CA trusted: anyone
  // could have answered.
  TlsCluster other("prober-other", ok);
  TlsCluster expired("prober-test", ok, {-400 * 86400L, -86400});
  auto stranger = prober.Probe(Config(), CredentialsFor(expired, other.ca_pem()));
  REQUIRE_FALSE(stranger.ok());
  INFO(stranger.status().message());
  CHECK(stranger.status().code() == Code::kUnavailable);
}

// An API server that answers /readyz at once but its lists only after the
// probe's deadline (overloaded, or a list too large): the cluster is up, its
// queues unread; its jobs are not taken for lost.
TEST_CASE("a ClusterQueue list that gets no answer after /readyz answered 200 is an unreadable reading, not an "
          "outage",
          "[kube][prober]") {
  std::mutex mu;
  std::vector<http::Responder> unanswered;  // kept until the end: never answered
  TlsCluster cluster("prober-test", [&](http::Request req, http::Responder respond) {
    if (req.path == "/readyz") return respond(http::TextResponse(200, "ok"));
    if (req.path == "/api/v1/namespaces/kube-system") {
      return respond(http::JsonResponse(
          200, R"({"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","uid":"ks-uid-1"}})"));
    }
    if (req.path.find("/clusterqueues") == std::string::npos) {
      return respond(http::JsonResponse(200, R"({"kind":"List","apiVersion":"v1","metadata":{},"items":[]})"));
    }
    std::lock_guard lock(mu);
    unanswered.push_back(std::move(respond));
  });
  kube::KubeProber prober(std::chrono::milliseconds(300));
  auto r = prober.Probe(Config(), CredentialsFor(cluster, cluster.ca_pem()));
  REQUIRE(r.ok());
  INFO(r->unreadable);
  CHECK_THAT(r->unreadable, Catch::Contains("listing ClusterQueues got no answer") &&
                                Catch::Contains("the cluster is up (/readyz)"));
  CHECK(r->queues == nullptr);
  // Its identity was read before the list: a start that must confirm it
  // does not take the cluster for lost.
  CHECK(r->cluster_id == "ks-uid-1");
  CHECK(r->cluster_id_status == 200);
}

// API Priority and Fairness answers 429 when the API server is overloaded.
TEST_CASE("a /readyz answered 429 by the API server is an unreadable reading, not an outage, and by anyone else an "
          "outage",
          "[kube][prober]") {
  const std::string status =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too many requests, please try again later.",)"
      R"("reason":"TooManyRequests","code":429})";
  TlsCluster cluster("prober-test", [status](http::Request req, http::Responder respond) {
    respond(req.path == "/readyz" ? http::JsonResponse(429, status)
                                  : http::JsonResponse(200, R"({"kind":"List","apiVersion":"v1","items":[]})"));
  });
  kube::KubeProber prober;
  auto r = prober.Probe(Config(), CredentialsFor(cluster, cluster.ca_pem()));
  REQUIRE(r.ok());
  CHECK_THAT(r->unreadable, Catch::Contains("throttling gantry (/readyz answered 429"));
  // Not verified: anyone on the path could have answered.
  inventory::ClusterCredentials insecure = CredentialsFor(cluster, "");
  insecure.insecure = true;
  auto unverified = prober.Probe(Config(), insecure);
  REQUIRE_FALSE(unverified.ok());
  CHECK_THAT(unverified.status().message(), Catch::Contains("/readyz answered 429"));
}

TEST_CASE("a refusal whose body has fields of other types is an outage told, not a crash", "[kube][prober]") {
  for (const char* body : {R"({"kind":5,"message":"no"})", R"({"kind":["Status"]})", R"({"kind":null})", "[1]"}) {
    INFO(body);
    std::string answer = body;
    TlsCluster cluster("prober-test", [answer](http::Request req, http::Responder respond) {
      respond(req.path == "/readyz" ? http::JsonResponse(401, answer)
                                    : http::JsonResponse(200, R"({"kind":"List","items":[]})"));
    });
    kube::KubeProber prober;
    auto r = prober.Probe(Config(), CredentialsFor(cluster, cluster.ca_pem()));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kUnavailable);  // not a Kubernetes Status: anyone could have answered
    CHECK_THAT(r.status().message(), Catch::Contains("/readyz answered 401"));
  }
}

}  // namespace gantry::testing
