#include "certs.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include <fmt/format.h>

namespace gantry::sim {
namespace {

struct Deleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter>;
using CertPtr = std::unique_ptr<X509, Deleter>;
using BioPtr = std::unique_ptr<BIO, Deleter>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter>;

// Certificates are valid from an hour ago (clock skew) for ten years
// (LeafValidity's defaults, the CAs' too): the simulator's clusters live as
// long as its process.

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

Status AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) return Status::Internal(fmt::format("extension {}", value));
  return Status::Ok();
}

// A CA (self-signed when issuer is null, else an intermediate) or a
// serving certificate.
Result<CertPtr> MakeCert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long serial,
                         bool is_ca, LeafValidity validity = {}) {
  CertPtr cert(X509_new());
  if (!cert) return Status::Internal("X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), validity.not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), validity.not_after_s);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("gantry-sim"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (is_ca) {
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE"));
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"));
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_subject_key_identifier, "hash"));
    if (issuer) GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  } else {
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE"));
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyEncipherment"));
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_ext_key_usage, "serverAuth"));
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"));
    GANTRY_RETURN_IF_ERROR(AddExt(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return Status::Internal("X509_sign");
  return cert;
}

std::string CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioText(bio.get());
}

}  // namespace

Result<ClusterCerts> MakeClusterCerts(const std::string& cluster_name, bool intermediate, LeafValidity leaf_validity) {
  KeyPtr ca_key(EVP_EC_gen("P-256"));
  KeyPtr mid_key(intermediate ? EVP_EC_gen("P-256") : nullptr);
  KeyPtr leaf_key(EVP_EC_gen("P-256"));
  if (!ca_key || (intermediate && !mid_key) || !leaf_key) return Status::Internal("EC key generation failed");
  long serial = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&serial), sizeof serial - 1);
  auto ca = MakeCert(fmt::format("gantry-sim {} CA", cluster_name), ca_key.get(), nullptr, ca_key.get(), serial, true);
  if (!ca.ok()) return ca.status();
  ClusterCerts out;
  out.ca_pem = CertPem(ca->get());
  X509* issuer = ca->get();
  EVP_PKEY* issuer_key = ca_key.get();
  CertPtr mid;  // kept until the leaf is signed
  if (intermediate) {
    auto made = MakeCert(fmt::format("gantry-sim {} intermediate CA", cluster_name), mid_key.get(), ca->get(),
                         ca_key.get(), serial + 2, true);
    if (!made.ok()) return made.status();
    mid = std::move(made.value());
    out.intermediate_pem = CertPem(mid.get());
    issuer = mid.get();
    issuer_key = mid_key.get();
  }
  auto leaf = MakeCert(fmt::format("{}.gantry-sim", cluster_name), leaf_key.get(), issuer, issuer_key, serial + 1,
                       false, leaf_validity);
  if (!leaf.ok()) return leaf.status();
  out.cert_pem = CertPem(leaf->get()) + out.intermediate_pem;
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), leaf_key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  out.key_pem = BioText(bio.get());
  return out;
}

std::string MakeToken() {
  unsigned char buf[32];
  RAND_bytes(buf, sizeof buf);
  std::string hex;
  for (unsigned char c : buf) hex += fmt::format("{:02x}", c);
  return hex;
}

std::string Base64(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace gantry::sim
