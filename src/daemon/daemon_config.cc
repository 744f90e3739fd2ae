#include "gantry/daemon/daemon_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>

#include "gantry/common/names.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry {
namespace {

// A key given no value (`origin:`, `dataDir: ~`) is YAML null, which
// as<std::string>() reads as "null": gantry would label its objects "null"
// and stop knowing them, or open ./null as its data directory. It is
// refused rather than taken as the default: a blank is most often an edit
// left half done or a template variable that came out empty, and some
// defaults are a guess that goes wrong quietly (no tls: plaintext). An
// empty string, when a key takes one, is written "".
constexpr std::string_view kNoValue =
    "has no value: give one, or remove the line to keep the default";

int LineOf(const YAML::Node& node) { return node.Mark().line + 1; }

// The keys of the mapping `map` at `at` ("" at the top, else "tls",
// "genericKinds[0]") are strings, each given once. yaml-cpp keeps both
// entries of a key given twice, so the last would silently win.
Status CheckKeys(const std::string& path, const YAML::Node& map, const std::string& at) {
  std::map<std::string, int> first_line;
  for (const auto& kv : map) {
    const int line = LineOf(kv.first);
    if (!kv.first.IsScalar()) {
      return Status::Invalid(fmt::format("config {}: line {}: {}keys must be strings", path, line,
                                         at.empty() ? "" : at + ": "));
    }
    const std::string& key = kv.first.Scalar();
    if (auto [it, fresh] = first_line.emplace(key, line); !fresh) {
      return Status::Invalid(fmt::format("config {}: line {}: {}{}: given twice (first on line {})", path, line,
                                         at.empty() ? "" : at + ".", key, it->second));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseListen(const std::string& listen, std::string* address, uint16_t* port) {
  std::string host, port_text;
  if (!listen.empty() && listen.front() == '[') {
    auto close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return Status::Invalid("listen '" + listen + "' must look like [::1]:7070");
    }
    host = listen.substr(1, close - 1);
    port_text = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return Status::Invalid("listen '" + listen + "' must be ADDR:PORT");
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
  }
  if (host.empty() || port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos || std::stoi(port_text) > 65535) {
    return Status::Invalid("listen '" + listen + "' must be ADDR:PORT with a port from 0 to 65535");
  }
  *address = host;
  *port = static_cast<uint16_t>(std::stoi(port_text));
  return Status::Ok();
}

Status ValidateDaemonConfig(const DaemonConfig& c) {
  std::string address;
  uint16_t port;
  GANTRY_RETURN_IF_ERROR(ParseListen(c.listen, &address, &port));
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return Status::Invalid("tls.certFile and tls.keyFile must be set together");
  }
  if (c.max_body_bytes < 1024 || c.max_body_bytes > (64u << 20)) {
    return Status::Invalid("maxBodyBytes must be from 1024 to 67108864");
  }
  auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  if (!in(c.read_timeout_seconds, 1, 3600)) return Status::Invalid("readTimeoutSeconds must be 1..3600");
  if (!in(c.idle_timeout_seconds, 1, 3600)) return Status::Invalid("idleTimeoutSeconds must be 1..3600");
  if (!in(c.shutdown_grace_seconds, 0, 600)) return Status::Invalid("shutdownGraceSeconds must be 0..600");
  // Several HTTP threads need a strand per connection, and that path is not
  // yet memory-safe on this toolchain (see http/server.cc): one thread only.
  if (c.http_threads != 1) return Status::Invalid("httpThreads must be 1 (more are not supported yet)");
  if (c.log_format != "text" && c.log_format != "json") return Status::Invalid("logFormat must be text or json");
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
  bool level_ok = false;
  for (const char* l : kLevels) level_ok |= c.log_level == l;
  if (!level_ok) return Status::Invalid("logLevel must be trace, debug, info, warn or error");
  if (!in(c.cluster_lost_timeout_seconds, 1, 7 * 86400)) {
    return Status::Invalid("clusterLostTimeoutSeconds must be 1..604800");
  }
  if (!in(c.credentials_refused_timeout_seconds, 0, 30 * 86400)) {
    return Status::Invalid("credentialsRefusedTimeoutSeconds must be 0..2592000 (0: never)");
  }
  if (!in(c.declared_lost_grace_seconds, 0, 86400)) {
    return Status::Invalid("declaredLostGraceSeconds must be 0..86400");
  }
  if (!in(c.finished_retention_seconds, 0, 7 * 86400)) {
    return Status::Invalid("finishedRetentionSeconds must be 0..604800");
  }
  if (c.lease_on != "Admitted" && c.lease_on != "QuotaReserved") {
    return Status::Invalid("leaseOn must be Admitted or QuotaReserved");
  }
  if (!in(c.dispatch_workers, 1, 256)) return Status::Invalid("dispatchWorkers must be 1..256");
  if (!in(c.dispatch_workers_min, 1, 256)) return Status::Invalid("dispatchWorkersMin must be 1..256");
  if (!in(c.cluster_connections, 1, 256)) return Status::Invalid("clusterConnections must be 1..256");
  if (!in(c.cluster_connections_min, 1, 256)) return Status::Invalid("clusterConnectionsMin must be 1..256");
  if (!in(c.probe_interval_seconds, 1, 3600)) return Status::Invalid("probeIntervalSeconds must be 1..3600");
  if (!in(c.rejection_backoff_seconds, 1, 3600)) return Status::Invalid("rejectionBackoffSeconds must be 1..3600");
  if (!in(c.rejection_backoff_max_seconds, 1, 86400)) {
    return Status::Invalid("rejectionBackoffMaxSeconds must be 1..86400");
  }
  if (c.rejection_backoff_max_seconds < c.rejection_backoff_seconds) {
    return Status::Invalid(fmt::format("rejectionBackoffMaxSeconds ({}) must be at least rejectionBackoffSeconds ({})",
                                       c.rejection_backoff_max_seconds, c.rejection_backoff_seconds));
  }
  if (!in(c.list_errors_told_after_seconds, 1, 86400)) {
    return Status::Invalid("listErrorsToldAfterSeconds must be 1..86400");
  }
  if (!in(c.not_found_confirms_after_seconds, 1, 86400)) {
    return Status::Invalid("notFoundConfirmsAfterSeconds must be 1..86400");
  }
  if (!in(c.resync_seconds, 1, 3600)) return Status::Invalid("resyncSeconds must be 1..3600");
  if (!in(c.gc_interval_seconds, 1, 3600)) return Status::Invalid("gcIntervalSeconds must be 1..3600");
  if (!in(c.resync_passes_per_second, 0, 100000)) {
    return Status::Invalid("resyncPassesPerSecond must be 0..100000 (0: the backstop never stretches)");
  }
  if (!in(c.preemption_gate_seconds, 0, 86400)) {
    return Status::Invalid("preemptionGateSeconds must be 0..86400 (0: no gates, every copy may preempt at once)");
  }
  if (c.origin.empty() || c.origin.size() > 63) return Status::Invalid("origin must be a label value of 1..63 characters");
  // It is the value of the label gantry finds its objects by: one the API
  // server refuses would fail every create.
  if (std::string e = CheckLabelValue(c.origin); !e.empty()) {
    return Status::Invalid(
        fmt::format("origin \"{}\" {} (it is the value of the label {})", c.origin, e, dispatch::kOriginLabel));
  }
  auto group_of = [](const KindRef& k) { return k.api_version.substr(0, k.api_version.find('/')); };
  for (std::size_t i = 0; i < c.generic_kinds.size(); ++i) {
    const KindRef& k = c.generic_kinds[i];
    const std::string at = fmt::format("genericKinds[{}]", i);
    if (k.api_version.find('/') == std::string::npos) {
      return Status::Invalid(at + ".apiVersion must be group/version (a custom resource's)");
    }
    if (auto path = dispatch::KindPath(k.api_version, k.kind, ""); !path.ok()) {
      return Status::Invalid(at + ": " + path.status().message());
    }
    if (dispatch::HasAdapter(k.api_version, k.kind)) {
      return Status::Invalid(at + ": " + k.kind + " has its own adapter and is always watched");
    }
    const std::string group = group_of(k);
    if (group == "kueue.x-k8s.io") return Status::Invalid(at + ": Kueue's own kinds are not jobs");
    for (std::size_t j = 0; j < i; ++j) {
      const KindRef& o = c.generic_kinds[j];
      if (o.kind == k.kind && group_of(o) == group) {
        return Status::Invalid(fmt::format("{}: {} of {} is listed already (genericKinds[{}]); list one version",
                                           at, k.kind, group, j));
      }
    }
  }
  return Status::Ok();
}

Result<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  DaemonConfig c;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Status::Io(fmt::format("config {}: cannot be read", path));
  } catch (const YAML::Exception& e) {
    return Status::Invalid(fmt::format("config {}: line {}: {}", path, e.mark.line + 1, e.msg));
  }
  if (root.IsNull()) return c;
  if (!root.IsMap()) return Status::Invalid(fmt::format("config {}: must be a mapping", path));
  using Setter = std::function<void(const YAML::Node&)>;
  auto str = [](std::string* out) -> Setter { return [out](const YAML::Node& n) { *out = n.as<std::string>(); }; };
  auto num = [](int* out) -> Setter { return [out](const YAML::Node& n) { *out = n.as<int>(); }; };
  std::map<std::string, Setter> fields = {
      {"listen", str(&c.listen)},
      {"dataDir", str(&c.data_dir)},
      {"tokensFile", str(&c.tokens_file)},
      {"maxBodyBytes", [&c](const YAML::Node& n) { c.max_body_bytes = n.as<std::size_t>(); }},
      {"readTimeoutSeconds", num(&c.read_timeout_seconds)},
      {"idleTimeoutSeconds", num(&c.idle_timeout_seconds)},
      {"shutdownGraceSeconds", num(&c.shutdown_grace_seconds)},
      {"httpThreads", num(&c.http_threads)},
      {"logLevel", str(&c.log_level)},
      {"logFormat", str(&c.log_format)},
      {"clustersDir", str(&c.clusters_dir)},
      {"origin", str(&c.origin)},
      {"clusterLostTimeoutSeconds", num(&c.cluster_lost_timeout_seconds)},
      {"credentialsRefusedTimeoutSeconds", num(&c.credentials_refused_timeout_seconds)},
      {"declaredLostGraceSeconds", num(&c.declared_lost_grace_seconds)},
      {"finishedRetentionSeconds", num(&c.finished_retention_seconds)},
      {"leaseOn", str(&c.lease_on)},
      {"dispatchWorkers", num(&c.dispatch_workers)},
      {"dispatchWorkersMin", num(&c.dispatch_workers_min)},
      {"clusterConnections", num(&c.cluster_connections)},
      {"clusterConnectionsMin", num(&c.cluster_connections_min)},
      {"probeIntervalSeconds", num(&c.probe_interval_seconds)},
      {"rejectionBackoffSeconds", num(&c.rejection_backoff_seconds)},
      {"rejectionBackoffMaxSeconds", num(&c.rejection_backoff_max_seconds)},
      {"preemptionGateSeconds", num(&c.preemption_gate_seconds)},
      {"listErrorsToldAfterSeconds", num(&c.list_errors_told_after_seconds)},
      {"notFoundConfirmsAfterSeconds", num(&c.not_found_confirms_after_seconds)},
      {"resyncSeconds", num(&c.resync_seconds)},
      {"gcIntervalSeconds", num(&c.gc_interval_seconds)},
      {"resyncPassesPerSecond", num(&c.resync_passes_per_second)},
  };
  GANTRY_RETURN_IF_ERROR(CheckKeys(path, root, ""));
  for (const auto& kv : root) {
    const std::string& key = kv.first.Scalar();
    const int line = LineOf(kv.first);
    if (key != "genericKinds" && key != "tls" && !fields.count(key)) {
      return Status::Invalid(fmt::format("config {}: line {}: {}: unknown field", path, line, key));
    }
    if (kv.second.IsNull()) {
      return Status::Invalid(fmt::format("config {}: line {}: {}: {}", path, line, key, kNoValue));
    }
    try {
      if (key == "genericKinds") {
        if (!kv.second.IsSequence()) {
          return Status::Invalid(fmt::format("config {}: line {}: genericKinds: must be a list", path, line));
        }
        for (std::size_t i = 0; i < kv.second.size(); ++i) {
          const YAML::Node item = kv.second[i];
          const std::string at = fmt::format("genericKinds[{}]", i);
          if (!item.IsMap()) {
            return Status::Invalid(fmt::format("config {}: line {}: {}: must be a mapping {{apiVersion, kind}}", path,
                                               item.Mark().line + 1, at));
          }
          GANTRY_RETURN_IF_ERROR(CheckKeys(path, item, at));
          KindRef k;
          for (const auto& f : item) {
            const std::string& fk = f.first.Scalar();
            const int field_line = LineOf(f.first);
            if (fk != "apiVersion" && fk != "kind") {
              return Status::Invalid(fmt::format("config {}: line {}: {}.{}: unknown field", path, field_line, at, fk));
            }
            // A bare `kind:` is YAML null, which as<std::string>() would read as "null".
            if (!f.second.IsScalar()) {
              return Status::Invalid(fmt::format("config {}: line {}: {}.{}: must be a string", path, field_line, at, fk));
            }
            (fk == "kind" ? k.kind : k.api_version) = f.second.Scalar();
          }
          c.generic_kinds.push_back(std::move(k));
        }
        continue;
      }
      if (key == "tls") {
        // Iterating a scalar finds nothing: `tls: true` served plaintext.
        if (!kv.second.IsMap()) {
          return Status::Invalid(
              fmt::format("config {}: line {}: tls: must be a mapping {{certFile, keyFile}}", path, line));
        }
        GANTRY_RETURN_IF_ERROR(CheckKeys(path, kv.second, "tls"));
        for (const auto& t : kv.second) {
          const std::string& tk = t.first.Scalar();
          const int tls_line = LineOf(t.first);
          std::string* out = tk == "certFile"  ? &c.tls_cert_file
                             : tk == "keyFile" ? &c.tls_key_file
                                               : nullptr;
          if (!out) {
            return Status::Invalid(fmt::format("config {}: line {}: tls.{}: unknown field", path, tls_line, tk));
          }
          if (t.second.IsNull()) {
            return Status::Invalid(fmt::format("config {}: line {}: tls.{}: {}", path, tls_line, tk, kNoValue));
          }
          if (!t.second.IsScalar()) {
            return Status::Invalid(fmt::format("config {}: line {}: tls.{}: must be a string", path, tls_line, tk));
          }
          *out = t.second.Scalar();
        }
        continue;
      }
      fields.at(key)(kv.second);
    } catch (const YAML::Exception& e) {
      return Status::Invalid(fmt::format("config {}: line {}: {}: wrong type ({})", path, line, key, e.msg));
    }
  }
  Status valid = ValidateDaemonConfig(c);
  if (!valid.ok()) return Status::Invalid(fmt::format("config {}: {}", path, valid.message()));
  return c;
}

}  // namespace gantry
