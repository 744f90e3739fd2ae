// LoadDaemonConfig: gantry.yaml into a DaemonConfig, strictly. Every error
// names the file, the line and the field: "config PATH: line N: FIELD: WHAT".
#include "gantry/daemon/daemon_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>

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

// "config PATH: line N: FIELD: WHAT", or without FIELD at the top.
Status FieldError(const std::string& path, int line, std::string_view field,
                  std::string_view what) {
  if (field.empty()) {
    return Status::Invalid(fmt::format("config {}: line {}: {}", path, line, what));
  }
  return Status::Invalid(fmt::format("config {}: line {}: {}: {}", path, line, field, what));
}

std::string Child(std::string_view at, std::string_view key) {
  return at.empty() ? std::string(key) : fmt::format("{}.{}", at, key);
}

// The keys of the mapping `map` at `at` ("" at the top, else "tls",
// "genericKinds[0]") are strings, each given once. yaml-cpp keeps both
// entries of a key given twice, so the last would silently win.
Status CheckKeys(const std::string& path, const YAML::Node& map, std::string_view at) {
  std::map<std::string, int> first_line;
  for (const auto& kv : map) {
    const int line = LineOf(kv.first);
    if (!kv.first.IsScalar()) return FieldError(path, line, at, "keys must be strings");
    const std::string& key = kv.first.Scalar();
    if (auto [it, fresh] = first_line.emplace(key, line); !fresh) {
      return FieldError(path, line, Child(at, key),
                        fmt::format("given twice (first on line {})", it->second));
    }
  }
  return Status::Ok();
}

// tls: {certFile, keyFile}, the mapping at `line`.
Status ReadTls(const std::string& path, const YAML::Node& tls, int line, DaemonConfig& c) {
  // Iterating a scalar finds nothing: `tls: true` served plaintext.
  if (!tls.IsMap()) return FieldError(path, line, "tls", "must be a mapping {certFile, keyFile}");
  GANTRY_RETURN_IF_ERROR(CheckKeys(path, tls, "tls"));
  for (const auto& t : tls) {
    const std::string& key = t.first.Scalar();
    const std::string field = Child("tls", key);
    const int key_line = LineOf(t.first);
    std::string* out = key == "certFile"  ? &c.tls_cert_file
                       : key == "keyFile" ? &c.tls_key_file
                                          : nullptr;
    if (!out) return FieldError(path, key_line, field, "unknown field");
    if (t.second.IsNull()) return FieldError(path, key_line, field, kNoValue);
    if (!t.second.IsScalar()) return FieldError(path, key_line, field, "must be a string");
    *out = t.second.Scalar();
  }
  return Status::Ok();
}

// genericKinds: a list of {apiVersion, kind}, at `line`.
Status ReadGenericKinds(const std::string& path, const YAML::Node& list, int line,
                        std::vector<KindRef>& out) {
  if (!list.IsSequence()) return FieldError(path, line, "genericKinds", "must be a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string at = fmt::format("genericKinds[{}]", i);
    if (!item.IsMap()) {
      return FieldError(path, LineOf(item), at, "must be a mapping {apiVersion, kind}");
    }
    GANTRY_RETURN_IF_ERROR(CheckKeys(path, item, at));
    KindRef k;
    for (const auto& f : item) {
      const std::string& key = f.first.Scalar();
      const std::string field = Child(at, key);
      if (key != "apiVersion" && key != "kind") {
        return FieldError(path, LineOf(f.first), field, "unknown field");
      }
      // A bare `kind:` is YAML null, which as<std::string>() would read as "null".
      if (!f.second.IsScalar()) return FieldError(path, LineOf(f.first), field, "must be a string");
      (key == "kind" ? k.kind : k.api_version) = f.second.Scalar();
    }
    out.push_back(std::move(k));
  }
  return Status::Ok();
}

