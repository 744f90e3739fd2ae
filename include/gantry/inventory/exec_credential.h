// Exec credential plugins, as client-go runs them (`aws eks get-token`,
// `gke-gcloud-auth-plugin`): ExecConfig is what a kubeconfig user's `exec`
// says; ExecRequestJson is the ExecCredential a plugin is handed in
// KUBERNETES_EXEC_INFO; ParseExecCredential reads the ExecCredential it
// prints. Versions client.authentication.k8s.io/v1 and v1beta1 (v1alpha1 was
// removed from Kubernetes in 1.24).
//
// Only token credentials are supported: a plugin that answers with a client
// certificate and no token is refused, saying so.
//
// Secrecy: a token is never put in a message, and neither is any part of
// what a plugin printed on stdout (it may hold a token or a key), not even a
// field that looks harmless.
//
// Thread-safety: plain values and stateless functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gantry/common/status.h"

namespace gantry::inventory {

inline constexpr std::string_view kExecApiV1 = "client.authentication.k8s.io/v1";
inline constexpr std::string_view kExecApiV1beta1 = "client.authentication.k8s.io/v1beta1";

// The cluster a plugin is told about when the kubeconfig sets
// provideClusterInfo (spec.cluster of the request).
struct ExecClusterInfo {
  std::string server;
  std::string tls_server_name;  // "" = not set
  std::string ca_pem;           // "" = the system trust store
  bool insecure = false;

  bool operator==(const ExecClusterInfo&) const = default;
};

struct ExecConfig {
  std::string api_version;  // kExecApiV1 or kExecApiV1beta1
  // A path (a relative one was made absolute against the kubeconfig's
  // folder at load) or a bare name, looked up in the daemon's PATH.
  std::string command;
  std::vector<std::string> args;
  // Added to the daemon's environment (replacing a variable of the same
  // name); for a name given twice the later value wins.
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;  // shown when the command is not found
  // "Never" or "IfAvailable" (Always is refused at load: the daemon has no
  // terminal). Either way the plugin is told spec.interactive: false.
  std::string interactive_mode;
  std::optional<ExecClusterInfo> cluster;  // set iff provideClusterInfo

  bool operator==(const ExecConfig&) const = default;
};

// What a plugin answered.
struct ExecCredential {
  std::string token;                 // secret; never empty
  std::optional<int64_t> expiry_ms;  // status.expirationTimestamp (unix ms); none = until refused
};

// The ExecCredential request for KUBERNETES_EXEC_INFO (compact JSON).
std::string ExecRequestJson(const ExecConfig& config);

// Reads a plugin's stdout. kInvalidArgument, with a message that quotes none
// of the output, for anything but an ExecCredential of `api_version` with a
// non-empty status.token and, if given, a valid RFC 3339 expirationTimestamp.
Result<ExecCredential> ParseExecCredential(std::string_view output, std::string_view api_version);

}  // namespace gantry::inventory
