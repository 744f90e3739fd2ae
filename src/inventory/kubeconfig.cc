#include "gantry/inventory/kubeconfig.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "kubeconfig_exec.h"
#include "pem.h"
#include "server_url.h"
#include "yaml_reader.h"

namespace gantry::inventory {
namespace {

namespace fs = std::filesystem;
using internal::Field;

// Reading state for one kubeconfig: where relative paths start. Errors from
// the helpers below carry "line N: field: what"; ParseKubeconfig adds the file.
struct Reader {
  std::string base_dir;

  bool Has(const YAML::Node& map, std::string_view key) const {
    const YAML::Node n = map[std::string(key)];
    return n && !n.IsNull();
  }

  std::string Resolve(const std::string& path) const {
    fs::path p(path);
    if (p.is_relative()) p = fs::path(base_dir) / p;
    return p.lexically_normal().string();
  }

  // PEM material given inline (base64 in `data_key`) or as a file (`file_key`);
  // "" when neither is set. Both set is an error, as kubectl's validation has it.
  Result<std::string> Material(const YAML::Node& map, const Field& parent,
                               std::string_view data_key, std::string_view file_key) const {
    Result<std::string> data = internal::ReadOptionalString(map, parent, data_key);
    if (!data.ok()) return data.status();
    Result<std::string> file = internal::ReadOptionalString(map, parent, file_key);
    if (!file.ok()) return file.status();
    const Field data_field = parent.Child(data_key, internal::LineOf(map[std::string(data_key)]));
    if (!data->empty() && !file->empty()) {
      return internal::FieldError(data_field,
                                  fmt::format("set together with {}; use one", file_key));
    }
    if (!data->empty()) {
      Result<std::string> decoded = internal::DecodeBase64(*data);
      if (!decoded.ok()) return internal::FieldError(data_field, decoded.status().message());
      return decoded;
    }
    if (file->empty()) return std::string();
    Result<std::string> content = internal::ReadSmallFile(Resolve(*file));
    if (!content.ok()) {
      const Field file_field = parent.Child(file_key, internal::LineOf(map[std::string(file_key)]));
      return internal::FieldError(file_field, content.status().message());
    }
    return content;
  }
};

// The `inner` mapping of the entry named `name` in the list `root[list]`
// (e.g. contexts[gantry].context), with its field path in *field.
Result<YAML::Node> FindNamed(const YAML::Node& root, std::string_view list, std::string_view inner,
                             const std::string& name, Field* field) {
  const YAML::Node entries = root[std::string(list)];
  if (entries && entries.IsSequence()) {
    for (const YAML::Node& entry : entries) {
      if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar() ||
          entry["name"].Scalar() != name) {
        continue;
      }
      const YAML::Node value = entry[std::string(inner)];
      *field = Field{fmt::format("{}[{}].{}", list, name, inner), internal::LineOf(entry)};
      if (!value || !value.IsMap()) return internal::FieldError(*field, "must be a mapping");
      return value;
    }
  }
  return internal::FieldError({std::string(list), internal::LineOf(root)},
                              fmt::format("no entry named '{}'", name));
}

Status ReadCluster(const Reader& r, const YAML::Node& cluster, const Field& f, bool allow_insecure,
                   ClusterCredentials& out) {
  if (r.Has(cluster, "proxy-url")) {
    return internal::FieldError(f.Child("proxy-url", internal::LineOf(cluster["proxy-url"])),
                                "proxies are not supported");
  }
  Result<std::string> server = internal::ReadOptionalString(cluster, f, "server");
  if (!server.ok()) return server.status();
  if (server->empty()) return internal::FieldError(f.Child("server", f.line), "is missing");
  Result<internal::ServerAddress> address = internal::ParseServerUrl(*server);
  if (!address.ok()) {
    return internal::FieldError(f.Child("server", internal::LineOf(cluster["server"])),
                                address.status().message());
  }
  out.server = *server;
  out.host = address->host;
  out.port = address->port;
  out.base_path = address->base_path;
  Result<std::string> sni = internal::ReadOptionalString(cluster, f, "tls-server-name");
  if (!sni.ok()) return sni.status();
  out.tls_server_name = *sni;
  Result<std::string> ca =
      r.Material(cluster, f, "certificate-authority-data", "certificate-authority");
  if (!ca.ok()) return ca.status();
  if (!ca->empty()) {
    if (Status s = internal::CheckCertificatePem(*ca); !s.ok()) {
      return internal::FieldError(f.Child("certificate-authority", f.line), s.message());
    }
  }
  out.ca_pem = std::move(ca).value();
  if (const YAML::Node n = cluster["insecure-skip-tls-verify"]; n && !n.IsNull()) {
    const Field nf = f.Child("insecure-skip-tls-verify", internal::LineOf(n));
    Result<bool> insecure = internal::ReadBool(n, nf);
    if (!insecure.ok()) return insecure.status();
    if (*insecure && !out.ca_pem.empty()) {
      return internal::FieldError(nf, "cannot be combined with a certificate authority");
    }
    if (*insecure && !allow_insecure) {
      return internal::FieldError(
          nf,
          "refused; set allowInsecure: true in the cluster file to accept an unverified server");
    }
    out.insecure = *insecure;
  }
  return Status::Ok();
}

Status ReadUser(const Reader& r, const YAML::Node& user, const Field& f, ClusterCredentials& out) {
  if (r.Has(user, "auth-provider")) {
    return internal::FieldError(
        f.Child("auth-provider", internal::LineOf(user["auth-provider"])),
        "auth-provider plugins are not supported; use a service-account token");
  }
  if (r.Has(user, "username") || r.Has(user, "password")) {
    return internal::FieldError(
        f, "basic authentication is not supported; use a service-account token");
  }
  // Values of token fields are never put into a message: ReadString's
  // messages name the field and the type only.
  Result<std::string> token = internal::ReadOptionalString(user, f, "token");
  if (!token.ok()) return token.status();
  Result<std::string> token_file = internal::ReadOptionalString(user, f, "tokenFile");
  if (!token_file.ok()) return token_file.status();
  // Trimmed as the source trims it; what is left must be one token.
  if (std::string problem = BearerTokenProblem(TrimToken(*token)); !problem.empty()) {
    return internal::FieldError(f.Child("token", internal::LineOf(user["token"])), problem);
  }
  if (!token->empty() && !token_file->empty()) {
    return internal::FieldError(f.Child("token", internal::LineOf(user["token"])),
                                "set together with tokenFile; use one");
  }
  if (r.Has(user, "exec")) {
    const Field exec_field = f.Child("exec", internal::LineOf(user["exec"]));
    if (!token->empty() || !token_file->empty()) {
      return internal::FieldError(exec_field, fmt::format("set together with {}; use one",
                                                          token->empty() ? "tokenFile" : "token"));
    }
    Result<ExecConfig> exec = internal::ReadExecConfig(user["exec"], exec_field, r.base_dir);
    if (!exec.ok()) return exec.status();
    if (exec->cluster) *exec->cluster = {out.server, out.tls_server_name, out.ca_pem, out.insecure};
    // Not run here: a plugin may take seconds, and a load must not wait on
    // the network. Its first request runs it, and says what went wrong.
    out.token_source = TokenSource::FromExec(std::move(exec).value());
  }
  if (!token->empty()) out.token_source = TokenSource::Static(*token);
  if (!token_file->empty()) {
    out.token_source = TokenSource::FromFile(r.Resolve(*token_file));
    Result<std::string> first = out.token_source->Token();  // fail fast on a wrong path
    if (!first.ok()) {
      return internal::FieldError(f.Child("tokenFile", internal::LineOf(user["tokenFile"])),
                                  first.status().message());
    }
  }
  Result<std::string> cert = r.Material(user, f, "client-certificate-data", "client-certificate");
  if (!cert.ok()) return cert.status();
  Result<std::string> key = r.Material(user, f, "client-key-data", "client-key");
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty()) {
    return internal::FieldError(f, "client certificate and client key must be set together");
  }
  if (!cert->empty()) {
    if (Status s = internal::CheckKeyPairPem(*cert, *key); !s.ok()) {
      return internal::FieldError(f, s.message());
    }
  }
  out.client_cert_pem = std::move(cert).value();
  out.client_key_pem = std::move(key).value();
  if (!out.token_source && out.client_cert_pem.empty()) {
    return internal::FieldError(
        f, "no credentials: needs token, tokenFile, exec or a client certificate");
  }
  return Status::Ok();
}

