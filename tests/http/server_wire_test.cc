// The HTTP server as a raw socket sees it: pipelined requests, 100-continue,
// HEAD, the idle deadline, a stream's reader hanging up, and Stop closing
// idle connections and streams at once.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "gantry/http/server.h"
#include "raw_socket.h"
#include "test_support.h"

namespace gantry::http {
namespace {

using namespace std::chrono_literals;

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// What is logged through the process's default logger meanwhile, as the
// daemon configures it (format, level); readable while another thread logs.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()), sink_(std::make_shared<Sink>()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string Text() const { return sink_->Text(); }

 private:
  class Sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string Text() {
      std::lock_guard lock(mutex_);
      return text_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      text_.append(msg.payload.data(), msg.payload.size()).push_back('\n');
    }
    void flush_() override {}

   private:
    std::string text_;
  };
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<Sink> sink_;
};

// A server with options on a free loopback port, started.
std::unique_ptr<Server> Started(Handler handler, ServerOptions options = {}) {
  options.port = 0;
  auto server = std::make_unique<Server>(options, std::move(handler));
  REQUIRE(server->Start().ok());
  return server;
}

// Answers /watch with `stream`, anything else with "ok".
Handler Streams(std::shared_ptr<ResponseStream> stream) {
  return [stream](Request req, Responder respond) {
    if (req.path != "/watch") return respond(TextResponse(200, "ok"));
    Response r;
    r.stream = stream;
    respond(std::move(r));
  };
}

// Answers with the request's method, path and body.
Handler Echo() {
  return [](Request req, Responder respond) {
    respond(TextResponse(200, req.method + " " + req.path + " " + req.body));
  };
}

}  // namespace

