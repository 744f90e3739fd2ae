#include "gantry/daemon/open_files.h"

#include <sys/resource.h>

#include <spdlog/spdlog.h>

namespace gantry {
namespace {

constexpr uint64_t kMargin = 256;  // the store and its WAL, logs, the API's clients, the systemd socket

}  // namespace

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    // Refused (a seccomp filter without @resources, say): the soft limit stays.
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

uint64_t OpenFilesWanted(std::size_t clusters, int connections_per_cluster, std::size_t watched_kinds) {
  // A watched kind's thread keeps two connections: its lists' and its watch's.
  const uint64_t per_cluster = static_cast<uint64_t>(connections_per_cluster > 0 ? connections_per_cluster : 0) +
                               2 * watched_kinds + 1;
  return static_cast<uint64_t>(clusters) * per_cluster + kMargin;
}

bool WarnIfOpenFilesShort(uint64_t limit, uint64_t wanted, std::size_t clusters) {
  if (limit == 0 || limit >= wanted) return false;
  spdlog::warn("open files: the limit is {}, and {} cluster(s) may use {} at once (clusterConnections, a list and a "
               "watch per kind, and the prober per cluster); requests past it fail. Raise LimitNOFILE in the systemd unit or "
               "`ulimit -n`, or lower clusterConnections",
               limit, clusters, wanted);
  return true;
}

}  // namespace gantry
