// The client's connection (src/http/connection.cc) over HTTPS and plain
// HTTP: certificate and name checks, a server that closes while the client
// writes, and a stream's idle deadline and stop request.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>
#include <mutex>
#include <thread>

#include "certs.h"
#include "gantry/common/stop_signal.h"
#include "gantry/http/client.h"
#include "gantry/http/server.h"
#include "raw_socket.h"

namespace gantry::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct TlsServer {
  sim::ClusterCerts certs;
  std::unique_ptr<Server> server;
  std::string Url(const std::string& host) const { return "https://" + host + ":" + std::to_string(server->port()); }
};

// An HTTPS server on address whose certificate names 127.0.0.1 and localhost
// (on port, 0 for any free one; certs, when given, instead of new ones).
TlsServer StartTls(const std::string& address, std::size_t body_limit = 1 << 20, uint16_t port = 0,
                   const sim::ClusterCerts* certs_to_use = nullptr) {
  TlsServer s;
  if (certs_to_use) {
    s.certs = *certs_to_use;
  } else {
    auto certs = sim::MakeClusterCerts("client-test");
    REQUIRE(certs.ok());
    s.certs = *certs;
  }
  ServerOptions options;
  options.address = address;
  options.port = port;
  options.body_limit = body_limit;
  options.tls = TlsServerOptions{s.certs.cert_pem, s.certs.key_pem};
  s.server = std::make_unique<Server>(options, [](Request req, Responder respond) {
    respond(TextResponse(200, req.method + " " + req.path + " " + std::to_string(req.body.size())));
  });
  REQUIRE(s.server->Start().ok());
  return s;
}

