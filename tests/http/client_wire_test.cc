// The client as a server sees it, over plain HTTP on loopback: the Host
// header it sends, and how much of a stream's error answer it reads.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gantry/http/client.h"
#include "gantry/http/message.h"
#include "gantry/http/server.h"

namespace gantry::http {
namespace {

// A server on address (a free port) that answers with the request's Host
// header; nullptr when address cannot be listened on.
std::unique_ptr<Server> HostEcho(const std::string& address) {
  ServerOptions options;
  options.address = address;
  options.port = 0;
  auto server = std::make_unique<Server>(
      options, [](Request req, Responder respond) { respond(TextResponse(200, req.Header("host"))); });
  if (!server->Start().ok()) return nullptr;
  return server;
}

// Binds fd to a free loopback port and listens; the port.
uint16_t ListenOnLoopback(int fd) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  return ntohs(addr.sin_port);
}

// A server on a free loopback port that answers its one request with a 500
// whose chunked body does not end: 16 KiB chunks until the client hangs up,
// kMaxChunks (16 MiB), or kGiveUp.
class EndlessErrorServer {
 public:
  static constexpr int kMaxChunks = 1024;
  static constexpr auto kGiveUp = std::chrono::seconds(30);

  EndlessErrorServer() : listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    port_ = ListenOnLoopback(listener_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~EndlessErrorServer() {
    Join();
    ::close(listener_);
  }
  uint16_t port() const { return port_; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // After Join: chunks sent, and whether a send found the client gone.
  int chunks() const { return chunks_; }
  bool hung_up() const { return hung_up_; }

 private:
  void Serve() {
    const auto give_up = std::chrono::steady_clock::now() + kGiveUp;
    auto left_ms = [&] {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
      return static_cast<int>(std::max<int64_t>(left.count(), 0));
    };
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, left_ms()) != 1) return;
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    timeval send_timeout{5, 0};  // a client that stops reading without closing
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      pollfd r{fd, POLLIN, 0};
      if (::poll(&r, 1, left_ms()) != 1) break;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    auto send = [&](const std::string& text) {
      return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
    };
    bool sent = send(
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "4000\r\n" + std::string(16 << 10, 'e') + "\r\n";
    while (sent && chunks_ < kMaxChunks && left_ms() > 0) {
      sent = send(chunk);
      if (sent) ++chunks_;
    }
    hung_up_ = !sent;
    // Still there: wait for the client to go (or kGiveUp) without ending the body.
    pollfd r{fd, POLLIN, 0};
    while (!hung_up_ && ::poll(&r, 1, left_ms()) == 1 && ::recv(fd, buf, sizeof buf, 0) > 0) {
    }
    ::close(fd);
  }

  int listener_;
  uint16_t port_ = 0;
  std::atomic<int> chunks_{0};
  std::atomic<bool> hung_up_{false};
  std::thread thread_;
};


// A server on a free loopback port whose first connection answers a GET,
// then reads the next request whole and closes without answering it (as a
// server that stops after doing what was asked); its second connection
// answers the request, sent again, 403. posts(): the POSTs it read.
class ClosesBeforeAnswering {
 public:
  ClosesBeforeAnswering() : listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    port_ = ListenOnLoopback(listener_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ClosesBeforeAnswering() {
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  uint16_t port() const { return port_; }
  int posts() const { return posts_; }

 private:
  static constexpr int kWaitMs = 10'000;
  // Reads one request whole (its headers, and a body of Content-Length).
  static std::string ReadRequest(int fd, std::string& buffered) {
    char buf[4096];
    for (;;) {
      const size_t end = buffered.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        const size_t at = buffered.find("Content-Length: ");
        if (at != std::string::npos && at < end) length = std::stoul(buffered.substr(at + 16));
        if (buffered.size() >= end + 4 + length) {
          std::string request = buffered.substr(0, end + 4 + length);
          buffered.erase(0, end + 4 + length);
          return request;
        }
      }
      pollfd r{fd, POLLIN, 0};
      if (::poll(&r, 1, kWaitMs) != 1) return "";
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return "";
      buffered.append(buf, static_cast<size_t>(n));
    }
  }
  int Accept() {
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, kWaitMs) != 1) return -1;
    return ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
  }
  void Serve() {
    auto send = [](int fd, const std::string& text) {
      (void)::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    };
    std::string buffered;
    const int first = Accept();
    if (first < 0) return;
    if (ReadRequest(first, buffered).rfind("GET ", 0) == 0) {
      send(first, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
    if (ReadRequest(first, buffered).rfind("POST ", 0) == 0) ++posts_;
    ::close(first);  // no answer
    const int second = Accept();
    if (second < 0) return;
    buffered.clear();
    if (ReadRequest(second, buffered).rfind("POST ", 0) == 0) ++posts_;
    send(second, "HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden");
    ReadRequest(second, buffered);  // until the client closes
    ::close(second);
  }

  int listener_;
  uint16_t port_ = 0;
  std::atomic<int> posts_{0};
  std::thread thread_;
};
}  // namespace

TEST_CASE("HostPort puts an IPv6 address in brackets, and nothing else", "[http]") {
  CHECK(HostPort("example.com", "443") == "example.com:443");
  CHECK(HostPort("10.0.0.1", "6443") == "10.0.0.1:6443");
  CHECK(HostPort("::1", "6443") == "[::1]:6443");
  CHECK(HostPort("fd00::2", "80") == "[fd00::2]:80");
}

TEST_CASE("a request whose target or header would break its line is not sent", "[http]") {
  std::atomic<int> seen{0};
  ServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  Server server(options, [&](Request, Responder respond) {
    seen.fetch_add(1);
    respond(TextResponse(200, "ok"));
  });
  REQUIRE(server.Start().ok());
  auto client = Client::Create("http://127.0.0.1:" + std::to_string(server.port()));
  REQUIRE(client.ok());
  auto target = (*client)->Do("GET", "/p\r\nX-Extra: 1");
  REQUIRE_FALSE(target.ok());
  CHECK(target.status().code() == Code::kInvalidArgument);
  CHECK(target.status().message() == "GET request not sent: the request target holds a space or a control character");
  auto header = (*client)->Do("GET", "/", "", {{"Authorization", "Bearer abc\r\nImpersonate-User: admin"}});
  REQUIRE_FALSE(header.ok());
  CHECK(header.status().message() == "GET request not sent: header Authorization holds a line break or NUL");
  auto streamed = (*client)->Stream("GET", "/w\n", {}, std::chrono::seconds(1), [](std::string_view) { return true; });
  CHECK_FALSE(streamed.ok());
  auto fine = (*client)->Do("GET", "/fine");  // the client is as good as before
  REQUIRE(fine.ok());
  CHECK(fine->status == 200);
  CHECK(seen == 1);
}

TEST_CASE("the Host header of a request to an IPv6 server has the address in brackets", "[http][ipv6]") {
  for (const std::string address : {"127.0.0.1", "::1"}) {
    INFO(address);
    auto server = HostEcho(address);
    if (!server) {
      WARN("no " << address << " on this machine: HostPort's own test covers the header");
      continue;
    }
    const std::string authority = HostPort(address, std::to_string(server->port()));
    auto client = Client::Create("http://" + authority);
    REQUIRE(client.ok());
    auto res = (*client)->Do("GET", "/");
    REQUIRE(res.ok());
    CHECK(res->status == 200);
    CHECK(res->body == authority);  // "[::1]:port", not "::1:port"
  }
}

TEST_CASE("a stream's error answer is kept up to its limit, and the rest is not read", "[http][stream]") {
  EndlessErrorServer server;
  auto client = Client::Create("http://127.0.0.1:" + std::to_string(server.port()));
  REQUIRE(client.ok());
  bool streamed = false;
  const auto start = std::chrono::steady_clock::now();
  auto res = (*client)->Stream("GET", "/watch?watch=true", {}, std::chrono::seconds(10), [&](std::string_view) {
    streamed = true;
    return true;
  });
  const auto took = std::chrono::steady_clock::now() - start;
  server.Join();
  // Read whole, as before, it took all 16 MiB, then waited out the idle
  // deadline for an end that never came.
  REQUIRE(res.ok());
  CHECK(res->status == 500);
  CHECK(res->body.size() == kStreamErrorBodyLimit);
  CHECK(res->body.find_first_not_of('e') == std::string::npos);
  CHECK(res->body_cut);
  CHECK_FALSE(streamed);
  CHECK(took < std::chrono::seconds(5));
  CHECK(server.hung_up());  // the client closed the connection, with the body unread
  CHECK(server.chunks() < EndlessErrorServer::kMaxChunks);
}

TEST_CASE("an answer to a request sent again after its kept-alive connection closed unanswered says so",
          "[http]") {
  ClosesBeforeAnswering server;
  {
    auto client = Client::Create("http://127.0.0.1:" + std::to_string(server.port()));
    REQUIRE(client.ok());
    auto first = (*client)->Do("GET", "/ready");
    REQUIRE(first.ok());
    CHECK(first->status == 200);
    CHECK_FALSE(first->resent);
    // Written whole on the kept-alive connection, which then closed: sent
    // again on a new one, whose 403 does not show the first was not done.
    auto post = (*client)->Do("POST", "/objects", "abc");
    REQUIRE(post.ok());
    CHECK(post->status == 403);
    CHECK(post->resent);
  }
  CHECK(server.posts() == 2);
}

TEST_CASE("a server URL's port is a number from 1 to 65535: 99999 is refused, not taken for 34463", "[http]") {
  for (const char* url :
       {"http://127.0.0.1:99999", "http://127.0.0.1:0", "https://127.0.0.1:http", "http://[::1]:-1"}) {
    INFO(url);
    auto client = Client::Create(url);
    REQUIRE_FALSE(client.ok());
    CHECK_THAT(client.status().message(), Catch::Contains("is not a number from 1 to 65535"));
  }
  CHECK(Client::Create("http://127.0.0.1:65535").ok());
  CHECK(Client::Create("https://example.invalid").ok());  // 443
}

}  // namespace gantry::http
