// Small OpenSSL helpers for kubeconfig material: base64 and PEM checks.
// Messages never quote the input (it may be a private key).
#pragma once

#include <string>
#include <string_view>

#include "gantry/common/status.h"

namespace gantry::inventory::internal {

// Standard base64 with padding; whitespace (line breaks) is ignored.
Result<std::string> DecodeBase64(std::string_view text);
// Standard base64 with padding, on one line.
std::string EncodeBase64(std::string_view data);

// At least one PEM "CERTIFICATE" that OpenSSL can parse.
Status CheckCertificatePem(const std::string& pem);
// A PEM private key that OpenSSL can parse and that matches the first
// certificate in `cert_pem`.
Status CheckKeyPairPem(const std::string& cert_pem, const std::string& key_pem);

// Reads a PEM (or any small) file; kIo naming the path on failure.
Result<std::string> ReadSmallFile(const std::string& path);

}  // namespace gantry::inventory::internal