std::unique_ptr<Client> Connect(const std::string& url, const std::string& ca_pem) {
  ClientOptions options;
  options.ca_pem = ca_pem;
  options.connect_timeout = milliseconds(5'000);
  options.request_timeout = milliseconds(10'000);
  auto c = Client::Create(url, options);
  REQUIRE(c.ok());
  return std::move(c.value());
}

}  // namespace

TEST_CASE("over HTTPS the server's certificate and name are checked", "[http]") {
  TlsServer s = StartTls("127.0.0.1");
  SECTION("an IP address in the certificate, several requests on one connection") {
    auto client = Connect(s.Url("127.0.0.1"), s.certs.ca_pem);
    for (int i = 0; i < 3; ++i) {
      auto res = client->Do("POST", "/x", std::string(100'000, 'b'));
      REQUIRE(res.ok());
      CHECK(res->status == 200);
      CHECK(res->body == "POST /x 100000");
    }
  }
  SECTION("a DNS name in the certificate") {
    auto res = Connect(s.Url("localhost"), s.certs.ca_pem)->Do("GET", "/y");
    REQUIRE(res.ok());
    CHECK(res->body == "GET /y 0");
  }
  SECTION("a CA that is the intermediate issuing the server's certificate is trusted, as kubectl does") {
    auto chained = sim::MakeClusterCerts("chained", true);
    REQUIRE(chained.ok());
    TlsServer t = StartTls("127.0.0.1", 1 << 20, 0, &*chained);
    for (const std::string& ca : {chained->intermediate_pem, chained->ca_pem}) {
      auto res = Connect(t.Url("127.0.0.1"), ca)->Do("GET", "/chain");
      REQUIRE(res.ok());
      CHECK(res->body == "GET /chain 0");
    }
  }
  SECTION("without verification (a kubeconfig's insecure-skip-tls-verify) any certificate is taken") {
    ClientOptions options;
    options.insecure_skip_verify = true;
    auto client = Client::Create(s.Url("127.0.0.1"), options);
    REQUIRE(client.ok());
    auto res = (*client)->Do("GET", "/insecure");
    REQUIRE(res.ok());
    CHECK(res->body == "GET /insecure 0");
    options.ca_pem = s.certs.ca_pem;  // both: a contradiction, refused
    auto both = Client::Create(s.Url("127.0.0.1"), options);
    CHECK_FALSE((both.ok() && (*both)->Do("GET", "/x").ok()));
  }
  SECTION("a certificate from another CA is refused") {
    auto other = sim::MakeClusterCerts("someone-else");
    REQUIRE(other.ok());
    auto res = Connect(s.Url("127.0.0.1"), other->ca_pem)->Do("GET", "/z");
    REQUIRE_FALSE(res.ok());
    CHECK(res.status().code() == Code::kUnavailable);
    CHECK(res.status().message().find("TLS handshake") != std::string::npos);
    CHECK(res.status().message().find("certificate verify failed") != std::string::npos);
    // What is wrong, and what to check: not the same words as for a name.
    CHECK(res.status().message().find("is not signed by the CA gantry trusts for this cluster") != std::string::npos);
    // A client of another kind of server (the CLI) names what to check instead.
    ClientOptions cli;
    cli.ca_pem = other->ca_pem;
    cli.untrusted_hint = "pass its CA with --ca-file";
    auto told = Client::Create(s.Url("127.0.0.1"), cli);
    REQUIRE(told.ok());
    auto refused = (*told)->Do("GET", "/z");
    REQUIRE_FALSE(refused.ok());
    INFO(refused.status().message());
    CHECK(refused.status().message().find("; pass its CA with --ca-file") !=
          std::string::npos);
    CHECK(refused.status().message().find("kubeconfig") == std::string::npos);
  }
  SECTION("a CA file that cannot be read is named") {
    ClientOptions missing;
    missing.ca_file = "/nonexistent/gantry-ca.pem";
    auto client = Client::Create(s.Url("127.0.0.1"), missing);
    std::string message = client.ok() ? (*client)->Do("GET", "/z").status().message() : client.status().message();
    CHECK(message.find("TLS CA /nonexistent/gantry-ca.pem: ") != std::string::npos);
  }
}

// Clients with the same CA and identity share one TLS context
// (client.cc); the sharing must never let a client trust another's CA.
TEST_CASE("clients alive at once each trust their own CA only, sharing a context or not", "[http]") {
  TlsServer a = StartTls("127.0.0.1");
  TlsServer b = StartTls("127.0.0.1");
  auto a1 = Connect(a.Url("127.0.0.1"), a.certs.ca_pem);
  auto a2 = Connect(a.Url("127.0.0.1"), a.certs.ca_pem);
  auto b1 = Connect(b.Url("127.0.0.1"), b.certs.ca_pem);
  for (Client* c : {a1.get(), a2.get(), b1.get()}) {
    auto res = c->Do("GET", "/ok");
    REQUIRE(res.ok());
    CHECK(res->status == 200);
  }
  // While those live (and their contexts with them), a client of A's CA
  // meets B's server, and one of B's CA meets A's: both refused.
  auto a_at_b = Connect(b.Url("127.0.0.1"), a.certs.ca_pem)->Do("GET", "/no");
  auto b_at_a = Connect(a.Url("127.0.0.1"), b.certs.ca_pem)->Do("GET", "/no");
  for (const auto* res : {&a_at_b, &b_at_a}) {
    REQUIRE_FALSE(res->ok());
    CHECK(res->status().message().find("certificate verify failed") != std::string::npos);
  }
  // And the shared ones still work after the refusals.
  auto again = a2->Do("GET", "/ok");
  REQUIRE(again.ok());
  CHECK(again->status == 200);
}

TEST_CASE("over HTTPS a certificate that does not name the address is refused", "[http]") {
  TlsServer s = StartTls("127.0.0.2");  // the certificate names 127.0.0.1 and localhost only
  auto res = Connect(s.Url("127.0.0.2"), s.certs.ca_pem)->Do("GET", "/");
  REQUIRE_FALSE(res.ok());
  INFO(res.status().message());
  CHECK(res.status().message().find("certificate verify failed") != std::string::npos);
  CHECK(res.status().message().find("IP address mismatch; the certificate does not name 127.0.0.2") !=
        std::string::npos);
  CHECK(res.status().message().find("tls-server-name in the kubeconfig") != std::string::npos);
  // A client that is not a worker cluster's (the CLI) has no kubeconfig to set a name in.
  ClientOptions cli;
  cli.ca_pem = s.certs.ca_pem;
  cli.untrusted_hint = "pass its CA with --ca-file";
  auto client = Client::Create(s.Url("127.0.0.2"), cli);
  REQUIRE(client.ok());
  auto refused = (*client)->Do("GET", "/");
  REQUIRE_FALSE(refused.ok());
  INFO(refused.status().message());
  CHECK(refused.status().message().find("the certificate does not name 127.0.0.2: connect by a name it has") !=
        std::string::npos);
  CHECK(refused.status().message().find("kubeconfig") == std::string::npos);
}

TEST_CASE("a server that closes while the client still writes is an error, not a signal", "[http]") {
  // The server answers 413 after 1 KiB and closes; the client is still
  // sending 32 MiB. Writing to the closed socket must not raise SIGPIPE
  // (which would end this test process).
  TlsServer s = StartTls("127.0.0.1", 1024);
  auto client = Connect(s.Url("127.0.0.1"), s.certs.ca_pem);
  for (int i = 0; i < 3; ++i) {
    auto res = client->Do("POST", "/big", std::string(32 << 20, 'x'));
    if (res.ok()) {
      CHECK(res->status == 413);
    } else {
      CHECK(res.status().code() == Code::kUnavailable);
    }
  }
  auto small = client->Do("POST", "/small", "ok");  // the client recovers
  REQUIRE(small.ok());
  CHECK(small->body == "POST /small 2");
}

TEST_CASE("a kept-alive connection the server dropped is replaced, and the request answered", "[http]") {
  TlsServer first = StartTls("127.0.0.1");
  const uint16_t port = first.server->port();
  auto client = Connect(first.Url("127.0.0.1"), first.certs.ca_pem);
  auto before = client->Do("GET", "/before");
  REQUIRE(before.ok());
  // The server goes away with the client's connection open, and another
  // comes up on the same port: the next request finds the old connection
  // closed (a reset or an end of stream, on the write or the read) and is
  // sent again on a new one.
  sim::ClusterCerts certs = first.certs;
  first.server->Stop(milliseconds(0));
  first.server.reset();
  TlsServer second = StartTls("127.0.0.1", 1 << 20, port, &certs);
  for (int i = 0; i < 2; ++i) {
    auto after = client->Do("POST", "/after", "abc");
    REQUIRE(after.ok());
    CHECK(after->body == "POST /after 3");
  }
}

TEST_CASE("a stream that ends whole leaves its connection to the next, and a dropped one is replaced", "[http]") {
  auto certs = sim::MakeClusterCerts("stream-test");
  REQUIRE(certs.ok());
  std::mutex mu;
  std::vector<uint64_t> conns;  // the server's connection of each stream it answered
  auto start = [&](uint16_t port) {
    ServerOptions options;
    options.address = "127.0.0.1";
    options.port = port;
    options.tls = TlsServerOptions{certs->cert_pem, certs->key_pem};
    auto server = std::make_unique<Server>(options, [&](Request req, Responder respond) {
      {
        std::lock_guard lock(mu);
        conns.push_back(req.connection_id);
      }
      Response r;
      r.stream = std::make_shared<ResponseStream>();
      r.stream->Write("event\n");
      r.stream->Finish();  // a whole stream, as a watch that reached its timeoutSeconds
      respond(std::move(r));
    });
    REQUIRE(server->Start().ok());
    return server;
  };
  auto first = start(0);
  const uint16_t port = first->port();
  auto client = Connect("https://127.0.0.1:" + std::to_string(port), certs->ca_pem);
  auto stream = [&] {
    std::string got;
    auto res = client->Stream("GET", "/watch", {}, milliseconds(10'000), [&](std::string_view d) {
      got.append(d);
      return true;
    });
    REQUIRE(res.ok());
    CHECK(res->status == 200);
    CHECK(got == "event\n");
  };
  stream();
  stream();
  {
    std::lock_guard lock(mu);
    REQUIRE(conns.size() == 2);
    CHECK(conns[0] == conns[1]);  // one connection, one handshake
  }
  // The server goes away with the connection open, another comes up on
  // the same port: the next stream finds the old connection closed and is
  // sent again on a new one.
  first->Stop(milliseconds(0));
  first.reset();
  auto second = start(port);
  stream();
  std::lock_guard lock(mu);
  REQUIRE(conns.size() == 3);  // the third stream was answered, by the second server
}

TEST_CASE("a stream whose answer does not come in time is not sent again", "[http]") {
  // The first stream ends whole and leaves its connection; the second is
  // never answered. Its timeout must not send it again on a new
  // connection: the server may have it (it does here).
  std::mutex mu;
  int received = 0;
  std::vector<Responder> unanswered;  // kept until the end: never answered
  ServerOptions options;
  options.port = 0;
  Server server(options, [&](Request, Responder respond) {
    std::lock_guard lock(mu);
    if (++received > 1) {
      unanswered.push_back(std::move(respond));
      return;
    }
    Response r;
    r.stream = std::make_shared<ResponseStream>();
    r.stream->Finish();
    respond(std::move(r));
  });
  REQUIRE(server.Start().ok());
  ClientOptions copts;
  copts.request_timeout = milliseconds(300);
  auto client = Client::Create("http://127.0.0.1:" + std::to_string(server.port()), copts);
  REQUIRE(client.ok());
  auto ignore = [](std::string_view) { return true; };
  auto whole = (*client)->Stream("GET", "/watch", {}, milliseconds(10'000), ignore);
  REQUIRE(whole.ok());
  auto late = (*client)->Stream("GET", "/watch", {}, milliseconds(10'000), ignore);
  REQUIRE_FALSE(late.ok());
  CHECK(late.status().code() == Code::kDeadlineExceeded);
  std::lock_guard lock(mu);
  CHECK(received == 2);
}

TEST_CASE("a quiet stream ends at its idle deadline, or at once when its owner stops it", "[http]") {
  ServerOptions options;
  options.port = 0;
  std::atomic<int> opened{0};  // streams the server has answered
  Server server(options, [&opened](Request, Responder respond) {
    ++opened;
    Response r;
    r.stream = std::make_shared<ResponseStream>();  // never written
    respond(std::move(r));
  });
  REQUIRE(server.Start().ok());
  auto client = Client::Create("http://127.0.0.1:" + std::to_string(server.port()));
  REQUIRE(client.ok());
  auto never = [](std::string_view) { return true; };

  auto idle = (*client)->Stream("GET", "/watch", {}, milliseconds(300), never);
  REQUIRE_FALSE(idle.ok());
  CHECK(idle.status().code() == Code::kDeadlineExceeded);

  std::atomic<bool> stop{false};
  int looks = 0;
  auto start = steady_clock::now();
  auto stopped = (*client)->Stream("GET", "/watch", {}, milliseconds(60'000), never, [&] {
    // Asked about every 100 ms while the stream waits: stop from the third look on.
    stop = ++looks >= 3;
    return stop.load();
  });
  auto took = steady_clock::now() - start;
  REQUIRE(stopped.ok());
  CHECK(stop.load());
  CHECK(stopped->status == 200);
  CHECK(took < std::chrono::seconds(10));  // far from the 60 s idle deadline

  SECTION("with a stop fd the wait watches it, and never wakes to ask") {
    StopSignal signal;
    REQUIRE(signal.fd() >= 0);
    const int before = opened.load();
    std::thread stopper([&] {
      // Set once the server has the request: no guessed delay.
      auto give_up = steady_clock::now() + std::chrono::seconds(30);
      while (opened.load() == before && steady_clock::now() < give_up) std::this_thread::yield();
      signal.Set();
    });
    int asked = 0;
    start = steady_clock::now();
    auto ended = (*client)->Stream(
        "GET", "/watch", {}, milliseconds(60'000), never,
        [&] {
          ++asked;
          return false;
        },
        signal.fd());
    took = steady_clock::now() - start;
    stopper.join();
    REQUIRE(ended.ok());
    // 200, or 0 when the stop came before the response's head (the fd is
    // watched from the request's first byte on).
    CHECK((ended->status == 200 || ended->status == 0));
    CHECK(took < std::chrono::seconds(10));  // far from the 60 s idle deadline
    CHECK(asked == 0);  // the fd, not the function, ended the wait
  }
}

TEST_CASE("a request whose client's owner stops is given up at once: its answer not waited for, nothing sent "
          "again, no new connection",
          "[http]") {
  std::mutex mu;
  int received = 0;
  std::vector<Responder> unanswered;  // never answered
  ServerOptions options;
  options.port = 0;
  Server server(options, [&](Request, Responder respond) {
    std::lock_guard lock(mu);
    ++received;
    unanswered.push_back(std::move(respond));
  });
  REQUIRE(server.Start().ok());
  StopSignal signal;
  REQUIRE(signal.fd() >= 0);
  ClientOptions copts;
  copts.request_timeout = milliseconds(60'000);
  copts.stop_fd = signal.fd();
  auto client = Client::Create("http://127.0.0.1:" + std::to_string(server.port()), copts);
  REQUIRE(client.ok());
  REQUIRE((*client)->Begin("DELETE", "/objects/a").ok());
  auto has_it = [&] {
    std::lock_guard lock(mu);
    return received == 1;
  };
  auto give_up = steady_clock::now() + std::chrono::seconds(30);
  while (!has_it() && steady_clock::now() < give_up) std::this_thread::yield();
  REQUIRE(has_it());
  signal.Set();
  // Not waited for: the read that follows gives up at once.
  CHECK((*client)->AnswerBy(steady_clock::now() + std::chrono::seconds(60)));
  auto answer = (*client)->Finish();  // would wait 60 s
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.status().code() == Code::kUnavailable);
  CHECK_THAT(answer.status().message(), Catch::Contains("DELETE /objects/a") && Catch::Contains("abandoned, stopping"));
  auto later = (*client)->Do("GET", "/objects");
  REQUIRE_FALSE(later.ok());
  CHECK(later.status().code() == Code::kUnavailable);
  CHECK_THAT(later.status().message(), Catch::Contains("not tried, stopping"));
  CHECK((*client)->connects() == 1);
  std::lock_guard lock(mu);
  CHECK(received == 1);
}

TEST_CASE("a stream the server cuts off before its end is an error that says so", "[http]") {
  auto stream = std::make_shared<ResponseStream>();
  ServerOptions options;
  options.port = 0;
  Server server(options, [stream](Request, Responder respond) {
    stream->Write("{\"n\":1}\n");
    Response r;
    r.stream = stream;
    respond(std::move(r));
  });
  REQUIRE(server.Start().ok());
  auto client = Client::Create("http://127.0.0.1:" + std::to_string(server.port()));
  REQUIRE(client.ok());
  std::string got;
  auto cut = (*client)->Stream("GET", "/watch", {}, milliseconds(10'000), [&](std::string_view data) {
    got.append(data);
    server.Stop(milliseconds(0));  // closes the stream without its last chunk
    return true;
  });
  CHECK(got == "{\"n\":1}\n");
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().code() == Code::kUnavailable);
  CHECK(cut.status().message().find("closed the stream before its end") != std::string::npos);
}

TEST_CASE("a TLS server closes a client that never shakes hands or speaks plain HTTP, and keeps serving",
          "[http][tls]") {
  auto certs = sim::MakeClusterCerts("client-test");
  REQUIRE(certs.ok());
  ServerOptions options;
  options.port = 0;
  options.handshake_timeout = milliseconds(200);
  options.tls = TlsServerOptions{certs->cert_pem, certs->key_pem};
  Server server(options, [](Request, Responder respond) { respond(TextResponse(200, "ok")); });
  REQUIRE(server.Start().ok());
  RawSocket silent(server.port());
  RawSocket plain(server.port());
  plain.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  auto start = steady_clock::now();
  CHECK(plain.Closed());   // not a TLS record: the handshake fails at once
  CHECK(silent.Closed());  // the handshake deadline
  CHECK(steady_clock::now() - start < milliseconds(4'000));
  auto res = Connect("https://127.0.0.1:" + std::to_string(server.port()), certs->ca_pem)->Do("GET", "/");
  REQUIRE(res.ok());
  CHECK(res->status == 200);
}

TEST_CASE("a TLS server with a broken certificate or key does not start, and says which", "[http][tls]") {
  auto certs = sim::MakeClusterCerts("client-test");
  REQUIRE(certs.ok());
  ServerOptions options;
  options.port = 0;
  options.tls = TlsServerOptions{"not a certificate", certs->key_pem};
  Status bad_cert = Server(options, [](Request, Responder) {}).Start();
  CHECK_FALSE(bad_cert.ok());
  CHECK(bad_cert.message().find("TLS certificate") != std::string::npos);
  options.tls = TlsServerOptions{certs->cert_pem, "not a key"};
  Status bad_key = Server(options, [](Request, Responder) {}).Start();
  CHECK_FALSE(bad_key.ok());
  CHECK(bad_key.message().find("TLS private key") != std::string::npos);
}

}  // namespace gantry::http
