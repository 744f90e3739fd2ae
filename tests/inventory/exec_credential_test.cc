#include "gantry/inventory/exec_credential.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_pki.h"

namespace gantry::inventory {
namespace {

constexpr const char* kSecret = "SECRET-exec-token-93b1";

std::string Credential(const std::string& status, std::string_view version = kExecApiV1) {
  return R"({"apiVersion":")" + std::string(version) + R"(","kind":"ExecCredential","status":)" +
         status + "}";
}

TEST_CASE("ExecCredential: a token, with or without an expiry", "[inventory][exec]") {
  Result<ExecCredential> plain = ParseExecCredential(Credential(R"({"token":"abc"})"), kExecApiV1);
  REQUIRE(plain.ok());
  CHECK(plain->token == "abc");
  CHECK_FALSE(plain->expiry_ms.has_value());

  Result<ExecCredential> expiring = ParseExecCredential(
      Credential(R"({"token":"abc","expirationTimestamp":"2026-11-29T10:39:14Z"})",
                 kExecApiV1beta1),
      kExecApiV1beta1);
  REQUIRE(expiring.ok());
  CHECK(expiring->expiry_ms == 1'795'948'754'000);

  // A certificate beside a token: the token is used.
  Result<ExecCredential> both = ParseExecCredential(
      Credential(R"({"token":"abc","clientCertificateData":"x","clientKeyData":"y"})"), kExecApiV1);
  REQUIRE(both.ok());
  CHECK(both->token == "abc");
}

struct BadOutput {
  const char* what;
  std::string output;
  const char* message;  // a part of the expected message
};

TEST_CASE("ExecCredential: bad output is refused without quoting it", "[inventory][exec]") {
  const std::string secret = kSecret;
  const std::vector<BadOutput> cases = {
      {"not JSON", secret + " is the token", "its output is not a JSON object"},
      {"empty", "", "its output is not a JSON object"},
      {"a JSON string", "\"" + secret + "\"", "its output is not a JSON object"},
      {"wrong kind",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":")" + secret +
           R"(","status":{"token":"t"}})",
       "kind is not ExecCredential"},
      {"no kind", R"({"apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t"}})",
       "kind is not ExecCredential"},
      {"other version", Credential(R"({"token":")" + secret + "\"}", kExecApiV1beta1),
       "apiVersion is not client.authentication.k8s.io/v1, the one its kubeconfig names"},
      {"no status", R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
       "without a status"},
      {"no token", Credential("{}"), "without status.token"},
      {"empty token", Credential(R"({"token":""})"), "without status.token"},
      {"token not a string", Credential(R"({"token":42})"), "status.token that is not a string"},
      {"token of two lines", Credential(R"({"token":")" + secret + R"(\r\nX-Extra: 1"})"),
       "status.token that holds a line break"},
      {"certificate only", Credential(R"({"clientCertificateData":"c","clientKeyData":"k"})"),
       "client certificate and no token; gantry supports only token credentials"},
      {"bad expiry",
       Credential(R"({"token":")" + secret + R"(","expirationTimestamp":"tomorrow"})"),
       "status.expirationTimestamp that is not an RFC 3339 time"},
      {"expiry not a string",
       Credential(R"({"token":")" + secret + R"(","expirationTimestamp":1795948754})"),
       "status.expirationTimestamp that is not an RFC 3339 time"},
  };
  for (const BadOutput& bad : cases) {
    INFO(bad.what);
    Result<ExecCredential> r = ParseExecCredential(bad.output, kExecApiV1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Matchers::Contains(bad.message));
    CHECK_THAT(r.status().message(), !Catch::Matchers::Contains(kSecret));
  }
}

TEST_CASE("ExecCredential request: interactive false, the cluster only when asked",
          "[inventory][exec]") {
  ExecConfig config;
  config.api_version = std::string(kExecApiV1);
  config.command = "aws";
  nlohmann::json bare = nlohmann::json::parse(ExecRequestJson(config));
  CHECK(bare["apiVersion"] == kExecApiV1);
  CHECK(bare["kind"] == "ExecCredential");
  CHECK(bare["spec"] == nlohmann::json{{"interactive", false}});

  const std::string ca = testing::MakeSelfSigned("cluster-ca").cert_pem;
  config.cluster = ExecClusterInfo{"https://10.0.0.1:6443", "api.internal", ca, false};
  nlohmann::json full = nlohmann::json::parse(ExecRequestJson(config));
  const nlohmann::json& cluster = full["spec"]["cluster"];
  CHECK(cluster["server"] == "https://10.0.0.1:6443");
  CHECK(cluster["tls-server-name"] == "api.internal");
  CHECK(cluster["certificate-authority-data"] == testing::Base64(ca));
  CHECK_FALSE(cluster.contains("insecure-skip-tls-verify"));
  CHECK(full["spec"]["interactive"] == false);
}

}  // namespace
}  // namespace gantry::inventory
