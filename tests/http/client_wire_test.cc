// The client as a server sees it, over plain HTTP on loopback: the Host
// header it sends.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

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

}  // namespace

TEST_CASE("HostPort puts an IPv6 address in brackets, and nothing else", "[http]") {
  CHECK(HostPort("example.com", "443") == "example.com:443");
  CHECK(HostPort("10.0.0.1", "6443") == "10.0.0.1:6443");
  CHECK(HostPort("::1", "6443") == "[::1]:6443");
  CHECK(HostPort("fd00::2", "80") == "[fd00::2]:80");
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

}  // namespace gantry::http
