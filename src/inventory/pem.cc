#include "pem.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

namespace gantry::inventory::internal {
namespace {

// Certificates, keys and tokens are a few KiB; larger is a wrong path.
constexpr std::uintmax_t kMaxFileBytes = 1 << 20;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

BioPtr MemBio(const std::string& data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

X509Ptr FirstCertificate(const std::string& pem) {
  BioPtr bio = MemBio(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ERR_clear_error();
  return cert;
}

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') compact.push_back(c);
  }
  if (compact.empty() || compact.size() % 4 != 0) return Status::Invalid("is not valid base64");
  std::string out(compact.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  if (n < 0) return Status::Invalid("is not valid base64");
  // EVP_DecodeBlock counts padding as zero bytes; drop them.
  size_t padding = 0;
  if (compact.ends_with("==")) {
    padding = 2;
  } else if (compact.ends_with("=")) {
    padding = 1;
  }
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

std::string EncodeBase64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Status CheckCertificatePem(const std::string& pem) {
  if (!FirstCertificate(pem)) return Status::Invalid("does not hold a PEM certificate");
  return Status::Ok();
}

Status CheckKeyPairPem(const std::string& cert_pem, const std::string& key_pem) {
  X509Ptr cert = FirstCertificate(cert_pem);
  if (!cert) return Status::Invalid("client certificate: does not hold a PEM certificate");
  BioPtr bio = MemBio(key_pem);
  KeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ERR_clear_error();
  if (!key) return Status::Invalid("client key: does not hold a PEM private key");
  const bool match = X509_check_private_key(cert.get(), key.get()) == 1;
  ERR_clear_error();
  if (!match) return Status::Invalid("client key does not match the client certificate");
  return Status::Ok();
}

Result<std::string> ReadSmallFile(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::Io(fmt::format("{}: {}", path, ec.message()));
  if (size > kMaxFileBytes) {
    return Status::Invalid(fmt::format("{}: larger than {} bytes", path, kMaxFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Io(fmt::format("{}: cannot be opened", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace gantry::inventory::internal
