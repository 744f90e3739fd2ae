// The HTTP server with the project's client over loopback: streaming
// responses, late answers from other threads, dropped responders, drain.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "gantry/http/client.h"
#include "gantry/http/server.h"
#include "test_support.h"

namespace gantry::http {
namespace {

std::unique_ptr<Client> ClientFor(const Server& server) {
  auto c = Client::Create("http://127.0.0.1:" + std::to_string(server.port()));
  REQUIRE(c.ok());
  return std::move(c.value());
}

}  // namespace

TEST_CASE("a streamed response arrives as chunks and ends with Finish", "[http]") {
  std::shared_ptr<ResponseStream> stream;
  std::atomic<bool> closed{false};
  std::thread producer;
  struct JoinAtExit {  // after the server stops, so a failed check cannot abort
    std::thread& t;
    ~JoinAtExit() { if (t.joinable()) t.join(); }
  } join_at_exit{producer};
  ServerOptions options;
  options.port = 0;
  Server server(options, [&](Request, Responder respond) {
    Response r;
    r.stream = std::make_shared<ResponseStream>();
    r.stream->SetOnClose([&] { closed = true; });
    stream = r.stream;
    respond(std::move(r));
    // Many pieces, so that some arrive while the server is writing earlier
    // ones: their wake-ups find no waiter and must not be lost.
    producer = std::thread([s = stream] {
      for (int i = 0; i < 500; ++i) s->Write("{\"n\":" + std::to_string(i) + "}\n");
      s->Finish();
    });
  });
  REQUIRE(server.Start().ok());
  auto res = ClientFor(server)->Do("GET", "/watch");
  REQUIRE(res.ok());
  CHECK(res->status == 200);
  CHECK(res->headers["transfer-encoding"] == "chunked");
  std::string expected;
  for (int i = 0; i < 500; ++i) expected += "{\"n\":" + std::to_string(i) + "}\n";
  CHECK(res->body == expected);
  producer.join();
  CHECK(testing::WaitFor([&] { return closed.load(); }));
  CHECK_FALSE(stream->Write("late"));
}

TEST_CASE("requests begun on several clients are all answered, in any order", "[http]") {
  ServerOptions options;
  options.port = 0;
  Server server(options, [](Request req, Responder respond) {
    respond(TextResponse(200, req.method + " " + req.path + " " + req.body));
  });
  REQUIRE(server.Start().ok());
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(ClientFor(server));
  for (int round = 0; round < 2; ++round) {  // the second round reuses the connections
    for (int i = 0; i < 3; ++i) {
      REQUIRE(clients[i]->Begin("POST", "/c" + std::to_string(i), "body" + std::to_string(round)).ok());
    }
    for (int i = 2; i >= 0; --i) {
      auto res = clients[i]->Finish();
      REQUIRE(res.ok());
      CHECK(res->status == 200);
      CHECK(res->body == "POST /c" + std::to_string(i) + " body" + std::to_string(round));
    }
  }
  auto nothing = clients[0]->Finish();
  REQUIRE_FALSE(nothing.ok());
  CHECK(nothing.status().code() == Code::kInternal);
  // A second Begin before the first's Finish: each Finish still gets the
  // answer of the request it follows.
  REQUIRE(clients[0]->Begin("POST", "/first", "a").ok());
  REQUIRE(clients[0]->Begin("POST", "/second", "b").ok());
  auto second = clients[0]->Finish();
  REQUIRE(second.ok());
  CHECK(second->body == "POST /second b");
}

TEST_CASE("answers of every size arrive whole, with their headers", "[http]") {
  ServerOptions options;
  options.port = 0;
  Server server(options, [](Request req, Responder respond) {
    Response r = TextResponse(200, std::string(std::stoul(req.path.substr(1)), 'x'));
    r.headers.emplace_back("X-Size", req.path.substr(1));
    r.headers.emplace_back("X-Bad", "a\r\nInjected: yes");  // a line break: left out
    respond(std::move(r));
  });
  REQUIRE(server.Start().ok());
  auto client = ClientFor(server);
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{16 << 10}, std::size_t{3 << 20}}) {
    INFO(size);
    auto res = client->Do("GET", "/" + std::to_string(size));
    REQUIRE(res.ok());
    CHECK(res->status == 200);
    CHECK(res->body == std::string(size, 'x'));
    CHECK(res->headers["x-size"] == std::to_string(size));
    CHECK(res->headers["content-type"] == "text/plain");
    CHECK(res->headers.count("x-bad") == 0);
    CHECK(res->headers.count("injected") == 0);
  }
}

