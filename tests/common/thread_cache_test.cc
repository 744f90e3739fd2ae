#include <catch2/catch.hpp>
#include <jemalloc/jemalloc.h>

#include <thread>

#include "gantry/common/thread_cache.h"

namespace gantry {
namespace {

// Whether the calling thread has its own jemalloc cache.
bool CacheEnabled() {
  bool enabled = false;
  std::size_t size = sizeof(enabled);
  REQUIRE(mallctl("thread.tcache.enabled", &enabled, &size, nullptr, 0) == 0);
  return enabled;
}

}  // namespace

// common_test links jemalloc, as the gantry binary does.
TEST_CASE("a thread that forgoes its allocator cache loses it and the others keep theirs", "[common]") {
  REQUIRE(CacheEnabled());
  bool forgone = false, after = true;
  std::thread sleeper([&] {
    forgone = ForgoThreadCache();
    after = CacheEnabled();
    delete new int(7);  // still allocates, from the shared arenas
  });
  sleeper.join();
  CHECK(forgone);
  CHECK_FALSE(after);
  CHECK(CacheEnabled());
}

}  // namespace gantry
