// Kubeconfig parsing: from a cluster entry's kubeconfig file and context to
// the credentials the Kubernetes client connects with.
//
// Supported (the subset a service account needs):
//   cluster: server (https only), certificate-authority-data (base64 PEM) or
//            certificate-authority (file), tls-server-name,
//            insecure-skip-tls-verify (refused unless the cluster entry says
//            allowInsecure: true; then `insecure` is set and the caller logs a
//            warning at every start);
//   user:    token or tokenFile (re-read on rotation, see TokenSource), or
//            exec (a credential plugin that prints a token, see ExecPlugin;
//            not run at load), and client-certificate(-data) +
//            client-key(-data) for mTLS;
//   context: the one named by the cluster entry, else current-context.
// Refused with a clear message: auth-provider plugins, exec with
// interactiveMode Always or an apiVersion other than v1/v1beta1, basic auth,
// proxy-url, a field given both inline and as a file, no credentials at all.
// Relative file paths are resolved against the kubeconfig's directory, as
// kubectl does, and so is an exec command that holds a '/'. Fields not
// listed above are ignored.
//
// Secrecy: tokens and private keys never appear in a returned message; errors
// name the file, the context/cluster/user entry and the field.
//
// Thread-safety: plain functions and values; TokenSource is internally locked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gantry/common/status.h"
#include "gantry/inventory/cluster_config.h"
#include "gantry/inventory/token_source.h"

namespace gantry::inventory {

struct ClusterCredentials {
  std::string server;           // as written, e.g. "https://10.0.0.1:6443"
  std::string host;             // "10.0.0.1", "api.example.com", "::1" (no brackets)
  uint16_t port = 443;          // from the URL, 443 when absent
  std::string base_path;        // URL path prefix without trailing '/', usually ""
  std::string tls_server_name;  // SNI / name to verify; "" = host
  // PEM CA bundle trusted for this cluster only. "" = no CA in the kubeconfig:
  // the system trust store is used (managed clusters with public certs).
  std::string ca_pem;
  std::shared_ptr<TokenSource> token_source;  // null = no bearer token (mTLS only)
  std::string client_cert_pem;                // "" = no client certificate
  std::string client_key_pem;                 // secret; set iff client_cert_pem is
  bool insecure = false;                      // skip TLS verification (allowed via allowInsecure)
};

// Whether a client made from `a` also serves `b`: the same server, trust and
// identity (token sources compared with TokenSource::SameSource, which never
// runs an exec plugin).
bool SameConnection(const ClusterCredentials& a, const ClusterCredentials& b);

// Parses the kubeconfig at `path`, selecting `context` ("" = current-context).
Result<ClusterCredentials> LoadKubeconfig(const std::string& path, const std::string& context,
                                          bool allow_insecure);

// LoadKubeconfig(config.kubeconfig, config.context, config.allow_insecure),
// with "cluster <name>: " in front of an error.
Result<ClusterCredentials> LoadCredentials(const ClusterConfig& config);

// The same from text; `display` names the file in messages and `base_dir`
// resolves relative paths. Exposed for tests.
Result<ClusterCredentials> ParseKubeconfig(std::string_view yaml, const std::string& display,
                                           const std::string& base_dir, const std::string& context,
                                           bool allow_insecure);

}  // namespace gantry::inventory
