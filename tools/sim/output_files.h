// The files gantry-sim leaves in its --out-dir for the daemon, kubectl and
// the ctl command:
//   <name>.kubeconfig      standard kubeconfig (server, CA data, token)
//   clusters.d/<name>.yaml the cluster's entry for gantry's inventory
//   admin                  the admin API port
//   ready                  written last, once every listener is up
//
// Thread-safety: pure functions plus file writes.
#pragma once

#include <string>

#include "gantry/common/status.h"
#include "sim_config.h"

namespace gantry::sim {

std::string KubeconfigYaml(const std::string& name, const std::string& server_url, const std::string& ca_pem,
                           const std::string& token);
std::string ClusterEntryYaml(const ClusterConfig& c, const std::string& kubeconfig_path);
// Writes via a temporary file and rename, so readers never see half a file.
Status WriteFileAtomic(const std::string& path, const std::string& content);
Status MakeDirs(const std::string& path);

}  // namespace gantry::sim
