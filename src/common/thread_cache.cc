#include "gantry/common/thread_cache.h"

#include <cstddef>

// jemalloc's control interface, bound only when jemalloc is linked into the
// process: a weak reference stays null otherwise, so this library does not
// depend on the allocator the binary chose.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp,
                       std::size_t newlen) __attribute__((weak));

namespace gantry {

bool ForgoThreadCache() {
  if (mallctl == nullptr) return false;
  bool enabled = false;
  return mallctl("thread.tcache.enabled", nullptr, nullptr, &enabled, sizeof(enabled)) == 0;
}

}  // namespace gantry
