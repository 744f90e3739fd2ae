// The daemon's open-file arithmetic and its soft limit.
#include "gantry/daemon/open_files.h"

#include <sys/resource.h>

#include <catch2/catch.hpp>

namespace gantry {

TEST_CASE("OpenFilesWanted counts connections, lists and watches, and the prober per cluster, plus a margin",
          "[daemon][open_files]") {
  CHECK(OpenFilesWanted(0, 16, 3) == 256);
  CHECK(OpenFilesWanted(1, 16, 3) == 256 + 16 + 6 + 1);
  // 16 connections each at forty clusters pass systemd's and most shells' soft limit of 1,024.
  CHECK(OpenFilesWanted(40, 16, 3) == 1176);
  CHECK(OpenFilesWanted(1000, 16, 4) == 25256);
  CHECK(OpenFilesWanted(2, -1, 3) == 256 + 14);  // a nonsense count counts as none
}

TEST_CASE("WarnIfOpenFilesShort warns only when a known limit is below the need", "[daemon][open_files]") {
  CHECK(WarnIfOpenFilesShort(1024, 1176, 40));
  CHECK_FALSE(WarnIfOpenFilesShort(1176, 1176, 40));
  CHECK_FALSE(WarnIfOpenFilesShort(65536, 1176, 40));
  CHECK_FALSE(WarnIfOpenFilesShort(0, 1176, 40));  // unknown
}

TEST_CASE("RaiseOpenFileLimit lifts the soft limit to the hard one", "[daemon][open_files]") {
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
  rlimit lowered = before;
  lowered.rlim_cur = std::min<rlim_t>(before.rlim_max, 256);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  const uint64_t now = RaiseOpenFileLimit();
  rlimit after{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &after) == 0);
  CHECK(after.rlim_cur == before.rlim_max);
  CHECK(now == (after.rlim_cur == RLIM_INFINITY ? UINT64_MAX : after.rlim_cur));
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &before) == 0);
}

}  // namespace gantry
