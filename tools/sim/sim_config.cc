#include "sim_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "gantry/common/names.h"
#include "gantry/job/quantity.h"

namespace gantry::sim {
namespace {

// Namespaces every simulated cluster serves LocalQueues in by default; each
// gets a LocalQueue named after the namespace (gantry's `queue: team-a`
// convention) and one named user-queue (Kueue's samples).
const char* const kDefaultNamespaces[] = {"default", "team-a", "team-b", "team-c"};

Result<int64_t> Quantity(const YAML::Node& n, const char* field) {
  auto q = ParseQuantityMilli(n.as<std::string>());
  if (!q.ok()) return Status::Invalid(fmt::format("{}: {}", field, q.status().message()));
  return *q;
}

Status ReadAdmissionChecks(const YAML::Node& list, std::vector<AdmissionCheckConfig>* out) {
  if (!list.IsSequence()) return Status::Invalid("admissionChecks: want a list of {name, outcome, delay}");
  std::set<std::string> names;
  for (const auto& n : list) {
    AdmissionCheckConfig check;
    for (const auto& kv : n) {
      std::string key = kv.first.as<std::string>();
      if (key != "name" && key != "outcome" && key != "delay") {
        return Status::Invalid(fmt::format("admissionChecks: unknown field {}", key));
      }
    }
    check.name = n["name"] ? n["name"].as<std::string>() : "";
    if (std::string err = CheckDns1123Subdomain(check.name); !err.empty()) {
      return Status::Invalid("admissionChecks: name: " + err);
    }
    if (!names.insert(check.name).second) {
      return Status::Invalid(fmt::format("admissionChecks: duplicate name {}", check.name));
    }
    if (n["outcome"]) {
      auto state = ParseCheckState(n["outcome"].as<std::string>());
      if (!state.ok()) return Status::Invalid("admissionChecks: outcome: " + state.status().message());
      check.outcome = *state;
    }
    if (n["delay"]) {
      auto ms = ParseDurationMs(n["delay"].as<std::string>());
      if (!ms.ok()) return Status::Invalid("admissionChecks: delay: " + ms.status().message());
      check.delay_ms = *ms;
    }
    // A Retry evicts the Workload and puts it back in the queue, where it
    // gets quota again at once: without a delay it would cycle every tick.
    if (check.outcome == CheckState::kRetry && check.delay_ms <= 0) {
      return Status::Invalid(fmt::format("admissionChecks: {}: outcome Retry needs a delay", check.name));
    }
    out->push_back(std::move(check));
  }
  return Status::Ok();
}

// preemption: {withinClusterQueue: Never | LowerPriority, victimStopDelay: <duration>}
Status ReadPreemption(const YAML::Node& n, ClusterConfig* c) {
  if (!n.IsMap()) {
    return Status::Invalid(
        "preemption: want {withinClusterQueue: Never | LowerPriority, victimStopDelay: <duration>}");
  }
  for (const auto& kv : n) {
    std::string key = kv.first.as<std::string>();
    if (key != "withinClusterQueue" && key != "victimStopDelay") {
      return Status::Invalid(fmt::format("preemption: unknown field {}", key));
    }
  }
  if (const YAML::Node within = n["withinClusterQueue"]) {
    auto policy = ParsePreemptionPolicy(within.as<std::string>());
    if (!policy.ok()) return Status::Invalid("preemption: withinClusterQueue: " + policy.status().message());
    c->within_cluster_queue = *policy;
  }
  if (const YAML::Node delay = n["victimStopDelay"]) {
    if (!delay.IsScalar()) return Status::Invalid("preemption: victimStopDelay: want a duration, e.g. 3s");
    auto ms = ParseDurationMs(delay.as<std::string>());
    if (!ms.ok()) return Status::Invalid("preemption: victimStopDelay: " + ms.status().message());
    c->victim_stop_delay_ms = *ms;
  }
  return Status::Ok();
}

Status ReadCluster(const YAML::Node& n, ClusterConfig* c) {
  static const std::set<std::string> kFields = {
      "name", "region", "zone", "labels", "accelerator", "nodes", "cpuPerNode", "memoryPerNode", "flavor",
      "clusterQueue", "quota", "localQueues", "pricePerGPUHour", "datasets", "excludeResourcePrefixes",
      "complianceZones",
      "kueueAPIVersion", "admissionDelay", "admissionChecks", "preemption", "jobDuration", "terminationGrace", "apiLatency",
      "watchTimeout", "historyLimit", "bookmarkInterval", "port"};
  for (const auto& kv : n) {
    std::string key = kv.first.as<std::string>();
    if (!kFields.count(key)) return Status::Invalid(fmt::format("unknown field {}", key));
  }
  c->name = n["name"] ? n["name"].as<std::string>() : "";
  if (std::string err = CheckDns1123Label(c->name); !err.empty()) return Status::Invalid("name: " + err);
  if (n["region"]) c->region = n["region"].as<std::string>();
  if (n["zone"]) c->zone = n["zone"].as<std::string>();
  if (n["labels"]) c->labels = n["labels"].as<std::map<std::string, std::string>>();
  if (const YAML::Node a = n["accelerator"]) {
    if (a["model"]) c->accelerator.model = a["model"].as<std::string>();
    if (a["memoryGiB"]) c->accelerator.memory_gib = a["memoryGiB"].as<int64_t>();
    if (a["gpusPerNode"]) c->accelerator.gpus_per_node = a["gpusPerNode"].as<int64_t>();
    if (a["interconnect"]) c->accelerator.interconnect = a["interconnect"].as<std::string>();
  }
  if (n["nodes"]) c->nodes = n["nodes"].as<int64_t>();
  if (n["cpuPerNode"]) {
    auto q = Quantity(n["cpuPerNode"], "cpuPerNode");
    if (!q.ok()) return q.status();
    c->cpu_per_node_milli = *q;
  }
  if (n["memoryPerNode"]) {
    auto q = Quantity(n["memoryPerNode"], "memoryPerNode");
    if (!q.ok()) return q.status();
    c->memory_per_node_milli = *q;
  }
  if (n["flavor"]) c->flavor = n["flavor"].as<std::string>();
  if (n["clusterQueue"]) c->cluster_queue = n["clusterQueue"].as<std::string>();
  if (const YAML::Node q = n["quota"]) {
    for (const auto& kv : q) {
      auto v = Quantity(kv.second, "quota");
      if (!v.ok()) return v.status();
      c->quota[kv.first.as<std::string>()] = *v;
    }
  }
  if (const YAML::Node lqs = n["localQueues"]) {
    for (const auto& lq : lqs) {
      std::string s = lq.as<std::string>();
      auto slash = s.find('/');
      if (slash == std::string::npos) return Status::Invalid("localQueues: want namespace/name, got " + s);
      c->local_queues.emplace_back(s.substr(0, slash), s.substr(slash + 1));
    }
  }
  if (n["pricePerGPUHour"]) c->price_per_gpu_hour = n["pricePerGPUHour"].as<double>();
  if (n["datasets"]) c->datasets = n["datasets"].as<std::vector<std::string>>();
  if (n["excludeResourcePrefixes"]) {
    c->exclude_resource_prefixes = n["excludeResourcePrefixes"].as<std::vector<std::string>>();
  }
  if (n["complianceZones"]) c->compliance_zones = n["complianceZones"].as<std::vector<std::string>>();
  if (n["kueueAPIVersion"]) c->kueue_api_version = n["kueueAPIVersion"].as<std::string>();
  struct Dur { const char* field; int64_t* out; };
  for (Dur d : {Dur{"admissionDelay", &c->admission_delay_ms}, Dur{"jobDuration", &c->job_duration_ms},
                Dur{"terminationGrace", &c->termination_grace_ms},
                Dur{"apiLatency", &c->api_latency_ms}, Dur{"bookmarkInterval", &c->bookmark_interval_ms}}) {
    if (!n[d.field]) continue;
    auto ms = ParseDurationMs(n[d.field].as<std::string>());
    if (!ms.ok()) return Status::Invalid(fmt::format("{}: {}", d.field, ms.status().message()));
    *d.out = *ms;
  }
  if (const YAML::Node checks = n["admissionChecks"]) {
    Status s = ReadAdmissionChecks(checks, &c->admission_checks);
    if (!s.ok()) return s;
  }
  if (const YAML::Node p = n["preemption"]) {
    Status s = ReadPreemption(p, c);
    if (!s.ok()) return s;
  }
  if (const YAML::Node w = n["watchTimeout"]) {
    std::vector<std::string> range = w.IsSequence() ? w.as<std::vector<std::string>>()
                                                    : std::vector<std::string>{w.as<std::string>()};
    if (range.empty() || range.size() > 2) return Status::Invalid("watchTimeout: one duration or [min, max]");
    auto lo = ParseDurationMs(range.front());
    auto hi = ParseDurationMs(range.back());
    if (!lo.ok() || !hi.ok() || *hi < *lo) return Status::Invalid("watchTimeout: bad durations");
    c->watch_timeout_min_ms = *lo;
    c->watch_timeout_max_ms = *hi;
  }
  if (n["historyLimit"]) c->history_limit = std::max<std::size_t>(1, n["historyLimit"].as<std::size_t>());
  if (n["port"]) c->port = n["port"].as<uint16_t>();
  FinishClusterConfig(c);
  return Status::Ok();
}

}  // namespace

Result<int64_t> ParseDurationMs(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  double v = 0;
  // The whole number part must parse (".", "1.2.3" do not; std::stod would
  // throw on the one and cut the other short).
  auto [end, err] = std::from_chars(text.data(), text.data() + i, v);
  if (i == 0 || err != std::errc() || end != text.data() + i) {
    return Status::Invalid(fmt::format("duration \"{}\": want e.g. 250ms, 30s, 5m, 1h", text));
  }
  std::string unit = text.substr(i);
  double scale = unit == "ms" ? 1 : unit == "s" || unit.empty() ? 1000 : unit == "m" ? 60'000 : unit == "h" ? 3'600'000 : -1;
  if (scale < 0) return Status::Invalid(fmt::format("duration \"{}\": unknown unit {}", text, unit));
  return static_cast<int64_t>(v * scale);
}

const char* CheckStateName(CheckState state) {
  switch (state) {
    case CheckState::kPending: return "Pending";
    case CheckState::kReady: return "Ready";
    case CheckState::kRetry: return "Retry";
    case CheckState::kRejected: return "Rejected";
  }
  return "Pending";
}

Result<CheckState> ParseCheckState(const std::string& name) {
  for (CheckState s : {CheckState::kPending, CheckState::kReady, CheckState::kRetry, CheckState::kRejected}) {
    if (name == CheckStateName(s)) return s;
  }
  return Status::Invalid(fmt::format("\"{}\": want Pending, Ready, Retry or Rejected", name));
}

const char* PreemptionPolicyName(PreemptionPolicy policy) {
  switch (policy) {
    case PreemptionPolicy::kNever: return "Never";
    case PreemptionPolicy::kLowerPriority: return "LowerPriority";
  }
  return "Never";
}

Result<PreemptionPolicy> ParsePreemptionPolicy(const std::string& name) {
  for (PreemptionPolicy p : {PreemptionPolicy::kNever, PreemptionPolicy::kLowerPriority}) {
    if (name == PreemptionPolicyName(p)) return p;
  }
  return Status::Invalid(fmt::format("\"{}\": want Never or LowerPriority", name));
}

void FinishClusterConfig(ClusterConfig* c) {
  // gantry's inventory requires an accelerator's memory: a model given
  // without one gets a plausible figure rather than a refused clusters.d file.
  if (!c->accelerator.model.empty() && c->accelerator.memory_gib <= 0) c->accelerator.memory_gib = 80;
  if (c->quota.empty()) {
    c->quota["cpu"] = c->nodes * c->cpu_per_node_milli;
    c->quota["memory"] = c->nodes * c->memory_per_node_milli;
    c->quota[kGpuResource] = c->nodes * c->accelerator.gpus_per_node * 1000;
  }
  if (c->local_queues.empty()) {
    for (const char* ns : kDefaultNamespaces) {
      c->local_queues.emplace_back(ns, ns);
      c->local_queues.emplace_back(ns, "user-queue");
    }
  }
}

Result<SimConfig> ParseSimConfig(const std::string& yaml_text) {
  SimConfig cfg;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root || !root["clusters"] || !root["clusters"].IsSequence()) {
      return Status::Invalid("sim config: needs a 'clusters' list");
    }
    std::set<std::string> names;
    std::size_t i = 0;
    for (const auto& n : root["clusters"]) {
      ClusterConfig c;
      Status s = ReadCluster(n, &c);
      if (!s.ok()) return Status::Invalid(fmt::format("clusters[{}]: {}", i, s.message()));
      if (!names.insert(c.name).second) return Status::Invalid(fmt::format("clusters[{}]: duplicate name {}", i, c.name));
      cfg.clusters.push_back(std::move(c));
      ++i;
    }
  } catch (const YAML::Exception& e) {
    return Status::Invalid(fmt::format("sim config: line {}: {}", e.mark.line + 1, e.msg));
  }
  if (cfg.clusters.empty()) return Status::Invalid("sim config: no clusters");
  return cfg;
}

