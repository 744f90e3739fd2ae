// Readers for the structured sections of a cluster file (accelerators, nodes,
// pricePerGPUHour, labels, localQueues). Private to cluster_config.cc; see
// gantry/inventory/cluster_config.h for the schema and yaml_reader.h for the
// error format.
#pragma once

#include <yaml-cpp/yaml.h>

#include "gantry/inventory/cluster_config.h"
#include "yaml_reader.h"

namespace gantry::inventory::internal {

// Bounds that catch typos (a memory size typed into gpusPerNode) rather than
// model any real hardware limit.
inline constexpr int64_t kMaxGpusPerNode = 64;
inline constexpr int64_t kMaxAcceleratorMemoryGiB = 4096;
inline constexpr int64_t kMaxNodeCount = 1'000'000;

Result<std::vector<AcceleratorConfig>> ReadAccelerators(const YAML::Node& node, const Field& field);
Result<NodeShapeConfig> ReadNodeShape(const YAML::Node& node, const Field& field);
Result<GpuPrice> ReadGpuPrice(const YAML::Node& node, const Field& field);
Result<std::map<std::string, std::string>> ReadLabels(const YAML::Node& node, const Field& field);
Result<std::map<std::string, std::string>> ReadLocalQueues(const YAML::Node& node,
                                                           const Field& field);

}  // namespace gantry::inventory::internal
