// The daemon's open files: a socket per connection to a cluster (up to
// clusterConnections each), two per watched kind per cluster (its lists'
// connection and its watch's) and the prober's, on top of the store and
// the API's clients.
// systemd and most shells start a process with a soft limit of 1,024, which
// a fleet of about 35 clusters at the default settings would pass (1,024 - 256
// over 16 + 2 x 3 + 1 a cluster); the
// hard limit is usually far higher. So the daemon raises its soft limit to
// the hard one at start (as Go's runtime does for every program), and says
// so in the log when even that is short of what its fleet may use.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gantry {

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit
// in force afterwards (0 when it cannot be read).
uint64_t RaiseOpenFileLimit();

// Open files `clusters` clusters may hold at once: per cluster, its
// connections, two per watched kind and the prober's connection;
// plus a margin for the store, logs and the API's clients.
uint64_t OpenFilesWanted(std::size_t clusters, int connections_per_cluster, std::size_t watched_kinds);

// Logs a warning naming both figures when limit < wanted (and limit > 0);
// returns whether it did.
bool WarnIfOpenFilesShort(uint64_t limit, uint64_t wanted, std::size_t clusters);

}  // namespace gantry
