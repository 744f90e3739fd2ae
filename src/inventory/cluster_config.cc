#include "gantry/inventory/cluster_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cluster_config_sections.h"
#include "gantry/common/names.h"
#include "gantry/placement/cluster_queues.h"
#include "yaml_reader.h"

namespace gantry::inventory {
namespace {

namespace fs = std::filesystem;
using internal::Field;
using internal::FieldHandlers;

// Cluster files are a few hundred bytes; anything this large is a mistake
// (a kubeconfig or a log copied into clusters.d) and is not parsed.
constexpr std::uintmax_t kMaxClusterFileBytes = 1 << 20;

template <typename T, typename U>
Status Assign(Result<T> result, U* out) {
  if (!result.ok()) return result.status();
  *out = std::move(result).value();
  return Status::Ok();
}

std::string DisplayName(const std::string& path) {
  const fs::path p(path);
  const fs::path parent = p.parent_path().filename();
  return parent.empty() ? p.filename().string() : (parent / p.filename()).string();
}

// The file's text, unless it is too large or cannot be read.
Result<std::string> ReadClusterFile(const std::string& path, const std::string& display) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return Status::Io(fmt::format("{}: cannot be read: {}", display, ec.message()));
  if (size > kMaxClusterFileBytes) {
    return Status::Invalid(fmt::format("{}: larger than {} bytes", display, kMaxClusterFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return Status::Io(fmt::format("{}: cannot be read", display));
  return text.str();
}

Status ParseRoot(const YAML::Node& root, const std::string& base_dir, ClusterConfig& c) {
  auto str = [](std::string* out) {
    return [out](const YAML::Node& n, const Field& f) {
      return Assign(internal::ReadString(n, f), out);
    };
  };
  auto list = [](std::vector<std::string>* out) {
    return [out](const YAML::Node& n, const Field& f) {
      return Assign(internal::ReadStringList(n, f), out);
    };
  };
  auto flag = [](bool* out) {
    return [out](const YAML::Node& n, const Field& f) {
      return Assign(internal::ReadBool(n, f), out);
    };
  };
  FieldHandlers handlers = {
      {"name",
       [&](const YAML::Node& n, const Field& f) -> Status {
         GANTRY_RETURN_IF_ERROR(Assign(internal::ReadString(n, f), &c.name));
         if (std::string e = CheckDns1123Label(c.name); !e.empty()) {
           return internal::FieldError(f, "cluster name " + e);
         }
         return Status::Ok();
       }},
      {"kubeconfig",
       [&](const YAML::Node& n, const Field& f) -> Status {
         GANTRY_RETURN_IF_ERROR(Assign(internal::ReadString(n, f), &c.kubeconfig));
         fs::path p(c.kubeconfig);
         if (p.is_relative()) p = fs::path(base_dir) / p;
         c.kubeconfig = p.lexically_normal().string();
         return Status::Ok();
       }},
      {"context", str(&c.context)},
      {"kueueAPIVersion",
       [&](const YAML::Node& n, const Field& f) -> Status {
         Result<std::string> v = internal::ReadString(n, f);
         if (!v.ok()) return v.status();
         if (*v == "v1beta2") {
           c.kueue_api_version = KueueApiVersion::kV1beta2;
         } else if (*v == "v1beta1") {
           c.kueue_api_version = KueueApiVersion::kV1beta1;
         } else {
           return internal::FieldError(f, "must be v1beta2 or v1beta1");
         }
         return Status::Ok();
       }},
      {"region", str(&c.region)},
      {"zone", str(&c.zone)},
      {"provider", str(&c.provider)},
      {"complianceZones", list(&c.compliance_zones)},
      {"labels", [&](const YAML::Node& n,
                     const Field& f) { return Assign(internal::ReadLabels(n, f), &c.labels); }},
      {"accelerators",
       [&](const YAML::Node& n, const Field& f) {
         return Assign(internal::ReadAccelerators(n, f), &c.accelerators);
       }},
      {"nodes", [&](const YAML::Node& n,
                    const Field& f) { return Assign(internal::ReadNodeShape(n, f), &c.nodes); }},
      {"pricePerGPUHour",
       [&](const YAML::Node& n, const Field& f) {
         return Assign(internal::ReadGpuPrice(n, f), &c.price_per_gpu_hour);
       }},
      {"datasets", list(&c.datasets)},
      {"excludeResourcePrefixes", list(&c.exclude_resource_prefixes)},
      {"localQueues",
       [&](const YAML::Node& n, const Field& f) {
         return Assign(internal::ReadLocalQueues(n, f), &c.local_queues);
       }},
      {"cordoned", flag(&c.cordoned)},
      {"declaredLost", flag(&c.declared_lost)},
      {"allowInsecure", flag(&c.allow_insecure)},
  };
  return internal::ReadFields(root, Field{"", internal::LineOf(root)}, handlers,
                              {"name", "kubeconfig"});
}

}  // namespace

std::string_view KueueApiVersionName(KueueApiVersion version) {
  return version == KueueApiVersion::kV1beta1 ? "v1beta1" : "v1beta2";
}

std::string LocalQueueFor(const ClusterConfig& config, const std::string& ns,
                          const std::string& queue) {
  return placement::LocalQueueIn(config.local_queues, ns, queue);
}

Result<ClusterConfig> ParseClusterConfig(std::string_view yaml, const std::string& display_name,
                                         const std::string& base_dir) {
  ClusterConfig config;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) {
      return Status::Invalid(
          fmt::format("{}: must be a mapping with at least name and kubeconfig", display_name));
    }
    Status s = ParseRoot(root, base_dir, config);
    if (!s.ok()) return Status::Invalid(fmt::format("{}: {}", display_name, s.message()));
  } catch (const YAML::Exception& e) {
    // Syntax errors: yaml-cpp's message names the construct, never a value.
    return Status::Invalid(
        fmt::format("{}: line {}: invalid YAML: {}", display_name, e.mark.line + 1, e.msg));
  }
  return config;
}

std::string RefusalWithoutFile(const std::string& path, const std::string& message) {
  for (const std::string& name : {DisplayName(path), fs::path(path).filename().string()}) {
    if (!name.empty() && message.starts_with(name + ": ")) return message.substr(name.size() + 2);
  }
  return message;
}

Result<ClusterConfig> LoadClusterFile(const std::string& path) {
  const std::string display = DisplayName(path);
  Result<std::string> text = ReadClusterFile(path, display);
  if (!text.ok()) return text.status();
  const std::string base_dir = fs::path(path).parent_path().string();
  Result<ClusterConfig> config = ParseClusterConfig(*text, display, base_dir);
  if (config.ok()) config->source_file = path;
  return config;
}

namespace {

// A top-level `name: VALUE` line (VALUE maybe quoted, maybe followed by a
// comment) of text that does not parse as YAML: a typo elsewhere leaves
// the name its file gives.
std::string NameLine(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("name:")) continue;
    std::string value = line.substr(5);
    // A comment starts with '#' after a blank; no name has either.
    if (const auto comment = value.find_first_of('#'); comment != std::string::npos) value.resize(comment);
    const auto first = value.find_first_not_of(" \t");
    const auto last = value.find_last_not_of(" \t\r");
    if (first == std::string::npos) return "";
    value = value.substr(first, last - first + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return "";
}

}  // namespace

std::string LenientClusterName(const std::string& path) {
  if (Result<std::string> text = ReadClusterFile(path, DisplayName(path)); text.ok()) {
    try {
      const YAML::Node root = YAML::Load(*text);
      // A Kubernetes object or a kubeconfig dropped beside the cluster files
      // (apiVersion and kind at the top, no name there) is no cluster's
      // file: it holds none.
      if (root.IsMap() && root["apiVersion"] && root["kind"] && !root["name"]) return "";
      const YAML::Node name = root.IsMap() ? root["name"] : YAML::Node();
      if (name.IsScalar() && CheckDns1123Label(name.Scalar()).empty()) return name.Scalar();
    } catch (const YAML::Exception&) {
      // Not YAML: a `name:` line, else the file's name, is all there is.
      if (std::string name = NameLine(*text); CheckDns1123Label(name).empty()) return name;
    }
  }
  const std::string stem = fs::path(path).stem().string();
  return CheckDns1123Label(stem).empty() ? stem : "";
}

}  // namespace gantry::inventory
