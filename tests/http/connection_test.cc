// The client's connection (src/http/connection.cc, resolve.cc) as it opens:
// the name lookup under the connect deadline, and the deadline spread over
// the addresses a name has.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "connection.h"
#include "gantry/common/stop_signal.h"
#include "resolve.h"
#include "test_support.h"

namespace gantry::http {
namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;

// A listening socket on a free loopback port (listen_backlog as given).
class Listener {
 public:
  explicit Listener(int listen_backlog) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(::listen(fd_, listen_backlog) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
};

// An address that drops connection attempts, as one behind a firewall
// does: a listener whose accept queue (of one) is full, so the kernel drops
// every further SYN and a connect there waits until its deadline.
class Blackhole {
 public:
  Blackhole() : listener_(0), filler_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(listener_.port());
    REQUIRE(::connect(filler_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);  // never accepted
  }
  ~Blackhole() { ::close(filler_); }
  uint16_t port() const { return listener_.port(); }

 private:
  Listener listener_;
  int filler_;
};

// getaddrinfo's list for 127.0.0.1 at each of ports, in that order.
class Addresses {
 public:
  explicit Addresses(std::vector<uint16_t> ports) : sockaddrs_(ports.size()), infos_(ports.size()) {
    for (std::size_t i = 0; i < ports.size(); ++i) {
      sockaddrs_[i].sin_family = AF_INET;
      sockaddrs_[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      sockaddrs_[i].sin_port = htons(ports[i]);
      infos_[i].ai_family = AF_INET;
      infos_[i].ai_socktype = SOCK_STREAM;
      infos_[i].ai_protocol = IPPROTO_TCP;
      infos_[i].ai_addrlen = sizeof(sockaddr_in);
      infos_[i].ai_addr = reinterpret_cast<sockaddr*>(&sockaddrs_[i]);
      infos_[i].ai_next = i + 1 < ports.size() ? &infos_[i + 1] : nullptr;
    }
  }
  const addrinfo* get() const { return infos_.data(); }

 private:
  std::vector<sockaddr_in> sockaddrs_;
  std::vector<addrinfo> infos_;
};

}  // namespace

TEST_CASE("each address gets its share of the connect deadline, as Go's dialer gives it", "[http][dial]") {
  using Clock = Connection::Clock;
  const Clock::time_point now{std::chrono::hours(1)};
  struct Case {
    Clock::duration left;
    int addresses;
    Clock::duration given;
  };
  const Case cases[] = {
      {10s, 1, 10s},     // one address: all of it
      {10s, 2, 5s},      // shared evenly
      {10s, 4, 2500ms},  //
      {10s, 10, 2s},     // no less than the least
      {3s, 2, 2s},       //
      {1s, 3, 1s},       // never past the deadline
      {0s, 2, 0s},       // passed: the deadline itself
      {-1s, 2, -1s},     //
  };
  for (const Case& c : cases) {
    INFO(std::chrono::duration<double>(c.left).count() << " s left, " << c.addresses << " addresses");
    CHECK(Connection::AddressDeadline(now, now + c.left, c.addresses) - now == c.given);
  }
  CHECK(Connection::AddressDeadline(now, Clock::time_point::max(), 2) == Clock::time_point::max());
}

TEST_CASE("an address that drops connection attempts leaves time for the next one", "[http][dial]") {
  Blackhole blackhole;
  Listener listener(16);
  SECTION("alone, it has the whole deadline, and fails at it") {
    Addresses addrs({blackhole.port()});
    auto conn = Connection::Dial(addrs.get(), "127.0.0.1", std::to_string(blackhole.port()), nullptr,
                                 steady_clock::now() + 300ms);
    REQUIRE_FALSE(conn.ok());
    CHECK(conn.status().code() == Code::kDeadlineExceeded);  // no answer in time, not a refusal
    CHECK_THAT(conn.status().message(), Catch::Contains("connect to 127.0.0.1:") && Catch::Contains("timeout"));
  }
  SECTION("first of two, it has half the deadline, and the second answers") {
    // With one deadline for every address, as before, the first took it all.
    Addresses addrs({blackhole.port(), listener.port()});
    const auto start = steady_clock::now();
    auto conn = Connection::Dial(addrs.get(), "localhost", std::to_string(listener.port()), nullptr, start + 4s);
    CHECK(conn.ok());
    CHECK(steady_clock::now() - start < 4s);
  }
  SECTION("when none answers, the error says what each address did") {
    uint16_t closed = 0;
    {
      Listener gone(1);
      closed = gone.port();
    }  // nothing listens there now: refused
    Addresses addrs({closed, blackhole.port()});
    auto conn = Connection::Dial(addrs.get(), "localhost", "6443", nullptr, steady_clock::now() + 300ms);
    REQUIRE_FALSE(conn.ok());
    INFO(conn.status().message());
    CHECK_THAT(conn.status().message(), Catch::StartsWith("connect to localhost:6443: 127.0.0.1: ") &&
                                            Catch::Contains("refused; 127.0.0.1: ") && Catch::Contains("timeout"));
  }
}

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
  // tells that the lookup was held. The writer is left open for the life of
  // the test process: the lookup then waits on in its read, and never goes
  // on to ask the machine's name server (no DNS query leaves the machine);
  // the process's exit ends it.
  int writer = -1;
  const bool held = testing::WaitFor(
      [&] { return (writer = ::open(aliases.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0; }, 5s);
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

TEST_CASE("a host name whose lookup hangs is given up when the stop comes, long before the deadline", "[http][dial]") {
  // Held as in the test above, the lookup's deadline a minute away.
  testing::TempDir dir;
  const std::string aliases = dir.File("aliases");
  REQUIRE(::mkfifo(aliases.c_str(), 0600) == 0);
  REQUIRE(::setenv("HOSTALIASES", aliases.c_str(), 1) == 0);
  StopSignal stop;
  auto opened = std::async(std::launch::async, [&stop] {
    return Connection::Open("gantry-hung-lookup-two", "80", nullptr, steady_clock::now() + 60s, "", "", stop.fd());
  });
  int writer = -1;
  const bool held = testing::WaitFor(
      [&] { return (writer = ::open(aliases.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0; }, 5s);
  ::unsetenv("HOSTALIASES");
  const auto stopped_at = steady_clock::now();
  stop.Set();
  const bool returned = opened.wait_for(10s) == std::future_status::ready;
  const auto took = steady_clock::now() - stopped_at;
  REQUIRE(returned);
  auto conn = opened.get();
  if (!held) {
    WARN("the lookup never opened HOSTALIASES (not glibc's resolver?): nothing held it to test");
    return;
  }
  CHECK(took < 2s);
  REQUIRE_FALSE(conn.ok());
  CHECK_THAT(conn.status().message(), Catch::Contains("resolve gantry-hung-lookup-two: given up: stopping"));
}

}  // namespace gantry::http