TEST_CASE("pipelined requests on one connection are answered in order", "[http][wire]") {
  auto server = Started(Echo());
  RawSocket raw(server->port());
  raw.Send(
      "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none"
      "GET /second HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = raw.ReadUntil([](const std::string& s) { return s.find("GET /second ") != std::string::npos; });
  CHECK(Count(got, "HTTP/1.1 200 OK") == 2);
  std::size_t first = got.find("POST /first one");
  std::size_t second = got.find("GET /second ");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(first < second);
}

TEST_CASE("a client that expects 100-continue gets it, then the answer", "[http][wire]") {
  auto server = Started(Echo());
  RawSocket raw(server->port());
  raw.Send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  std::string got = raw.ReadUntil([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
  CHECK(got.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  raw.Send("hello");
  got = raw.ReadUntil([](const std::string& s) { return s.find("POST /upload hello") != std::string::npos; });
  CHECK(got.find("HTTP/1.1 200 OK") != std::string::npos);
}

TEST_CASE("HEAD gets the headers and the length, but no body", "[http][wire]") {
  auto server = Started([](Request, Responder respond) { respond(TextResponse(200, "0123456789")); });
  RawSocket raw(server->port());
  raw.Send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = raw.ReadUntil([](const std::string& s) { return s.find("0123456789") != std::string::npos; });
  // Two heads, one body: the HEAD answer has none (else the body would
  // show twice or the second answer would be misread).
  // The HEAD answer's length is the GET's (RFC 9110 9.3.2).
  CHECK(Count(got, "HTTP/1.1 200 OK") == 2);
  CHECK(Count(got, "Content-Length: 10\r\n") == 2);
  CHECK(Count(got, "0123456789") == 1);
}

TEST_CASE("an idle keep-alive connection is closed at the idle deadline", "[http][wire]") {
  ServerOptions options;
  options.idle_timeout = 200ms;
  auto server = Started(Echo(), options);
  RawSocket raw(server->port());
  raw.Send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(raw.Got("GET /a"));
  auto start = std::chrono::steady_clock::now();
  CHECK(raw.Closed(5s));
  CHECK(std::chrono::steady_clock::now() - start < 4s);
}

TEST_CASE("a stream whose reader hangs up is abandoned without waiting for its next piece", "[http][wire]") {
  auto stream = std::make_shared<ResponseStream>();
  std::atomic<bool> abandoned{false};
  stream->SetOnClose([&] { abandoned = true; });
  auto server = Started(Streams(stream));
  {
    RawSocket raw(server->port());
    raw.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
    stream->Write("{\"n\":1}\n");
    std::string got = raw.ReadUntil([](const std::string& s) { return s.find("{\"n\":1}") != std::string::npos; });
    CHECK(got.find("Transfer-Encoding: chunked") != std::string::npos);
  }  // the reader hangs up
  CHECK(testing::WaitFor([&] { return abandoned.load(); }, 5s));
  CHECK_FALSE(stream->Write("{\"n\":2}\n"));
}

TEST_CASE("Stop closes idle connections and streams at once", "[http][wire]") {
  auto stream = std::make_shared<ResponseStream>();
  auto server = Started(Streams(stream));
  RawSocket idle(server->port());
  idle.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(idle.Got("ok"));
  RawSocket watcher(server->port());
  watcher.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(watcher.Got("chunked\r\n"));
  auto start = std::chrono::steady_clock::now();
  server->Stop(10s);  // nothing in flight: no drain wait
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK(idle.Closed(2s));
  CHECK(watcher.Closed(2s));
  CHECK(stream->closed());
}

TEST_CASE("at max_connections with every connection busy, a new one is closed at accept, and the others are served",
          "[http][wire]") {
  ServerOptions options;
  options.max_connections = 1;
  std::mutex mu;
  std::optional<Responder> held;
  auto server = Started(
      [&](Request req, Responder respond) {
        if (req.path != "/hold") return respond(TextResponse(200, req.method + " " + req.path));
        std::lock_guard lock(mu);
        held = std::move(respond);
      },
      options);
  RawSocket first(server->port());
  first.Send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(testing::WaitFor([&] { std::lock_guard lock(mu); return held.has_value(); }, 5s));
  RawSocket second(server->port());  // the kernel accepts it; the server closes it
  CHECK(second.Closed());
  {
    std::lock_guard lock(mu);
    (*held)(TextResponse(200, "held answer"));
  }
  CHECK(first.Got("held answer"));
  first.Send("GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(first.Got("GET /two"));
}

}  // namespace gantry::http

namespace gantry::http {

TEST_CASE("a chunk line or trailer with no end gets 400 once over the header limit, not buffered", "[http][wire]") {
  ServerOptions options;
  options.header_limit = 4 << 10;
  options.read_timeout = 60s;  // the refusal, not the deadline, must end it
  auto server = Started(Echo(), options);
  const std::string endless(3 * options.header_limit, 'a');
  for (const char* prefix : {"5;", "0\r\nX-Trailer: "}) {
    INFO(prefix);
    RawSocket raw(server->port());
    raw.Send("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(prefix) + endless);
    std::string got = raw.ReadUntil([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
    CHECK(got.rfind("HTTP/1.1 400", 0) == 0);
  }
  // A well-formed chunked body, with an extension and a trailer, still goes through.
  RawSocket raw(server->port());
  raw.Send("POST /y HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n");
  std::string got = raw.ReadUntil([](const std::string& s) { return s.find("POST /y abc") != std::string::npos; });
  CHECK(got.find("HTTP/1.1 200 OK") != std::string::npos);
}

TEST_CASE("a request line over the header limit gets 414, header fields over it 431, a missing Host or two "
          "Authorization fields 400",
          "[http][wire]") {
  ServerOptions options;
  options.header_limit = 4 << 10;
  auto server = Started(Echo(), options);
  auto status_of = [&](const std::string& request) {
    RawSocket raw(server->port());
    raw.Send(request);
    std::string got = raw.ReadUntil([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
    return got.substr(0, got.find("\r\n"));
  };
  const std::string long_text(2 * options.header_limit, 'a');
  CHECK(status_of("GET /" + long_text + " HTTP/1.1\r\nHost: x\r\n\r\n") == "HTTP/1.1 414 URI Too Long");
  CHECK(status_of("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + long_text + "\r\n\r\n") ==
        "HTTP/1.1 431 Request Header Fields Too Large");
  // Many small fields, over the limit together, read in one go (the
  // default limit, 64 KiB, the size of the server's reads).
  {
    auto roomy = Started(Echo());
    std::string fields;
    for (int i = 0; i < 2000; ++i) fields += fmt::format("X-Field-{}: {}\r\n", i, std::string(40, 'v'));
    RawSocket raw(roomy->port());
    (void)raw.TrySend("GET / HTTP/1.1\r\nHost: x\r\n" + fields + "\r\n");  // about 100 KB
    std::string got = raw.ReadUntil([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
    CHECK(got.substr(0, got.find("\r\n")) == "HTTP/1.1 431 Request Header Fields Too Large");
  }
  CHECK(status_of("GET / HTTP/1.1\r\n\r\n") == "HTTP/1.1 400 Bad Request");
  CHECK(status_of("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n") == "HTTP/1.1 400 Bad Request");
  // Two credentials: which one counts would be a guess.
  CHECK(status_of("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n") ==
        "HTTP/1.1 400 Bad Request");
  CHECK(status_of("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\n\r\n") == "HTTP/1.1 200 OK");
  // HTTP/1.0 has no Host to ask for; a request within the limits goes through.
  CHECK(status_of("GET / HTTP/1.0\r\n\r\n") == "HTTP/1.1 200 OK");
  CHECK(status_of("GET /" + std::string(1000, 'b') + " HTTP/1.1\r\nHost: x\r\n\r\n") == "HTTP/1.1 200 OK");
}

// A client that writes its whole body before reading (as gantry's CLI does)
// gets the 413, not a reset: the server reads and drops the rest.
TEST_CASE("a body over the limit gets 413 after the client wrote it whole, not a reset", "[http][wire]") {
  ServerOptions options;
  options.body_limit = 1024;
  auto server = Started(Echo(), options);
  for (bool declared : {true, false}) {
    INFO((declared ? "Content-Length" : "chunked"));
    RawSocket raw(server->port());
    const std::string body(16 << 20, 'x');
    const std::string head = declared ? fmt::format("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                                                    body.size())
                                      : "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                            fmt::format("{:x}\r\n", body.size());
    CHECK(raw.TrySend(head + body));
    std::string got = raw.ReadUntil([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
    CHECK(got.rfind("HTTP/1.1 413", 0) == 0);
    CHECK(got.find("Connection: close") != std::string::npos);
    CHECK(raw.Closed(10s));
  }
}

TEST_CASE("a request not received whole by the read deadline gets 408, then the connection closes", "[http][wire]") {
  ServerOptions options;
  options.read_timeout = 200ms;
  options.idle_timeout = 200ms;
  auto server = Started(Echo(), options);
  RawSocket raw(server->port());
  raw.Send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n");  // the head never ends
  std::string got = raw.ReadUntil([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
  CHECK(got.rfind("HTTP/1.1 408", 0) == 0);
  CHECK(raw.Closed(5s));
  // Silence before a first byte is no request: closed, with no 408.
  RawSocket quiet(server->port());
  CHECK(quiet.Closed(5s));
  CHECK(quiet.ReadUntil([](const std::string&) { return true; }).empty());
}

}  // namespace gantry::http

namespace gantry::http {

TEST_CASE("a Transfer-Encoding other than chunked gets 400 and a close, its body never read as a request",
          "[http][wire]") {
  std::atomic<int> handled{0};
  auto server = Started([&](Request req, Responder respond) {
    ++handled;
    respond(TextResponse(200, req.method + " " + req.path));
  });
  for (const char* coding : {"gzip", "chunked, chunked", "xchunked", "chunked, gzip"}) {
    INFO(coding);
    const int before = handled.load();
    RawSocket raw(server->port());
    // The "body" is a whole request: read as one, it would be answered.
    raw.Send(std::string("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ") + coding +
             "\r\n\r\nDELETE /smuggled HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(raw.Closed());
    std::string got = raw.ReadUntil([](const std::string&) { return true; });
    const bool twice = std::string_view(coding) == "chunked, chunked";
    CHECK(got.rfind(twice ? "HTTP/1.1 501" : "HTTP/1.1 400", 0) == 0);
    CHECK(got.find("Connection: close") != std::string::npos);
    CHECK(Count(got, "HTTP/1.1 ") == 1);
    CHECK(got.find("/smuggled") == std::string::npos);
    CHECK(handled.load() == before);
  }
  // chunked alone, in any case and spacing, is read as before.
  RawSocket raw(server->port());
  raw.Send("POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n2\r\nhi\r\n0\r\n\r\n");
  CHECK(raw.Got("POST /b"));
}

TEST_CASE("a chunked body's trailer fields are not taken as the request's headers", "[http][wire]") {
  auto server = Started([](Request req, Responder respond) {
    auto header = [&](const std::string& name) {
      auto it = req.headers.find(name);
      return it == req.headers.end() ? std::string("none") : it->second;
    };
    respond(TextResponse(200, "auth=" + header("authorization") + " type=" + header("content-type") +
                                  " body=" + req.body));
  });
  RawSocket raw(server->port());
  raw.Send(
      "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n0\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\n\r\n");
  CHECK(raw.Got("auth=none type=text/plain body=abc"));
  // Sent in pieces, the head apart from the body: the same.
  RawSocket slow(server->port());
  slow.Send("POST /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer head\r\nTransfer-Encoding: chunked\r\n\r\n");
  slow.Send("3\r\nxyz\r\n0\r\nAuthorization: Bearer trailer\r\n\r\n");
  CHECK(slow.Got("auth=Bearer head type=none body=xyz"));
}

TEST_CASE("at max_connections a new connection takes the place of the oldest that never sent a request",
          "[http][wire]") {
  ServerOptions options;
  options.max_connections = 3;
  auto server = Started(Echo(), options);
  RawSocket served(server->port());
  served.Send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(served.Got("GET /one"));
  RawSocket silent1(server->port());  // send nothing
  RawSocket silent2(server->port());
  // Accepted in the order they came: the fourth finds the three in place.
  RawSocket fourth(server->port());
  fourth.Send("GET /new HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(fourth.Got("GET /new"));
  CHECK(silent1.Closed(2s));
  // A client that sent requests keeps its connection over silent ones.
  served.Send("GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(served.Got("GET /two"));
  // The other silent one goes next; then, with none left, the oldest kept-alive one.
  RawSocket fifth(server->port());
  fifth.Send("GET /fifth HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(fifth.Got("GET /fifth"));
  CHECK(silent2.Closed(2s));
  RawSocket sixth(server->port());
  sixth.Send("GET /sixth HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(sixth.Got("GET /sixth"));
  CHECK(served.Closed(2s));
}

TEST_CASE("the server's warnings go through the process's logger, as the daemon set it up, not one of their own",
          "[http][wire]") {
  // Built against spdlog's header-only form, this library had a logger of
  // its own: its lines ignored --log-format json and --log-level.
  LogCapture log;
  ServerOptions options;
  options.max_connections = 1;
  auto server = Started(Echo(), options);
  RawSocket silent(server->port());  // sends nothing
  RawSocket next(server->port());
  next.Send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(next.Got("GET /next"));
  CHECK(silent.Closed(2s));
  CHECK(testing::WaitFor([&] { return log.Text().find("connections open (maxConnections)") != std::string::npos; }));
}

TEST_CASE("a new connection that sends nothing is closed at the read deadline, not the idle one", "[http][wire]") {
  ServerOptions options;
  options.read_timeout = 200ms;
  options.idle_timeout = 60s;
  auto server = Started(Echo(), options);
  RawSocket quiet(server->port());
  auto start = std::chrono::steady_clock::now();
  CHECK(quiet.Closed(5s));
  CHECK(std::chrono::steady_clock::now() - start < 4s);
}

}  // namespace gantry::http
