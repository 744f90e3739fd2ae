#include "gantry/inventory/config_changes.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gantry/common/cut_text.h"

namespace gantry::inventory {
namespace {

// A value from a cluster's file, as told in a log line: control characters
// (a newline would forge a line) made harmless.
std::string OrNone(const std::string& s) { return s.empty() ? "(none)" : CleanText(s); }

// A label's value: empty is a value, not its absence.
std::string LabelValue(const std::string& s) { return s.empty() ? "\"\"" : CleanText(s); }

std::string OrNone(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : "(none)"; }

// "+a, -b" for two lists taken as sets; "reordered" when only the order differs.
std::string ListDiff(const std::vector<std::string>& was, const std::vector<std::string>& now) {
  const std::set<std::string> a(was.begin(), was.end());
  const std::set<std::string> b(now.begin(), now.end());
  std::vector<std::string> parts;
  for (const std::string& x : b) {
    if (!a.count(x)) parts.push_back("+" + CleanText(x));
  }
  for (const std::string& x : a) {
    if (!b.count(x)) parts.push_back("-" + CleanText(x));
  }
  return parts.empty() ? "reordered" : fmt::format("{}", fmt::join(parts, ", "));
}

// "+k=v, -k, k: a -> b".
std::string MapDiff(const std::map<std::string, std::string>& was, const std::map<std::string, std::string>& now) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : now) {
    auto it = was.find(k);
    if (it == was.end()) {
      parts.push_back(fmt::format("+{}={}", CleanText(k), LabelValue(v)));
    } else if (it->second != v) {
      parts.push_back(fmt::format("{}: {} -> {}", CleanText(k), LabelValue(it->second), LabelValue(v)));
    }
  }
  for (const auto& [k, v] : was) {
    if (!now.count(k)) parts.push_back("-" + CleanText(k));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string ConfigChanges(const ClusterConfig& was, const ClusterConfig& now) {
  std::vector<std::string> out;
  auto flag = [&](bool a, bool b, const char* set, const char* cleared) {
    if (a != b) out.emplace_back(b ? set : cleared);
  };
  auto scalar = [&](const char* field, const std::string& a, const std::string& b) {
    if (a != b) out.push_back(fmt::format("{} {} -> {}", field, OrNone(a), OrNone(b)));
  };
  auto list = [&](const char* field, const std::vector<std::string>& a, const std::vector<std::string>& b) {
    if (a != b) out.push_back(fmt::format("{} ({})", field, ListDiff(a, b)));
  };
  auto named = [&](const char* field, bool differ) {
    if (differ) out.emplace_back(field);
  };
  flag(was.cordoned, now.cordoned, "cordoned", "no longer cordoned");
  flag(was.declared_lost, now.declared_lost, "declared lost", "no longer declared lost");
  scalar("region", was.region, now.region);
  scalar("zone", was.zone, now.zone);
  scalar("provider", was.provider, now.provider);
  scalar("kueueAPIVersion", std::string(KueueApiVersionName(was.kueue_api_version)),
         std::string(KueueApiVersionName(now.kueue_api_version)));
  list("complianceZones", was.compliance_zones, now.compliance_zones);
  if (was.labels != now.labels) out.push_back(fmt::format("labels ({})", MapDiff(was.labels, now.labels)));
  named("accelerators", was.accelerators != now.accelerators);
  named("nodes", was.nodes != now.nodes);
  const GpuPrice& pa = was.price_per_gpu_hour;
  const GpuPrice& pb = now.price_per_gpu_hour;
  if (pa.on_demand != pb.on_demand) {
    out.push_back(fmt::format("pricePerGPUHour.onDemand {} -> {}", OrNone(pa.on_demand), OrNone(pb.on_demand)));
  }
  if (pa.spot != pb.spot) {
    out.push_back(fmt::format("pricePerGPUHour.spot {} -> {}", OrNone(pa.spot), OrNone(pb.spot)));
  }
  list("datasets", was.datasets, now.datasets);
  list("excludeResourcePrefixes", was.exclude_resource_prefixes, now.exclude_resource_prefixes);
  if (was.local_queues != now.local_queues) {
    out.push_back(fmt::format("localQueues ({})", MapDiff(was.local_queues, now.local_queues)));
  }
  named("kubeconfig", was.kubeconfig != now.kubeconfig || was.context != now.context);
  named("allowInsecure", was.allow_insecure != now.allow_insecure);
  ClusterConfig rest = was;  // a field not named above: said so, not left out
  rest.source_file = now.source_file;
  if (out.empty() && !(rest == now)) out.emplace_back("other settings");
  return fmt::format("{}", fmt::join(out, ", "));
}

std::string CredentialChanges(const ClusterCredentials& was, const ClusterCredentials& now) {
  std::vector<std::string> out;
  if (was.server != now.server) out.push_back(fmt::format("API server {} -> {}", was.server, now.server));
  if (was.tls_server_name != now.tls_server_name) {
    out.push_back(fmt::format("tls-server-name {} -> {}", OrNone(was.tls_server_name), OrNone(now.tls_server_name)));
  }
  if (was.ca_pem != now.ca_pem) out.emplace_back("certificate authority");
  if (was.insecure != now.insecure) out.emplace_back(now.insecure ? "TLS verification off" : "TLS verification on");
  const bool same_token = was.token_source == now.token_source ||
                          (was.token_source && now.token_source && was.token_source->SameSource(*now.token_source));
  if (!same_token || was.client_cert_pem != now.client_cert_pem || was.client_key_pem != now.client_key_pem) {
    out.emplace_back("client credentials");
  }
  if (out.empty() && !SameConnection(was, now)) out.emplace_back("connection settings");
  return out.empty() ? "" : fmt::format("kubeconfig ({})", fmt::join(out, ", "));
}

}  // namespace gantry::inventory
