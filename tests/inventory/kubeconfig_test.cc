#include "gantry/inventory/kubeconfig.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_pki.h"
#include "test_support.h"

namespace gantry::inventory {
namespace {

using gantry::inventory::testing::Base64;
using gantry::inventory::testing::MakeSelfSigned;
using gantry::testing::TempDir;
using gantry::testing::WriteFile;

constexpr const char* kSecret = "SECRET-token-6f1d2c";

// A kubeconfig with two contexts: "main" (c-main/u-main, filled by the test)
// and "other" (an insecure cluster with a fixed token).
struct Kube {
  std::string server = "server: https://10.0.0.1:6443";
  std::string cluster;  // extra lines under clusters[c-main].cluster
  std::string user = std::string("token: ") + kSecret;  // lines under users[u-main].user
  std::string current_context = "main";

  std::string Render() const {
    auto indent = [](const std::string& lines) {
      std::string out;
      size_t start = 0;
      while (start < lines.size()) {
        size_t end = lines.find('\n', start);
        if (end == std::string::npos) end = lines.size();
        out += "      " + lines.substr(start, end - start) + "\n";
        start = end + 1;
      }
      return out;
    };
    return "apiVersion: v1\nkind: Config\ncurrent-context: " + current_context +
           "\nclusters:\n  - name: c-main\n    cluster:\n" + indent(server) + indent(cluster) +
           "  - name: c-other\n    cluster:\n      server: https://other.example.com\n"
           "      insecure-skip-tls-verify: true\n"
           "users:\n  - name: u-main\n    user:\n" +
           indent(user) +
           "  - name: u-other\n    user:\n      token: other-token\n"
           "contexts:\n  - name: main\n    context:\n      cluster: c-main\n      user: u-main\n"
           "  - name: other\n    context:\n      cluster: c-other\n      user: u-other\n";
  }
};

Result<ClusterCredentials> Parse(const Kube& k, const std::string& context = "",
                                 bool allow_insecure = false,
                                 const std::string& base = "/nowhere") {
  return ParseKubeconfig(k.Render(), "kube.yaml", base, context, allow_insecure);
}

std::string TokenOf(const ClusterCredentials& c) {
  REQUIRE(c.token_source);
  Result<std::string> t = c.token_source->Token();
  REQUIRE(t.ok());
  return *t;
}

TEST_CASE("Kubeconfig: inline CA and token, current context", "[inventory][kubeconfig]") {
  const auto ca = MakeSelfSigned("cluster-ca");
  Kube k;
  k.cluster = "certificate-authority-data: " + Base64(ca.cert_pem);
  Result<ClusterCredentials> r = Parse(k);
  REQUIRE(r.ok());
  CHECK(r->server == "https://10.0.0.1:6443");
  CHECK(r->host == "10.0.0.1");
  CHECK(r->port == 6443);
  CHECK(r->base_path.empty());
  CHECK(r->ca_pem == ca.cert_pem);
  CHECK(TokenOf(*r) == kSecret);
  CHECK(r->token_source->path().empty());
  CHECK(r->client_cert_pem.empty());
  CHECK_FALSE(r->insecure);
}

TEST_CASE("Kubeconfig: CA, token and client cert from files relative to the kubeconfig",
          "[inventory][kubeconfig]") {
  TempDir tmp;
  const auto ca = MakeSelfSigned("cluster-ca");
  const auto client = MakeSelfSigned("gantry");
  WriteFile(tmp.File("ca.crt"), ca.cert_pem);
  WriteFile(tmp.File("client.crt"), client.cert_pem);
  WriteFile(tmp.File("client.key"), client.key_pem);
  WriteFile(tmp.File("token"), std::string(kSecret) + "\n");
  Kube k;
  k.server = "server: https://[fd00::1]/k8s/clusters/c-1/";
  k.cluster = "certificate-authority: ca.crt\ntls-server-name: api.internal";
  k.user = "tokenFile: token\nclient-certificate: client.crt\nclient-key: client.key";
  WriteFile(tmp.File("kube.yaml"), k.Render());
  Result<ClusterCredentials> r = LoadKubeconfig(tmp.File("kube.yaml"), "", false);
  REQUIRE(r.ok());
  CHECK(r->host == "fd00::1");
  CHECK(r->port == 443);
  CHECK(r->base_path == "/k8s/clusters/c-1");
  CHECK(r->tls_server_name == "api.internal");
  CHECK(r->ca_pem == ca.cert_pem);
  CHECK(TokenOf(*r) == kSecret);  // trimmed
  CHECK(r->token_source->path() == tmp.File("token"));
  CHECK(r->client_cert_pem == client.cert_pem);
  CHECK(r->client_key_pem == client.key_pem);
}

TEST_CASE("Kubeconfig: inline client certificate for mTLS without a token",
          "[inventory][kubeconfig]") {
  const auto client = MakeSelfSigned("gantry");
  Kube k;
  k.user = "client-certificate-data: " + Base64(client.cert_pem) +
           "\nclient-key-data: " + Base64(client.key_pem);
  Result<ClusterCredentials> r = Parse(k);
  REQUIRE(r.ok());
  CHECK_FALSE(r->token_source);
  CHECK(r->client_cert_pem == client.cert_pem);
  CHECK(r->client_key_pem == client.key_pem);
  CHECK(r->ca_pem.empty());  // no CA: the system trust store
}

TEST_CASE("Kubeconfig: a named context wins over current-context, insecure needs allowInsecure",
          "[inventory][kubeconfig]") {
  Kube k;
  Result<ClusterCredentials> refused = Parse(k, "other", false);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(
      refused.status().message(),
      Catch::Matchers::Contains("clusters[c-other].cluster.insecure-skip-tls-verify: refused; "
                                "set allowInsecure: true"));
  Result<ClusterCredentials> allowed = Parse(k, "other", true);
  REQUIRE(allowed.ok());
  CHECK(allowed->insecure);
  CHECK(allowed->host == "other.example.com");
  CHECK(TokenOf(*allowed) == "other-token");

  k.current_context = "other";
  CHECK_FALSE(Parse(k, "", false).ok());  // current-context is now the insecure one
  CHECK(Parse(k, "main", false).ok());    // the named context overrides it
}

struct BadKube {
  const char* what;
  Kube kube;
  const char* context;
  const char* message;  // a part of the expected message
};

std::vector<BadKube> BadKubes() {
  const auto ca = MakeSelfSigned("ca");
  const auto client = MakeSelfSigned("client");
  const auto other = MakeSelfSigned("other");
  auto with = [](auto edit) {
    Kube k;
    edit(k);
    return k;
  };
  return {
      {"exec plugin", with([](Kube& k) { k.user += "\nexec:\n  command: aws"; }), "",
       "users[u-main].user.exec: exec credential plugins are not supported; use a "
       "service-account token"},
      {"auth-provider", with([](Kube& k) { k.user += "\nauth-provider:\n  name: gcp"; }), "",
       "auth-provider plugins are not supported"},
      {"basic auth", with([](Kube& k) { k.user += "\nusername: a\npassword: b"; }), "",
       "basic authentication is not supported"},
      {"missing server", with([](Kube& k) { k.server = "insecure-skip-tls-verify: false"; }), "",
       "clusters[c-main].cluster.server: is missing"},
      {"http server", with([](Kube& k) { k.server = "server: http://10.0.0.1:8080"; }), "",
       "must be an https:// URL"},
      {"bad port", with([](Kube& k) { k.server = "server: https://h:99999"; }), "",
       "port must be from 1 to 65535"},
      {"proxy", with([](Kube& k) { k.cluster = "proxy-url: http://proxy:3128"; }), "",
       "proxy-url: proxies are not supported"},
      {"ca data and file", with([&](Kube& k) {
         k.cluster = "certificate-authority-data: " + Base64(ca.cert_pem) +
                     "\ncertificate-authority: ca.crt";
       }),
       "", "certificate-authority-data: set together with certificate-authority"},
      {"ca not base64", with([](Kube& k) { k.cluster = "certificate-authority-data: '%%%'"; }), "",
       "certificate-authority-data: is not valid base64"},
      {"ca not a certificate",
       with([](Kube& k) { k.cluster = "certificate-authority-data: " + Base64("hello"); }), "",
       "certificate-authority: does not hold a PEM certificate"},
      {"ca file missing", with([](Kube& k) { k.cluster = "certificate-authority: nope.crt"; }), "",
       "certificate-authority: /nowhere/nope.crt: No such file"},
      {"insecure with ca", with([&](Kube& k) {
         k.cluster = "certificate-authority-data: " + Base64(ca.cert_pem) +
                     "\ninsecure-skip-tls-verify: true";
       }),
       "", "cannot be combined with a certificate authority"},
      {"token and tokenFile", with([](Kube& k) { k.user += "\ntokenFile: /t"; }), "",
       "users[u-main].user.token: set together with tokenFile"},
      {"token file missing", with([](Kube& k) { k.user = "tokenFile: /nowhere/token"; }), "",
       "tokenFile: token file /nowhere/token:"},
      {"token not a string",
       with([](Kube& k) { k.user = std::string("token: [") + kSecret + "]"; }), "",
       "users[u-main].user.token: must be a string, not a list"},
      {"cert without key",
       with([&](Kube& k) { k.user += "\nclient-certificate-data: " + Base64(client.cert_pem); }),
       "", "client certificate and client key must be set together"},
      {"key does not match", with([&](Kube& k) {
         k.user += "\nclient-certificate-data: " + Base64(client.cert_pem) +
                   "\nclient-key-data: " + Base64(other.key_pem);
       }),
       "", "client key does not match the client certificate"},
      {"no credentials", with([](Kube& k) { k.user = "as: someone"; }), "",
       "no credentials: needs token, tokenFile or a client certificate"},
      {"unknown context", Kube{}, "staging", "contexts: no entry named 'staging'"},
      {"no current context", with([](Kube& k) { k.current_context = "''"; }), "",
       "current-context: is not set"},
      {"broken yaml", with([](Kube& k) { k.user = std::string("token: {") + kSecret; }), "",
       "invalid YAML"},
  };
}

TEST_CASE("Kubeconfig: bad inputs are refused with a clear message", "[inventory][kubeconfig]") {
  for (const BadKube& bad : BadKubes()) {
    INFO(bad.what);
    Result<ClusterCredentials> r = Parse(bad.kube, bad.context);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Matchers::StartsWith("kubeconfig kube.yaml: "));
    CHECK_THAT(r.status().message(), Catch::Matchers::Contains(bad.message));
    // Secrets never leak into an error, whatever went wrong.
    CHECK_THAT(r.status().message(), !Catch::Matchers::Contains(kSecret));
    CHECK_THAT(r.status().message(), !Catch::Matchers::Contains("PRIVATE KEY"));
  }
}

TEST_CASE("LoadCredentials names the cluster and never the token", "[inventory][kubeconfig]") {
  TempDir tmp;
  Kube k;
  k.user += "\nexec:\n  command: gke-gcloud-auth-plugin";
  WriteFile(tmp.File("kube.yaml"), k.Render());
  ClusterConfig config;
  config.name = "gpu-eu-1";
  config.kubeconfig = tmp.File("kube.yaml");
  Result<ClusterCredentials> r = LoadCredentials(config);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Matchers::StartsWith("cluster gpu-eu-1: kubeconfig " +
                                                               tmp.File("kube.yaml") + ": line "));
  CHECK_THAT(r.status().message(), !Catch::Matchers::Contains(kSecret));

  config.kubeconfig = tmp.File("missing.yaml");
  Result<ClusterCredentials> missing = LoadCredentials(config);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kIo);
}

}  // namespace
}  // namespace gantry::inventory
