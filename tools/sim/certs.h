// Per-cluster TLS material made at start with OpenSSL 3: a self-signed CA
// and a serving certificate it signs for 127.0.0.1 and localhost, both on
// EC P-256 keys (fast to generate). Also a random bearer token.
//
// Thread-safety: pure functions (OpenSSL 3 is thread-safe).
#pragma once

#include <string>

#include "gantry/common/status.h"

namespace gantry::sim {

struct ClusterCerts {
  std::string ca_pem;            // the root
  std::string cert_pem;          // serving certificate (leaf), then the intermediate if any
  std::string key_pem;           // its private key (PKCS#8)
  std::string intermediate_pem;  // "" unless asked for
};

// When the serving certificate is valid, in seconds from now: by default
// from an hour ago for ten years. Tests make expired ones with it.
struct LeafValidity {
  long not_before_s = -3600;
  long not_after_s = 10L * 365 * 24 * 3600;
};

// common_name names the CA ("gantry-sim c1 CA"). With intermediate, the
// root signs an intermediate CA, which signs the serving certificate.
Result<ClusterCerts> MakeClusterCerts(const std::string& cluster_name, bool intermediate = false,
                                      LeafValidity leaf_validity = {});
// 32 random bytes, hex.
std::string MakeToken();
std::string Base64(const std::string& data);

}  // namespace gantry::sim
