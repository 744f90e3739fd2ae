// Reading a kubeconfig user's `exec` mapping (client-go's ExecConfig) into
// an ExecConfig, with the checks client-go makes at load and one of its own:
// interactiveMode Always is refused, since the daemon has no terminal.
//
// Unknown fields are ignored, as everywhere in a kubeconfig. Errors are
// FieldErrors ("line N: users[u].user.exec.apiVersion: ..."); the caller
// names the file. Values of env entries are never quoted (they may be
// secrets).
//
// Thread-safety: a stateless function.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "gantry/common/status.h"
#include "gantry/inventory/exec_credential.h"
#include "yaml_reader.h"

namespace gantry::inventory::internal {

// `exec` is the mapping at `field`; a command holding a '/' that is relative
// is resolved against `base_dir`, the kubeconfig's folder, as client-go
// does (a bare name is left to PATH). provideClusterInfo: true gives the
// result an empty `cluster`, for the caller to fill from the cluster entry.
Result<ExecConfig> ReadExecConfig(const YAML::Node& exec, const Field& field,
                                  const std::string& base_dir);

}  // namespace gantry::inventory::internal
