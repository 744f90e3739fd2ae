// KubeClient::TakeExchange, what a cluster's pool learns from each request
// (concurrency_limit.h): a round trip only when the answer was waited for on
// a connection already open; an overload from a 429, a 503 or no answer;
// nothing from a request that opened its connection, including the first
// after an answer that closed the last one (Connection: close), nor from an
// answer that was already there when Finish read.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gantry/http/server.h"
#include "gantry/kube/kube_client.h"
#include "tls_cluster.h"
#include "unreachable.h"

namespace gantry::testing {
namespace {

using std::chrono::milliseconds;
using Outcome = kube::KubeClient::Exchange::Outcome;

// Long enough that the client reads before the answer comes, even on a busy
// machine (a read that finds the answer there already is not told).
constexpr milliseconds kLate{200};

// An HTTPS server whose answers are chosen by path: /late answers kLate
// after the request came (from a thread of its own, so that the client's
// read waits for it), /close answers at once and closes the connection,
// /429 and /503 answer so; anything else answers 200 at once.
class Cluster {
 public:
  Cluster() { answerer_ = std::thread([this] { AnswerLate(); }); }
  ~Cluster() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    answerer_.join();
  }

  std::unique_ptr<kube::KubeClient> Client() const { return LocalClient(tls_.port(), tls_.ca_pem()); }

 private:
  void AnswerLate() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !late_.empty(); });
      if (late_.empty()) return;  // stopping
      auto [due, respond] = std::move(late_.front());
      late_.pop_front();
      // Until due, or stopping (then answered at once).
      cv_.wait_until(lock, due, [&] { return stopping_; });
      lock.unlock();
      respond(http::JsonResponse(200, "{}"));
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, http::Responder>> late_;
  bool stopping_ = false;
  std::thread answerer_;
  // Last: its handler uses the members above, and it stops (its loop thread
  // joined) before they go.
  TlsCluster tls_{"exchange-test", [this](http::Request req, http::Responder respond) {
                    if (req.path == "/late") {
                      std::lock_guard lock(mu_);
                      late_.emplace_back(std::chrono::steady_clock::now() + kLate, std::move(respond));
                      cv_.notify_one();
                      return;
                    }
                    http::Response r = http::JsonResponse(200, "{}");
                    if (req.path == "/close") r.headers.emplace_back("Connection", "close");
                    if (req.path == "/429") {
                      r = http::JsonResponse(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests"})");
                    }
                    if (req.path == "/503") {
                      r = http::JsonResponse(503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable"})");
                    }
                    respond(std::move(r));
                  }};
};

// One request through Start and Finish, as the engine's waves make them.
kube::KubeClient::Exchange Exchange(kube::KubeClient& client, const std::string& path) {
  client.StartDelete(path, {}, kube::KubeClient::Body::kOnlyOnError);
  (void)client.Finish();
  return client.TakeExchange();
}

}  // namespace

TEST_CASE("a request tells its pool a round trip only when it waited for the answer on an open connection",
          "[kube][exchange]") {
  Cluster cluster;
  std::unique_ptr<kube::KubeClient> client = cluster.Client();

  // The first request opened the connection (and shook hands): not told.
  CHECK(Exchange(*client, "/late").outcome == Outcome::kNone);
  // Taken once.
  CHECK(client->TakeExchange().outcome == Outcome::kNone);

  // On the open connection, the late answer is waited for: its round trip is
  // told, and is at least how late it came.
  kube::KubeClient::Exchange late = Exchange(*client, "/late");
  CHECK(late.outcome == Outcome::kAnswered);
  CHECK(late.round_trip >= kLate);

  SECTION("an answer that closes its connection: the next request opens one, and is not told") {
    CHECK(Exchange(*client, "/close").outcome != Outcome::kOverloaded);
    CHECK(Exchange(*client, "/late").outcome == Outcome::kNone);
    // Then the new connection is open, and it is told again.
    CHECK(Exchange(*client, "/late").outcome == Outcome::kAnswered);
  }

  SECTION("429 and 503 are overloads, and leave the connection to the next round trip") {
    CHECK(Exchange(*client, "/429").outcome == Outcome::kOverloaded);
    CHECK(Exchange(*client, "/503").outcome == Outcome::kOverloaded);
    CHECK(Exchange(*client, "/late").outcome == Outcome::kAnswered);
  }
}

TEST_CASE("an answer already there when the request's Finish reads it is not told as a round trip",
          "[kube][exchange]") {
  Cluster cluster;
  std::unique_ptr<kube::KubeClient> client = cluster.Client();
  (void)Exchange(*client, "/fine");  // opens the connection
  client->StartDelete("/fine", {}, kube::KubeClient::Body::kOnlyOnError);  // answered at once
  // Meanwhile a round trip on a connection of its own. The server's one
  // thread wrote the first answer when the request came, and this one's
  // kLate after: once it is read, the first answer waits in the socket.
  std::unique_ptr<kube::KubeClient> other = cluster.Client();
  (void)Exchange(*other, "/fine");
  REQUIRE(Exchange(*other, "/late").outcome == Outcome::kAnswered);
  auto reply = client->Finish();
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK(client->TakeExchange().outcome == Outcome::kNone);
  // The same request, waited for, is told: only the timing differs.
  CHECK(Exchange(*client, "/late").outcome == Outcome::kAnswered);
}

TEST_CASE("a request to a cluster that does not answer is an overload", "[kube][exchange]") {
  inventory::ClusterCredentials creds = UnreachableCluster();
  kube::KubeClientOptions options;
  options.max_attempts = 1;
  auto client = kube::KubeClient::Create(creds, options);
  REQUIRE(client.ok());
  CHECK(Exchange(**client, "/anything").outcome == Outcome::kOverloaded);
}

}  // namespace gantry::testing
