// ClientPool's stall guard (client_pool.h): after a request of a cluster
// gets no answer within its deadline, the pool hands out one connection at
// a time, and refuses the others at once instead of letting each caller
// wait for its own deadline; the first answer ends it. Against an HTTPS
// server made here that holds /hang requests until told to answer.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "gantry/http/server.h"
#include "gantry/kube/client_pool.h"
#include "test_support.h"
#include "tls_cluster.h"
#include "unreachable.h"

namespace gantry::testing {
namespace {

// An HTTPS server that answers /hang only when Release() is called (or it
// stops), and anything else with 200 at once.
class HangingCluster {
 public:
  ~HangingCluster() { Release(); }

  void Release() {
    std::vector<http::Responder> held;
    {
      std::lock_guard lock(mu_);
      held.swap(held_);
    }
    for (auto& r : held) r(http::JsonResponse(200, "{}"));
  }

  std::shared_ptr<kube::ClientPool> Pool(std::chrono::milliseconds stall_retry = std::chrono::seconds(60),
                                         std::chrono::milliseconds timeout = std::chrono::milliseconds(300)) const {
    inventory::ClusterCredentials creds = UnreachableCluster(tls_.port());
    creds.ca_pem = tls_.ca_pem();
    kube::ClientPoolOptions options;
    options.size = 4;
    options.acquire_timeout = std::chrono::milliseconds(5'000);
    options.client.max_attempts = 1;
    options.client.timeout = timeout;
    options.stall_retry = stall_retry;
    options.stall_after = std::chrono::milliseconds(200);
    return kube::ClientPool::Create(creds, options);
  }

 private:
  std::mutex mu_;
  std::vector<http::Responder> held_;
  // Last: its handler uses the members above, and it stops before they go.
  TlsCluster tls_{"stall-test", [this](http::Request req, http::Responder respond) {
                    if (req.path == "/hang") {
                      std::lock_guard lock(mu_);
                      held_.push_back(std::move(respond));
                      return;
                    }
                    if (req.path == "/500") {
                      respond(http::JsonResponse(500, R"({"kind":"Status","code":500,"reason":"InternalError"})"));
                      return;
                    }
                    respond(http::JsonResponse(200, "{}"));
                  }};
};

Result<kube::KubeReply> Delete(kube::ClientPool::Lease& lease, const std::string& path) {
  lease->StartDelete(path, {}, kube::KubeClient::Body::kOnlyOnError);
  return lease->Finish();
}

}  // namespace

TEST_CASE("a pool whose request got no answer in time sends one at a time until one is answered",
          "[kube][pool]") {
  HangingCluster cluster;
  std::shared_ptr<kube::ClientPool> pool = cluster.Pool();
  CHECK(pool->stalled_for_ms() == -1);

  {
    auto a = pool->Acquire();
    auto b = pool->Acquire();
    REQUIRE(a.ok());
    REQUIRE(b.ok());  // answering: as many as the pool holds
    auto answered = Delete(*b, "/fine");
    REQUIRE(answered.ok());
    auto hung = Delete(*a, "/hang");
    REQUIRE_FALSE(hung.ok());
    CHECK(hung.status().code() == Code::kDeadlineExceeded);
  }  // both back in the pool
  CHECK(pool->stalled_for_ms() >= 0);

  // Stalling: the first caller gets a connection; a second, while it is
  // out, is refused at once (the pool's acquire_timeout is 5 s: a wait
  // would be seen as the stall's message missing) and told why.
  auto trial = pool->Acquire();
  REQUIRE(trial.ok());
  const auto before = std::chrono::steady_clock::now();
  auto refused = pool->Acquire();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kUnavailable);
  CHECK_THAT(refused.status().message(), Catch::Contains("unanswered for"));
  CHECK(std::chrono::steady_clock::now() - before < std::chrono::milliseconds(4'000));

  SECTION("a read answered, or a write answered 500, does not end it") {
    auto read = (*trial)->Get("/fine");
    REQUIRE(read.ok());
    REQUIRE(read->status == 200);
    { auto done = std::move(*trial); }
    CHECK(pool->stalled_for_ms() >= 0);
    auto again = pool->Acquire();
    REQUIRE(again.ok());
    auto failed = Delete(*again, "/500");
    REQUIRE(failed.ok());
    CHECK(failed->status == 500);
    { auto done = std::move(*again); }
    CHECK(pool->stalled_for_ms() >= 0);
  }

  SECTION("a write of another method answered does not end it, and the stall keeps its start") {
    const int64_t stalled = pool->stalled_for_ms();
    auto created = (*trial)->Create("/fine", nlohmann::json{{"kind", "Workload"}});
    REQUIRE(created.ok());
    REQUIRE(created->status == 200);
    { auto done = std::move(*trial); }
    CHECK(pool->stalled_for_ms() >= stalled);
    auto again = pool->Acquire();
    REQUIRE(again.ok());
    CHECK_FALSE(pool->Acquire().ok());  // still one at a time
    auto deleted = Delete(*again, "/fine");  // the method that went unanswered
    REQUIRE(deleted.ok());
    { auto done = std::move(*again); }
    CHECK(pool->stalled_for_ms() == -1);
  }

  SECTION("an answer ends the stall: as many as the pool holds again") {
    auto answered = Delete(*trial, "/fine");
    REQUIRE(answered.ok());
    { auto done = std::move(*trial); }
    CHECK(pool->stalled_for_ms() == -1);
    auto a = pool->Acquire();
    auto b = pool->Acquire();
    CHECK(a.ok());
    CHECK(b.ok());
  }

  SECTION("with nothing out and no new sign for stall_retry, it ends") {
    { auto done = std::move(*trial); }  // back without a request: no sign either way
    CHECK(pool->stalled_for_ms() >= 0);  // 60 s: not yet
    std::shared_ptr<kube::ClientPool> quick = cluster.Pool(std::chrono::milliseconds(0));
    {
      auto a = quick->Acquire();
      REQUIRE(a.ok());
      CHECK_FALSE(Delete(*a, "/hang").ok());
    }
    // Expired at once (stall_retry 0) once nothing is out.
    CHECK(quick->stalled_for_ms() == -1);
  }

  SECTION("another request without an answer keeps it stalling") {
    auto hung = Delete(*trial, "/hang");
    CHECK_FALSE(hung.ok());
    { auto done = std::move(*trial); }
    CHECK(pool->stalled_for_ms() >= 0);
    auto a = pool->Acquire();
    REQUIRE(a.ok());
    CHECK_FALSE(pool->Acquire().ok());
  }
  cluster.Release();
}

TEST_CASE("a request its caller gave up waiting for: the others are refused at once when every connection is busy, "
          "and past stall_after the pool stalls",
          "[kube][pool]") {
  HangingCluster cluster;
  std::shared_ptr<kube::ClientPool> pool = cluster.Pool(std::chrono::seconds(60), std::chrono::seconds(10));
  std::vector<kube::ClientPool::Lease> out;
  for (int i = 0; i < 4; ++i) {  // the pool's size
    auto lease = pool->Acquire();
    REQUIRE(lease.ok());
    out.push_back(std::move(*lease));
  }
  out[0]->StartDelete("/hang", {}, kube::KubeClient::Body::kOnlyOnError);
  CHECK_FALSE(out[0]->AnswerBy(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
  out[0].Late();
  // Not stalling yet; a caller finding no connection is told at once (the
  // pool's acquire_timeout is 5 s).
  CHECK(pool->stalled_for_ms() == -1);
  const auto before = std::chrono::steady_clock::now();
  auto busy = pool->Acquire();
  REQUIRE_FALSE(busy.ok());
  CHECK_THAT(busy.status().message(), Catch::Contains("answers are late"));
  CHECK(std::chrono::steady_clock::now() - before < std::chrono::milliseconds(4'000));
  // Out past stall_after (200 ms here): stalling.
  REQUIRE(WaitFor([&] { return pool->stalled_for_ms() >= 0; }, std::chrono::seconds(5)));
  cluster.Release();
  REQUIRE(out[0]->Finish().ok());  // a write answered 200: the stall ends once it is back
  out.clear();
  CHECK(pool->stalled_for_ms() == -1);
}

TEST_CASE("AnswerBy tells an answer from a new TLS connection's session tickets, and waits no longer than asked",
          "[kube][pool]") {
  HangingCluster cluster;
  std::shared_ptr<kube::ClientPool> pool = cluster.Pool(std::chrono::seconds(60), std::chrono::seconds(10));
  auto lease = pool->Acquire();
  REQUIRE(lease.ok());
  // The first request opens the connection: the server's session tickets
  // come after the handshake, before any answer.
  (*lease)->StartDelete("/hang", {}, kube::KubeClient::Body::kOnlyOnError);
  CHECK_FALSE((*lease)->AnswerBy(std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
  cluster.Release();
  CHECK((*lease)->AnswerBy(std::chrono::steady_clock::now() + std::chrono::seconds(5)));
  auto reply = (*lease)->Finish();
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  // Nothing started: nothing to wait for.
  CHECK((*lease)->AnswerBy(std::chrono::steady_clock::now()));
}

}  // namespace gantry::testing