Status Parse(const Reader& r, const YAML::Node& root, const std::string& wanted_context,
             bool allow_insecure, ClusterCredentials& out) {
  if (!root.IsMap()) return internal::FieldError({"", 1}, "must be a mapping");
  const Field root_field{"", internal::LineOf(root)};
  std::string context_name = wanted_context;
  if (context_name.empty()) {
    Result<std::string> current = internal::ReadOptionalString(root, root_field, "current-context");
    if (!current.ok()) return current.status();
    if (current->empty()) {
      return internal::FieldError(root_field.Child("current-context", 1),
                                  "is not set and the cluster file names no context");
    }
    context_name = *current;
  }
  Field context_field;
  Result<YAML::Node> context = FindNamed(root, "contexts", "context", context_name, &context_field);
  if (!context.ok()) return context.status();
  Result<std::string> cluster_name =
      internal::ReadOptionalString(*context, context_field, "cluster");
  if (!cluster_name.ok()) return cluster_name.status();
  Result<std::string> user_name = internal::ReadOptionalString(*context, context_field, "user");
  if (!user_name.ok()) return user_name.status();
  if (cluster_name->empty() || user_name->empty()) {
    return internal::FieldError(context_field, "needs both cluster and user");
  }
  Field cluster_field;
  Result<YAML::Node> cluster =
      FindNamed(root, "clusters", "cluster", *cluster_name, &cluster_field);
  if (!cluster.ok()) return cluster.status();
  GANTRY_RETURN_IF_ERROR(ReadCluster(r, *cluster, cluster_field, allow_insecure, out));
  Field user_field;
  Result<YAML::Node> user = FindNamed(root, "users", "user", *user_name, &user_field);
  if (!user.ok()) return user.status();
  return ReadUser(r, *user, user_field, out);
}

}  // namespace

