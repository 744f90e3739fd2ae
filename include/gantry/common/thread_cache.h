// Allocator settings for the calling thread.
//
// The gantry binary runs on jemalloc (see src/CMakeLists.txt), which gives
// every thread its own cache of freed blocks: fast for threads that allocate
// all the time, but each cache holds on to its memory while its thread sleeps.
// The observer keeps one thread per watched resource and cluster, mostly
// asleep; at 100 idle clusters their caches were a third of the daemon's
// resident memory (measured: 120 MiB with them, 78 MiB without).
//
// Thread-safety: affects the calling thread only.
#pragma once

namespace gantry {

// The calling thread allocates from the shared arenas, without a cache of
// its own. For threads that sleep most of the time. A no-op in processes
// without jemalloc (most test binaries); returns whether the cache was
// turned off.
bool ForgoThreadCache();

}  // namespace gantry
