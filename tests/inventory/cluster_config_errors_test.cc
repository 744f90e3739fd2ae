// Table of bad cluster files: each must be refused with a message naming the
// file, the line and the field.
#include <catch2/catch.hpp>

#include "gantry/inventory/cluster_config.h"

namespace gantry::inventory {
namespace {

struct BadFile {
  const char* what;
  const char* yaml;
  const char* message;  // expected after "clusters.d/bad.yaml: "
};

// Every case starts from the two required fields unless it tests them.
constexpr const char* kHead = "name: gpu-1\nkubeconfig: kube.yaml\n";

const BadFile kBadFiles[] = {
    {"unknown top-level field", "region: eu\nregoin: eu\n", "line 4: regoin: unknown field"},
    {"name not DNS-1123", "!name: GPU_1\nkubeconfig: k\n",
     "line 1: name: cluster name must consist of lower case"},
    {"missing kubeconfig", "!name: gpu-1\nregion: eu\n",
     "line 1: kubeconfig: required field is missing"},
    {"bad kueue version", "kueueAPIVersion: v1\n",
     "line 3: kueueAPIVersion: must be v1beta2 or v1beta1"},
    {"bad interconnect",
     "region: eu\naccelerators:\n  - model: H100\n    memoryGiB: 80\n    interconnect: ib\n"
     "    gpusPerNode: 8\n",
     "line 7: accelerators[0].interconnect: must be nvlink or pcie"},
    {"quoted number", "accelerators:\n  - model: H100\n    memoryGiB: \"80\"\n    gpusPerNode: 8\n",
     "line 5: accelerators[0].memoryGiB: must be an integer, not a quoted string"},
    {"gpusPerNode out of range",
     "accelerators:\n  - model: H100\n    memoryGiB: 80\n    gpusPerNode: 0\n",
     "line 6: accelerators[0].gpusPerNode: must be from 1 to 64"},
    {"second pool without model",
     "accelerators:\n  - {model: H100, memoryGiB: 80, gpusPerNode: 8}\n"
     "  - memoryGiB: 24\n    gpusPerNode: 4\n",
     "line 5: accelerators[1].model: required field is missing"},
    {"unknown accelerator field",
     "accelerators:\n  - model: H100\n    memoryGiB: 80\n    gpusPerNode: 8\n    nvlink: true\n",
     "line 7: accelerators[0].nvlink: unknown field"},
    {"accelerators not a list", "accelerators: H100\n",
     "line 3: accelerators: must be a list of accelerator pools"},
    {"rdma not a bool",
     "accelerators:\n  - model: H100\n    memoryGiB: 80\n    gpusPerNode: 8\n    rdma: yes\n",
     "line 7: accelerators[0].rdma: must be true or false"},
    {"bad node memory", "nodes:\n  cpu: 96\n  memory: lots\n",
     "line 5: nodes.memory: 'lots' is not a quantity like 96, 500m or 512Gi"},
    {"node cpu missing", "nodes:\n  memory: 1Ti\n", "line 3: nodes.cpu: required field is missing"},
    {"negative node count", "nodes: {cpu: 8, memory: 64Gi, count: -1}\n",
     "line 3: nodes.count: must be from 0 to 1000000"},
    {"negative price", "pricePerGPUHour: -2\n", "line 3: pricePerGPUHour: must be at least 0"},
    {"price not a number", "pricePerGPUHour:\n  onDemand: 2\n  spot: cheap\n",
     "line 5: pricePerGPUHour.spot: must be a number, not 'cheap'"},
    {"unknown price field", "pricePerGPUHour:\n  reserved: 1\n",
     "line 4: pricePerGPUHour.reserved: unknown field"},
    {"bad label key", "labels:\n  \"bad key!\": x\n",
     "line 4: labels.bad key!: label key name part must consist of"},
    {"bad namespace in localQueues", "localQueues:\n  Team_A: q\n",
     "line 4: localQueues.Team_A: namespace must consist of lower case"},
    {"duplicate dataset", "datasets:\n  - imagenet\n  - imagenet\n",
     "line 5: datasets[1]: duplicate entry 'imagenet'"},
    {"empty resource prefix", "excludeResourcePrefixes:\n  - example.com/\n  - \"\"\n",
     "line 5: excludeResourcePrefixes[1]: must not be empty"},
    {"empty LocalQueue name", "localQueues:\n  team-a: \"\"\n", "line 4: localQueues.team-a: must not be empty"},
    {"cordoned not a bool", "cordoned: maybe\n", "line 3: cordoned: must be true or false"},
    {"compliance zones not a list", "complianceZones: eu\n",
     "line 3: complianceZones: must be a list of strings, not a scalar"},
    {"null region", "region:\nzone: a\n", "line 3: region: must be a string, not null"},
    {"duplicate field", "region: eu\nregion: us\n", "line 4: region: duplicate field"},
    {"labels not a mapping", "labels: [a, b]\n",
     "line 3: labels: must be a mapping of strings, not a list"},
    {"syntax error", "region: [eu\nzone: a\n",
     "line 4: invalid YAML: end of sequence flow not found"},
    {"not a mapping", "!- a\n- b\n", "must be a mapping with at least name and kubeconfig"},
    // Another file's text (a link to a secret's file): its line is not quoted.
    {"a key that is no field's name", "root:$y$j9T$hash:19000:0:99999:7:::\n",
     "line 3: unknown field (a key of 34 characters that is not a field's name, not repeated here)"},
};

TEST_CASE("Bad cluster files are refused with file, line and field", "[inventory][config]") {
  for (const BadFile& bad : kBadFiles) {
    // A leading '!' means "without the standard head".
    std::string yaml =
        bad.yaml[0] == '!' ? std::string(bad.yaml + 1) : kHead + std::string(bad.yaml);
    INFO(bad.what << "\n" << yaml);
    Result<ClusterConfig> r = ParseClusterConfig(yaml, "clusters.d/bad.yaml", "/etc");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    const std::string expected = std::string("clusters.d/bad.yaml: ") + bad.message;
    CHECK_THAT(r.status().message(), Catch::Matchers::StartsWith(expected));
  }
  CHECK(std::size(kBadFiles) >= 15);
}

}  // namespace
}  // namespace gantry::inventory
