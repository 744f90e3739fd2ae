// The client's connection (src/http/connection.cc, resolve.cc) as it opens:
// the name lookup under the connect deadline.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>

#include "connection.h"
#include "resolve.h"
#include "test_support.h"

namespace gantry::http {
namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;

}  // namespace

TEST_CASE("an IP literal resolves with no lookup, even with no time left", "[http][dial]") {
  for (const char* host : {"127.0.0.1", "::1"}) {
    INFO(host);
    auto addrs = Resolve(host, "6443", steady_clock::now() - 1s);
    REQUIRE(addrs.ok());
    REQUIRE(addrs->get() != nullptr);
    CHECK(addrs->get()->ai_family == (std::string(host) == "::1" ? AF_INET6 : AF_INET));
  }
}

TEST_CASE("a name is looked up before the deadline", "[http][dial]") {
  auto addrs = Resolve("localhost", "80", steady_clock::now() + 10s);  // /etc/hosts: no query leaves the machine
  REQUIRE(addrs.ok());
  REQUIRE(addrs->get() != nullptr);
  CHECK(addrs->get()->ai_socktype == SOCK_STREAM);
}

TEST_CASE("a host name whose lookup hangs fails at the connect deadline", "[http][dial]") {
  // glibc's resolver reads the file HOSTALIASES names (hostname(7)) to look
  // up a name with no dot in it: a FIFO there with no writer holds the
  // lookup in its open.
  testing::TempDir dir;
  const std::string aliases = dir.File("aliases");
  REQUIRE(::mkfifo(aliases.c_str(), 0600) == 0);
  REQUIRE(::setenv("HOSTALIASES", aliases.c_str(), 1) == 0);
  const auto start = steady_clock::now();
  auto opened = std::async(std::launch::async, [start] {
    return Connection::Open("gantry-hung-lookup", "80", nullptr, start + 300ms);
  });
  // Looked up with getaddrinfo, as before, Open waited as long as the lookup.
  const bool returned = opened.wait_for(10s) == std::future_status::ready;
  const auto took = steady_clock::now() - start;
  // A writer opens without blocking only while a reader waits, so this
  // tells that the lookup was held; and it lets the lookup go on (to an
  // empty file), so it ends.
  int writer = -1;
  const bool held = testing::WaitFor(
      [&] { return (writer = ::open(aliases.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0; }, 5s);
  if (writer >= 0) ::close(writer);
  ::unsetenv("HOSTALIASES");
  auto conn = opened.get();
  if (!held) {
    WARN("the lookup never opened HOSTALIASES (not glibc's resolver?): nothing held it to test");
    return;
  }
  CHECK(returned);
  CHECK(took < 5s);
  REQUIRE_FALSE(conn.ok());
  CHECK(conn.status().code() == Code::kUnavailable);
  CHECK_THAT(conn.status().message(),
             Catch::Contains("resolve gantry-hung-lookup: no answer before the deadline"));
}

}  // namespace gantry::http
