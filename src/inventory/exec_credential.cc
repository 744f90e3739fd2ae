#include "gantry/inventory/exec_credential.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "gantry/common/clock.h"
#include "gantry/inventory/token_source.h"
#include "pem.h"

namespace gantry::inventory {

std::string ExecRequestJson(const ExecConfig& config) {
  nlohmann::json spec = {{"interactive", false}};
  if (config.cluster) {
    // Field names and omissions as client-go's Cluster type has them.
    nlohmann::json cluster = {{"server", config.cluster->server}};
    if (!config.cluster->tls_server_name.empty()) {
      cluster["tls-server-name"] = config.cluster->tls_server_name;
    }
    if (config.cluster->insecure) cluster["insecure-skip-tls-verify"] = true;
    if (!config.cluster->ca_pem.empty()) {
      cluster["certificate-authority-data"] = internal::EncodeBase64(config.cluster->ca_pem);
    }
    spec["cluster"] = std::move(cluster);
  }
  const nlohmann::json request = {
      {"apiVersion", config.api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}};
  return request.dump();
}

Result<ExecCredential> ParseExecCredential(std::string_view output, std::string_view api_version) {
  // No message below quotes the output: see the header.
  const nlohmann::json doc = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Invalid("printed no ExecCredential: its output is not a JSON object");
  }
  const auto kind = doc.find("kind");
  if (kind == doc.end() || !kind->is_string() || kind->get<std::string>() != "ExecCredential") {
    return Status::Invalid("printed an object whose kind is not ExecCredential");
  }
  const auto version = doc.find("apiVersion");
  if (version == doc.end() || !version->is_string() || version->get<std::string>() != api_version) {
    return Status::Invalid(fmt::format(
        "printed an ExecCredential whose apiVersion is not {}, the one its kubeconfig names",
        api_version));
  }
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return Status::Invalid("printed an ExecCredential without a status");
  }
  ExecCredential credential;
  if (const auto token = status->find("token"); token != status->end() && !token->is_null()) {
    if (!token->is_string()) return Status::Invalid("printed a status.token that is not a string");
    credential.token = TrimToken(token->get<std::string>());  // as a fixed token or a token file is
    if (std::string problem = BearerTokenProblem(credential.token); !problem.empty()) {
      return Status::Invalid("printed a status.token that " + problem);
    }
  }
  if (credential.token.empty()) {
    if (status->contains("clientCertificateData") || status->contains("clientKeyData")) {
      return Status::Invalid(
          "answered with a client certificate and no token; gantry supports only token "
          "credentials from exec plugins yet");
    }
    return Status::Invalid("printed an ExecCredential without status.token");
  }
  if (const auto expiry = status->find("expirationTimestamp");
      expiry != status->end() && !expiry->is_null()) {
    std::optional<int64_t> ms;
    if (expiry->is_string()) ms = ParseRfc3339(expiry->get<std::string>());
    if (!ms) {
      return Status::Invalid("printed a status.expirationTimestamp that is not an RFC 3339 time");
    }
    credential.expiry_ms = *ms;
  }
  return credential;
}

}  // namespace gantry::inventory
