// Test-only PKI: self-signed certificates and keys generated in memory with
// OpenSSL, so kubeconfig tests need no fixture files or external tools.
#pragma once

#include <string>

namespace gantry::inventory::testing {

struct CertAndKey {
  std::string cert_pem;
  std::string key_pem;
};

// A fresh P-256 key and a self-signed certificate for `common_name`.
CertAndKey MakeSelfSigned(const std::string& common_name);

std::string Base64(const std::string& data);

}  // namespace gantry::inventory::testing