Result<ClusterCredentials> ParseKubeconfig(std::string_view yaml, const std::string& display,
                                           const std::string& base_dir, const std::string& context,
                                           bool allow_insecure) {
  ClusterCredentials out;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    Status s = Parse(Reader{base_dir}, root, context, allow_insecure, out);
    if (!s.ok()) return Status(s.code(), fmt::format("kubeconfig {}: {}", display, s.message()));
  } catch (const YAML::Exception& e) {
    // Only the position: a syntax error message may quote a token or key.
    return Status::Invalid(
        fmt::format("kubeconfig {}: line {}: invalid YAML", display, e.mark.line + 1));
  }
  return out;
}

Result<ClusterCredentials> LoadKubeconfig(const std::string& path, const std::string& context,
                                          bool allow_insecure) {
  Result<std::string> text = internal::ReadSmallFile(path);
  if (!text.ok()) return Status(text.status().code(), "kubeconfig " + text.status().message());
  return ParseKubeconfig(*text, path, fs::path(path).parent_path().string(), context,
                         allow_insecure);
}

Result<ClusterCredentials> LoadCredentials(const ClusterConfig& config) {
  Result<ClusterCredentials> creds =
      LoadKubeconfig(config.kubeconfig, config.context, config.allow_insecure);
  if (!creds.ok()) {
    return Status(creds.status().code(),
                  fmt::format("cluster {}: {}", config.name, creds.status().message()));
  }
  return creds;
}

bool SameConnection(const ClusterCredentials& a, const ClusterCredentials& b) {
  const bool same_token = a.token_source == b.token_source ||
                          (a.token_source && b.token_source && a.token_source->SameSource(*b.token_source));
  return a.server == b.server && a.host == b.host && a.port == b.port && a.base_path == b.base_path &&
         a.tls_server_name == b.tls_server_name && a.ca_pem == b.ca_pem &&
         a.client_cert_pem == b.client_cert_pem && a.client_key_pem == b.client_key_pem &&
         a.insecure == b.insecure && same_token;
}

}  // namespace gantry::inventory