Result<SimConfig> LoadSimConfig(const std::string& path) {
  try {
    YAML::Node probe = YAML::LoadFile(path);
    (void)probe;
  } catch (const YAML::BadFile&) {
    return Status::Io(fmt::format("sim config {}: cannot be read", path));
  } catch (const YAML::Exception&) {
    // reported with its line by ParseSimConfig
  }
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  return ParseSimConfig(text);
}

SimConfig MakeVariedClusters(int n) {
  struct Shape { const char* region; const char* zone; const char* model; int64_t mem; int64_t gpus; const char* ic;
                 int64_t nodes; double price; const char* zone_c; const char* flavor; };
  static const Shape kShapes[] = {
      {"us-east-1", "us-east-1a", "H100-80GB", 80, 8, "nvlink", 4, 4.0, "us", "h100"},
      {"eu-central-1", "eu-central-1b", "A100-80GB", 80, 8, "nvlink", 4, 2.5, "eu", "a100"},
      {"us-west-2", "us-west-2c", "L40S", 48, 4, "pcie", 8, 1.2, "us", "l40s"},
      {"eu-west-1", "eu-west-1a", "H100-80GB", 80, 8, "pcie", 2, 3.8, "eu", "h100"},
      {"ap-northeast-1", "ap-northeast-1a", "A10G", 24, 1, "pcie", 16, 0.9, "apac", "a10g"},
  };
  SimConfig cfg;
  for (int i = 0; i < n; ++i) {
    const Shape& s = kShapes[i % std::size(kShapes)];
    ClusterConfig c;
    c.name = fmt::format("c{}", i + 1);
    c.region = s.region;
    c.zone = s.zone;
    c.labels = {{"tier", i % 2 == 0 ? "prod" : "spot"}};
    c.accelerator = {s.model, s.mem, s.gpus, s.ic};
    c.nodes = s.nodes;
    c.flavor = s.flavor;
    c.price_per_gpu_hour = s.price;
    c.datasets = {"s3://corpus/v3", fmt::format("s3://{}-scratch", s.region)};
    c.compliance_zones = {s.zone_c};
    FinishClusterConfig(&c);
    cfg.clusters.push_back(std::move(c));
  }
  return cfg;
}

}  // namespace gantry::sim
