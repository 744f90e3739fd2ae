#include "gantry/inventory/kubeconfig.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <utility>
#include <vector>

#include "test_pki.h"
#include "test_support.h"

namespace gantry::inventory {
namespace {

using gantry::inventory::testing::Base64;
using gantry::inventory::testing::MakeSelfSigned;
using gantry::testing::TempDir;
using gantry::testing::WriteExecutable;
using gantry::testing::WriteFile;

constexpr const char* kSecret = "SECRET-token-6f1d2c";

// Each line of `lines` with `prefix` in front, and a newline after.
std::string Indent(const std::string& lines, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  while (start < lines.size()) {
    size_t end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    out += prefix + lines.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// A kubeconfig with two contexts: "main" (c-main/u-main, filled by the test)
// and "other" (an insecure cluster with a fixed token).
struct Kube {
  std::string server = "server: https://10.0.0.1:6443";
  std::string cluster;  // extra lines under clusters[c-main].cluster
  std::string user = std::string("token: ") + kSecret;  // lines under users[u-main].user
  std::string current_context = "main";

  std::string Render() const {
    auto indent = [](const std::string& lines) { return Indent(lines, "      "); };
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
  k.server = "server: HTTPS://[fd00::1]/k8s/clusters/c-1/";  // the scheme in any case, as kubectl takes it
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

// A user's `exec` mapping: apiVersion v1, `fields`, and interactiveMode.
std::string Exec(const std::string& fields, const std::string& mode = "Never") {
  return "exec:\n  apiVersion: client.authentication.k8s.io/v1\n" + Indent(fields, "  ") +
         "  interactiveMode: " + mode;
}

TEST_CASE("Kubeconfig: an exec user, with every field", "[inventory][kubeconfig]") {
  const auto ca = MakeSelfSigned("cluster-ca");
  Kube k;
  k.cluster =
      "certificate-authority-data: " + Base64(ca.cert_pem) + "\ntls-server-name: api.internal";
  k.user = Exec(
      "command: aws\n"
      "args: [--region, eu-central-1, eks, get-token, --cluster-name, gpu-eu-1, -v, -v, '']\n"
      "env:\n"
      "  - {name: AWS_PROFILE, value: gantry}\n"
      "  - {name: EMPTY}\n"
      "installHint: install the AWS CLI\n"
      "provideClusterInfo: true\n"
      "someFutureField: ignored",
      "IfAvailable");
  Result<ClusterCredentials> r = Parse(k);
  REQUIRE(r.ok());
  REQUIRE(r->token_source);
  const ExecConfig* exec = r->token_source->exec();
  REQUIRE(exec != nullptr);
  CHECK(exec->api_version == kExecApiV1);
  CHECK(exec->command == "aws");  // a bare name: looked up in PATH when run
  CHECK(exec->args == std::vector<std::string>{"--region", "eu-central-1", "eks", "get-token",
                                               "--cluster-name", "gpu-eu-1", "-v", "-v", ""});
  CHECK(exec->env ==
        std::vector<std::pair<std::string, std::string>>{{"AWS_PROFILE", "gantry"}, {"EMPTY", ""}});
  CHECK(exec->install_hint == "install the AWS CLI");
  CHECK(exec->interactive_mode == "IfAvailable");
  REQUIRE(exec->cluster);
  CHECK(exec->cluster->server == "https://10.0.0.1:6443");
  CHECK(exec->cluster->tls_server_name == "api.internal");
  CHECK(exec->cluster->ca_pem == ca.cert_pem);
  CHECK_FALSE(exec->cluster->insecure);
  CHECK(r->token_source->path().empty());
}

TEST_CASE(
    "Kubeconfig: exec v1beta1 defaults interactiveMode to IfAvailable, no cluster unless asked",
    "[inventory][kubeconfig]") {
  Kube k;
  k.user =
      "exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: "
      "gke-gcloud-auth-plugin";
  Result<ClusterCredentials> r = Parse(k);
  REQUIRE(r.ok());
  const ExecConfig* exec = r->token_source->exec();
  REQUIRE(exec != nullptr);
  CHECK(exec->api_version == kExecApiV1beta1);
  CHECK(exec->interactive_mode == "IfAvailable");
  CHECK_FALSE(exec->cluster);
  CHECK(exec->args.empty());
}

TEST_CASE("Kubeconfig: an exec command with a relative path runs from the kubeconfig's folder",
          "[inventory][kubeconfig]") {
  TempDir tmp;
  std::filesystem::create_directories(tmp.File("bin"));
  WriteExecutable(tmp.File("bin/plugin"),
                  "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                  "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"from-plugin\"}}'\n");
  for (const char* command : {"./bin/plugin", "bin/plugin", "bin/../bin/plugin"}) {
    INFO(command);
    Kube k;
    k.user = Exec(std::string("command: ") + command);
    WriteFile(tmp.File("kube.yaml"), k.Render());
    Result<ClusterCredentials> r = LoadKubeconfig(tmp.File("kube.yaml"), "", false);
    REQUIRE(r.ok());
    CHECK(r->token_source->exec()->command == tmp.File("bin/plugin"));
    CHECK(TokenOf(*r) == "from-plugin");
  }
  Kube absolute;
  absolute.user = Exec("command: /usr/local/bin/aws");
  CHECK(Parse(absolute)->token_source->exec()->command == "/usr/local/bin/aws");
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
      {"exec with token", with([](Kube& k) { k.user += "\n" + Exec("command: aws"); }), "",
       "users[u-main].user.exec: set together with token; use one"},
      {"exec not a mapping", with([](Kube& k) { k.user = "exec: aws"; }), "",
       "users[u-main].user.exec: must be a mapping"},
      {"exec without apiVersion", with([](Kube& k) { k.user = "exec:\n  command: aws"; }), "",
       "user.exec.apiVersion: is missing; use client.authentication.k8s.io/v1"},
      {"exec v1alpha1", with([](Kube& k) {
         k.user = "exec:\n  apiVersion: client.authentication.k8s.io/v1alpha1\n  command: aws";
       }),
       "",
       "line 16: users[u-main].user.exec.apiVersion: 'client.authentication.k8s.io/v1alpha1' is "
       "not supported; use client.authentication.k8s.io/v1 or "
       "client.authentication.k8s.io/v1beta1"},
      {"exec without command", with([](Kube& k) { k.user = Exec("args: [eks]"); }), "",
       "users[u-main].user.exec.command: is missing"},
      {"exec command not a string", with([](Kube& k) { k.user = Exec("command: [aws]"); }), "",
       "user.exec.command: must be a string, not a list"},
      {"exec v1 without interactiveMode", with([](Kube& k) {
         k.user = "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: aws";
       }),
       "",
       "users[u-main].user.exec.interactiveMode: is missing, and client.authentication.k8s.io/v1 "
       "requires it; use Never"},
      {"exec interactive Always", with([](Kube& k) {
         k.user =
             "exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: aws\n"
             "  interactiveMode: Always";
       }),
       "",
       "users[u-main].user.exec.interactiveMode: Always is refused: the plugin would need a "
       "terminal to ask its user, and gantry serve has none; use Never or IfAvailable"},
      {"exec unknown interactiveMode",
       with([](Kube& k) { k.user = Exec("command: aws", "Sometimes"); }), "",
       "user.exec.interactiveMode: must be Never or IfAvailable"},
      {"exec args not a list", with([](Kube& k) { k.user = Exec("command: aws\nargs: eks"); }), "",
       "user.exec.args: must be a list of strings"},
      {"exec arg not a string",
       with([](Kube& k) { k.user = Exec("command: aws\nargs: [eks, {a: b}]"); }), "",
       "user.exec.args[1]: must be a string"},
      {"exec env not a list", with([](Kube& k) { k.user = Exec("command: aws\nenv: {A: b}"); }), "",
       "user.exec.env: must be a list of {name, value} entries"},
      {"exec env without name", with([&](Kube& k) {
         k.user = Exec(std::string("command: aws\nenv:\n  - value: ") + kSecret);
       }),
       "", "user.exec.env[0].name: is missing"},
      {"exec env name with =", with([&](Kube& k) {
         k.user = Exec(std::string("command: aws\nenv:\n  - {name: A=B, value: ") + kSecret + "}");
       }),
       "", "user.exec.env[0].name: must not contain '='"},
      {"exec env value not a string",
       with([](Kube& k) { k.user = Exec("command: aws\nenv:\n  - {name: A, value: [b]}"); }), "",
       "user.exec.env[0].value: must be a string"},
      {"exec provideClusterInfo not a bool",
       with([](Kube& k) { k.user = Exec("command: aws\nprovideClusterInfo: yes please"); }), "",
       "user.exec.provideClusterInfo: must be true or false"},
      {"auth-provider", with([](Kube& k) { k.user += "\nauth-provider:\n  name: gcp"; }), "",
       "auth-provider plugins are not supported"},
      {"basic auth", with([](Kube& k) { k.user += "\nusername: a\npassword: b"; }), "",
       "basic authentication is not supported"},
      {"missing server", with([](Kube& k) { k.server = "insecure-skip-tls-verify: false"; }), "",
       "clusters[c-main].cluster.server: is missing"},
      {"http server", with([](Kube& k) { k.server = "server: http://10.0.0.1:8080"; }), "",
       "must be an https:// URL"},
      {"server with a line break", with([](Kube& k) { k.server = "server: \"https://h/p\\r\\nX-Extra: 1\""; }), "",
       "server 'https://h/p??X-Extra: 1' holds a space or a control character"},
      {"bad port", with([](Kube& k) { k.server = "server: https://h:99999"; }), "",
       "port must be from 1 to 65535"},
      // The URL is quoted with its user information and query values redacted.
      {"server with user info", with([](Kube& k) { k.server = std::string("server: https://admin:") + kSecret + "@h:6443"; }),
       "", "server 'https://[redacted]@h:6443' must not have user info"},
      {"http server with user info", with([](Kube& k) { k.server = std::string("server: http://u:") + kSecret + "@h"; }),
       "", "must be an https:// URL"},
      {"server with a query", with([](Kube& k) { k.server = std::string("server: https://h/?token=") + kSecret; }), "",
       "server 'https://h/?token=[redacted]' must not have"},
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
      {"token of two lines", with([](Kube& k) { k.user = std::string("token: \"") + kSecret + "\\r\\nX-Extra: 1\""; }), "",
       "users[u-main].user.token: holds a line break"},
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
       "no credentials: needs token, tokenFile, exec or a client certificate"},
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
  k.user += "\nauth-provider:\n  name: gcp";
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

namespace gantry::inventory {

TEST_CASE("SameConnection: a client serves credentials with the same server, trust and identity",
          "[inventory][kubeconfig]") {
  ClusterCredentials a;
  a.server = "https://10.0.0.1:6443";
  a.host = "10.0.0.1";
  a.port = 6443;
  a.ca_pem = "CA";
  a.token_source = TokenSource::Static("t-1");
  ClusterCredentials b = a;
  b.token_source = TokenSource::Static("t-1");  // another source giving the same token
  CHECK(SameConnection(a, b));
  const std::vector<std::pair<const char*, std::function<void(ClusterCredentials&)>>> changes = {
      {"server", [](ClusterCredentials& c) { c.server = "https://10.0.0.2:6443"; }},
      {"port", [](ClusterCredentials& c) { c.port = 443; }},
      {"base path", [](ClusterCredentials& c) { c.base_path = "/k8s"; }},
      {"TLS server name", [](ClusterCredentials& c) { c.tls_server_name = "api.example.com"; }},
      {"CA", [](ClusterCredentials& c) { c.ca_pem = "other CA"; }},
      {"client certificate", [](ClusterCredentials& c) { c.client_cert_pem = "cert"; }},
      {"client key", [](ClusterCredentials& c) { c.client_key_pem = "key"; }},
      {"insecure", [](ClusterCredentials& c) { c.insecure = true; }},
      {"token", [](ClusterCredentials& c) { c.token_source = TokenSource::Static("t-2"); }},
      {"no token", [](ClusterCredentials& c) { c.token_source = nullptr; }},
  };
  for (const auto& [what, change] : changes) {
    ClusterCredentials c = a;
    change(c);
    INFO(what);
    CHECK_FALSE(SameConnection(a, c));
    CHECK_FALSE(SameConnection(c, a));
  }
}

}  // namespace gantry::inventory
