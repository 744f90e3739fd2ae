// Fleet::HoldSameServer: two entries of the inventory that reach one API
// server (a kubeconfig copied into another cluster's file, an entry copied
// under a new name) would each watch the other's objects, take them for
// strays of its own, and delete them: every job there evicted and run again
// in a loop, at-most-once jobs failed, and runs in a cluster their
// constraints exclude. The entry that already reached that server keeps it;
// the others are held as a refused file's cluster is (not probed, nothing
// new goes there, the jobs they own left as they are) until one of them
// changes, and the load says why.
//
// Fleet::HoldIfSameCluster: the same, found by what the cluster says it is
// (its kube-system Namespace's uid, read at each probe) when two entries
// spell its address differently (an IP and a DNS name, a load balancer and
// a node): the later one to read it is held, at that probe, before it was
// ever Ready.
//
// Fleet::HoldIfOtherCluster: one entry whose kubeconfig now reaches another
// cluster than the one it reached (a path edited to another cluster's, two
// paths swapped, a DNS name moved): held at the first probe that reads the
// other identity.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "gantry/common/ascii.h"
#include "gantry/inventory/fleet.h"
#include "server_url.h"

namespace gantry::inventory {

// One API server, whatever spelling its URL has: host (in lower case),
// port (443 when not given) and path prefix, and the TLS server name asked
// for: a gateway that serves many clusters on one address tells them apart
// by it (or by the path).
std::string Fleet::ServerKey(const ClusterCredentials& creds) {
  auto address = internal::ParseServerUrl(creds.server);
  if (!address.ok()) return creds.server + " " + ToLowerAscii(creds.tls_server_name);
  return fmt::format("{}:{}{} {}", ToLowerAscii(address->host), address->port, address->base_path,
                     ToLowerAscii(creds.tls_server_name));
}

void Fleet::HoldSameServer(std::map<std::string, Entry>& next, std::vector<ClusterFileError>& errors) const {
  std::map<std::string, std::vector<std::string>> by_server;  // ServerKey -> entries reaching it, by name
  for (const auto& [name, e] : next) {
    if (e.creds && e.view.config_error.empty()) by_server[ServerKey(*e.creds)].push_back(name);
  }
  for (const auto& [server, names] : by_server) {
    if (names.size() < 2) continue;
    // The one entry that reached this server before the load keeps it; with
    // none, or more than one, every one is held.
    std::vector<std::string> had;
    for (const std::string& name : names) {
      const Entry old = Existing(name);
      if (old.creds && old.view.config_error.empty() && ServerKey(*old.creds) == server) had.push_back(name);
    }
    const std::string keeper = had.size() == 1 ? had.front() : "";
    for (const std::string& name : names) {
      if (name == keeper) continue;
      std::vector<std::string> others;
      std::copy_if(names.begin(), names.end(), std::back_inserter(others),
                   [&](const std::string& n) { return n != name; });
      const std::string file = next.at(name).view.config.source_file;
      const std::string why = fmt::format(
          "{}: its kubeconfig reaches the API server {}, as that of cluster {} does: two entries for one cluster "
          "would each take the other's objects for strays and delete them, so this one is {}; give each cluster "
          "its own kubeconfig, or remove this entry",
          std::filesystem::path(file).filename().string(), next.at(name).creds->server, fmt::join(others, ", "),
          keeper.empty() ? "held, as each of them is" : "held and " + keeper + " kept");
      errors.push_back({file, Status::Invalid(why), false});
      next[name] = Held(ClusterPlaceholder{name, file, Status::Invalid(why)});
    }
  }
}

bool Fleet::HoldIfSameCluster(const std::string& name, Entry& e, const std::string& cluster_id) {
  std::string other;
  for (const auto& [n, o] : entries_) {
    if (n != name && o.view.Usable() && o.view.cluster_id == cluster_id) {
      other = n;
      break;
    }
  }
  if (other.empty()) return false;
  // Held as a refused file is, until a reload finds it alone: never Ready,
  // so nothing was sent through it. Its health stays as it was.
  const std::string file = std::filesystem::path(e.view.config.source_file).filename().string();
  e.view.config_error = fmt::format(
      "{}: it reaches the cluster that cluster {} reaches (its kube-system Namespace has uid {} there too), by "
      "another address ({}): two entries for one cluster would each take the other's objects for strays and delete "
      "them, so this one is held and {} kept; remove this entry, then reload",
      file, other, cluster_id, e.creds ? e.creds->server : "?", other);
  spdlog::error("inventory: cluster {} is held: {}", name, e.view.config_error);
  e.reprobe = false;
  e.next_probe_ms = clock_.MonotonicMillis() + options_.probe_interval_ms;
  generation_.fetch_add(1, std::memory_order_release);
  return true;
}

bool Fleet::HoldIfOtherCluster(const std::string& name, Entry& e, const std::string& cluster_id) {
  if (e.view.cluster_id.empty() || e.view.cluster_id == cluster_id) return false;
  // Its kubeconfig (or the address in it) now reaches another cluster: the
  // jobs it runs in the one it reached would all look vanished from a view
  // of this one (evicted and run again beside their runs there, at-most-
  // once jobs failed while they run on). Held, as a refused file's cluster
  // is, until a reload finds it back on its own cluster. Its identity stays
  // the one it had, so that it is held again at each probe meanwhile.
  const std::string file = std::filesystem::path(e.view.config.source_file).filename().string();
  e.view.config_error = fmt::format(
      "{}: it now reaches another cluster than the one cluster {} ran its jobs in (its kube-system Namespace has "
      "uid {}, not {}), at {}: its jobs there would all be taken for vanished, so it is held; put back the "
      "kubeconfig that reaches that cluster and reload, or, if that cluster is gone for good, remove this entry "
      "and reload (its jobs get their onClusterLoss), then add the new cluster",
      file, name, cluster_id, e.view.cluster_id, e.creds ? e.creds->server : "?");
  spdlog::error("inventory: cluster {} is held: {}", name, e.view.config_error);
  // Its server (the same one, if a DNS name moved or a cluster was made
  // again there) showed another identity: not one to be Ready on until a
  // probe reads its own there again.
  e.identity_read_at.clear();
  e.reprobe = false;
  e.next_probe_ms = clock_.MonotonicMillis() + options_.probe_interval_ms;
  generation_.fetch_add(1, std::memory_order_release);
  return true;
}

}  // namespace gantry::inventory
