#include <catch2/catch.hpp>

#include <poll.h>

#include <thread>

#include "gantry/common/stop_signal.h"

namespace gantry {
namespace {

// Whether fd is readable now (no wait).
bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

}  // namespace

TEST_CASE("a stop signal's fd becomes readable when set, and stays so", "[common]") {
  StopSignal stop;
  REQUIRE(stop.fd() >= 0);
  CHECK_FALSE(stop.is_set());
  CHECK_FALSE(Readable(stop.fd()));
  stop.Set();
  stop.Set();  // again: no change
  CHECK(stop.is_set());
  CHECK(Readable(stop.fd()));
  CHECK(Readable(stop.fd()));  // polling does not consume it
}

TEST_CASE("a stop signal set from another thread wakes a poll on its fd", "[common]") {
  StopSignal stop;
  REQUIRE(stop.fd() >= 0);
  std::thread setter([&] { stop.Set(); });
  pollfd p{stop.fd(), POLLIN, 0};
  int r = ::poll(&p, 1, 30'000);  // returns at the Set, long before this
  setter.join();
  CHECK(r == 1);
  CHECK(stop.is_set());
}

}  // namespace gantry