// "line N: " of the field a ValidateDaemonConfig message begins with
// ("clusterLostTimeoutSeconds must be 1..604800", "tls.certFile and ..."),
// when the file gives it; "" for a default or a message about no one field.
std::string LineOfMessage(std::string_view message, const std::map<std::string, int, std::less<>>& lines) {
  const std::size_t end = message.find_first_of(" .");
  auto it = lines.find(message.substr(0, end));
  return it == lines.end() ? "" : fmt::format("line {}: ", it->second);
}

}  // namespace

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
  auto str = [](std::string* out) -> Setter {
    return [out](const YAML::Node& n) { *out = n.as<std::string>(); };
  };
  // Whole numbers in decimal. One past int's range is told as one, not as
  // a wrong type; and a leading 0 is refused, where yaml-cpp would read 010
  // as octal 8, 0x10 as hex, and 08 as no number.
  auto num = [](int* out) -> Setter {
    return [out](const YAML::Node& n) {
      const std::string text = n.IsScalar() ? n.Scalar() : "";
      const std::size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
      if (text.size() > sign + 1 && text[sign] == '0' && text[sign + 1] != '.') {
        throw std::invalid_argument(
            fmt::format("{} is not a whole number in decimal (a leading 0 reads as octal, 0x as hex)", text));
      }
      const bool all_digits = text.size() > sign && text.find_first_not_of("0123456789", sign) == std::string::npos;
      long long wide = 0;
      const bool decoded = YAML::convert<long long>::decode(n, wide);
      if ((all_digits && !decoded) ||
          (decoded && (wide > std::numeric_limits<int>::max() || wide < std::numeric_limits<int>::min()))) {
        throw std::out_of_range(fmt::format("{} is out of range", text));
      }
      *out = n.as<int>();
    };
  };
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
      {"jobRecordRetentionSeconds", num(&c.job_record_retention_seconds)},
      {"leaseOn", str(&c.lease_on)},
      {"dispatchWorkers", num(&c.dispatch_workers)},
      {"dispatchWorkersMin", num(&c.dispatch_workers_min)},
      {"clusterConnections", num(&c.cluster_connections)},
      {"clusterConnectionsMin", num(&c.cluster_connections_min)},
      {"clusterStallSeconds", num(&c.cluster_stall_seconds)},
      {"probeIntervalSeconds", num(&c.probe_interval_seconds)},
      {"probeFailureThreshold", num(&c.probe_failure_threshold)},
      {"rejectionBackoffSeconds", num(&c.rejection_backoff_seconds)},
      {"rejectionBackoffMaxSeconds", num(&c.rejection_backoff_max_seconds)},
      {"jobRefusalHoldSeconds", num(&c.job_refusal_hold_seconds)},
      {"preemptionGateSeconds", num(&c.preemption_gate_seconds)},
      {"maxCopies", num(&c.max_copies)},
      {"listErrorsToldAfterSeconds", num(&c.list_errors_told_after_seconds)},
      {"notFoundConfirmsAfterSeconds", num(&c.not_found_confirms_after_seconds)},
      {"resyncSeconds", num(&c.resync_seconds)},
      {"gcIntervalSeconds", num(&c.gc_interval_seconds)},
      {"jobsMetricSeconds", num(&c.jobs_metric_seconds)},
      {"resyncPassesPerSecond", num(&c.resync_passes_per_second)},
  };
  GANTRY_RETURN_IF_ERROR(CheckKeys(path, root, ""));
  std::map<std::string, int, std::less<>> lines;  // of each top-level key given
  for (const auto& kv : root) {
    const std::string& key = kv.first.Scalar();
    const int line = LineOf(kv.first);
    lines[key] = line;
    if (key != "genericKinds" && key != "tls" && !fields.count(key)) {
      return FieldError(path, line, key, "unknown field");
    }
    if (kv.second.IsNull()) return FieldError(path, line, key, kNoValue);
    if (key == "genericKinds") {
      GANTRY_RETURN_IF_ERROR(ReadGenericKinds(path, kv.second, line, c.generic_kinds));
    } else if (key == "tls") {
      GANTRY_RETURN_IF_ERROR(ReadTls(path, kv.second, line, c));
    } else {
      try {
        fields.at(key)(kv.second);
      } catch (const YAML::Exception& e) {
        return FieldError(path, line, key, fmt::format("wrong type ({})", e.msg));
      } catch (const std::logic_error& e) {  // num's out_of_range and invalid_argument
        return FieldError(path, line, key, e.what());
      }
    }
  }
  Status valid = ValidateDaemonConfig(c);
  if (!valid.ok()) return Status::Invalid(fmt::format("config {}: {}{}", path, LineOfMessage(valid.message(), lines),
                                                      valid.message()));
  return c;
}

}  // namespace gantry
