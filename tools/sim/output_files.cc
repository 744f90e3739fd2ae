#include "output_files.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "certs.h"

namespace gantry::sim {

std::string KubeconfigYaml(const std::string& name, const std::string& server_url, const std::string& ca_pem,
                           const std::string& token) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "v1" << YAML::Key << "kind" << YAML::Value
      << "Config";
  out << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name"
      << YAML::Value << name << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap << YAML::Key << "server"
      << YAML::Value << server_url << YAML::Key << "certificate-authority-data" << YAML::Value << Base64(ca_pem)
      << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  std::string user = "gantry-" + name;
  out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << user << YAML::Key << "user" << YAML::Value << YAML::BeginMap << YAML::Key << "token" << YAML::Value << token
      << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name"
      << YAML::Value << name << YAML::Key << "context" << YAML::Value << YAML::BeginMap << YAML::Key << "cluster"
      << YAML::Value << name << YAML::Key << "user" << YAML::Value << user << YAML::Key << "namespace" << YAML::Value
      << "default" << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "current-context" << YAML::Value << name << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string ClusterEntryYaml(const ClusterConfig& c, const std::string& kubeconfig_path) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);  // 3.8, not 3.7999999999999998
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << c.name;
  out << YAML::Key << "kubeconfig" << YAML::Value << kubeconfig_path;
  out << YAML::Key << "region" << YAML::Value << c.region;
  if (!c.zone.empty()) out << YAML::Key << "zone" << YAML::Value << c.zone;
  out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : c.labels) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
  out << YAML::Key << "accelerators" << YAML::Value << YAML::BeginSeq;
  if (!c.accelerator.model.empty()) {
    out << YAML::BeginMap << YAML::Key << "model" << YAML::Value << c.accelerator.model << YAML::Key << "memoryGiB"
        << YAML::Value << c.accelerator.memory_gib << YAML::Key << "gpusPerNode" << YAML::Value
        << c.accelerator.gpus_per_node;
    if (!c.accelerator.interconnect.empty()) {
      out << YAML::Key << "interconnect" << YAML::Value << c.accelerator.interconnect;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  // The node shape, in the inventory's format (Kubernetes quantities).
  out << YAML::Key << "nodes" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cpu" << YAML::Value << (std::to_string(c.cpu_per_node_milli) + "m");
  out << YAML::Key << "memory" << YAML::Value << std::to_string(c.memory_per_node_milli / 1000);
  out << YAML::Key << "count" << YAML::Value << c.nodes;
  out << YAML::EndMap;
  out << YAML::Key << "pricePerGPUHour" << YAML::Value << c.price_per_gpu_hour;
  out << YAML::Key << "datasets" << YAML::Value << YAML::Flow << c.datasets;
  if (!c.exclude_resource_prefixes.empty()) {
    out << YAML::Key << "excludeResourcePrefixes" << YAML::Value << YAML::Flow << c.exclude_resource_prefixes;
  }
  out << YAML::Key << "complianceZones" << YAML::Value << YAML::Flow << c.compliance_zones;
  out << YAML::Key << "kueueAPIVersion" << YAML::Value << c.kueue_api_version;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Status WriteFileAtomic(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::Io(fmt::format("cannot write {}", tmp));
    f << content;
    if (!f.flush()) return Status::Io(fmt::format("cannot write {}", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Io(fmt::format("rename {}: {}", path, ec.message()));
  return Status::Ok();
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::Io(fmt::format("mkdir {}: {}", path, ec.message()));
  return Status::Ok();
}

}  // namespace gantry::sim