TEST_CASE("a Begin that cannot connect leaves nothing to finish", "[http]") {
  std::string url;
  {
    ServerOptions options;
    options.port = 0;
    Server server(options, [](Request, Responder respond) { respond(TextResponse(200, "")); });
    REQUIRE(server.Start().ok());
    url = "http://127.0.0.1:" + std::to_string(server.port());
  }  // the listener is closed: nothing listens on that port now
  auto gone = Client::Create(url);
  REQUIRE(gone.ok());
  Status refused = (*gone)->Begin("GET", "/x");
  CHECK(refused.code() == Code::kUnavailable);
  CHECK((*gone)->Finish().status().code() == Code::kInternal);
}

TEST_CASE("a handler may answer later from another thread", "[http]") {
  std::vector<std::thread> threads;
  ServerOptions options;
  options.port = 0;
  Server server(options, [&](Request req, Responder respond) {
    threads.emplace_back([req = std::move(req), respond] {
      respond(TextResponse(200, "late:" + req.body));
    });
  });
  REQUIRE(server.Start().ok());
  auto client = ClientFor(server);
  for (int i = 0; i < 5; ++i) {
    auto res = client->Do("POST", "/x", std::to_string(i));
    REQUIRE(res.ok());
    CHECK(res->body == "late:" + std::to_string(i));
  }
  for (auto& t : threads) t.join();
}

TEST_CASE("Responsive tells a loop held by a handler from one that answers", "[http]") {
  ServerOptions options;
  options.port = 0;
  std::atomic<bool> entered{false}, release{false};
  Server server(options, [&](Request, Responder respond) {
    entered = true;  // on the loop thread: nothing else runs there meanwhile
    (void)testing::WaitFor([&] { return release.load(); }, std::chrono::seconds(20));  // no REQUIRE off the test's thread
    respond(TextResponse(200, "done"));
  });
  CHECK_FALSE(server.Responsive(std::chrono::milliseconds(100)));  // not started
  REQUIRE(server.Start().ok());
  CHECK(server.Responsive(std::chrono::seconds(5)));
  auto client = ClientFor(server);
  std::thread caller([&] { (void)client->Do("GET", "/slow"); });
  REQUIRE(testing::WaitFor([&] { return entered.load(); }, std::chrono::seconds(10)));
  CHECK_FALSE(server.Responsive(std::chrono::milliseconds(200)));
  release = true;
  caller.join();
  CHECK(server.Responsive(std::chrono::seconds(5)));
  server.Stop(std::chrono::milliseconds(0));
  CHECK_FALSE(server.Responsive(std::chrono::milliseconds(100)));
}

TEST_CASE("a dropped responder gets 500 instead of a hang", "[http]") {
  ServerOptions options;
  options.port = 0;
  Server server(options, [](Request, Responder) { /* forgets to answer */ });
  REQUIRE(server.Start().ok());
  auto res = ClientFor(server)->Do("GET", "/");
  REQUIRE(res.ok());
  CHECK(res->status == 500);
}

TEST_CASE("Stop lets an in-flight request finish within the drain time", "[http]") {
  std::atomic<bool> release{false};
  std::thread worker;
  ServerOptions options;
  options.port = 0;
  Server server(options, [&](Request, Responder respond) {
    worker = std::thread([&release, respond] {
      testing::WaitFor([&] { return release.load(); });
      respond(TextResponse(200, "done"));
    });
  });
  REQUIRE(server.Start().ok());
  std::atomic<int> status{0};
  std::thread caller([&] {
    auto res = ClientFor(server)->Do("GET", "/slow");
    status = res.ok() ? res->status : -1;
  });
  REQUIRE(testing::WaitFor([&] { return server.in_flight() == 1; }));
  std::thread stopper([&] { server.Stop(std::chrono::seconds(10)); });
  release = true;
  caller.join();
  stopper.join();
  worker.join();
  CHECK(status == 200);
}

TEST_CASE("listening on a bad address is an error value", "[http]") {
  ServerOptions options;
  options.address = "not-an-address";
  Server server(options, [](Request, Responder) {});
  auto s = server.Start();
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("not-an-address") != std::string::npos);
}

}  // namespace gantry::http
