// SpecToJsonText against SpecToJson().dump(): stored specs are compared as
// text, so the two must agree byte for byte.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "gantry/common/json_text.h"
#include "gantry/job/job_document.h"
#include "job_fixtures.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

using nlohmann::json;

TEST_CASE("AppendJson writes a whole job document as dump() does", "[job][json]") {
  json doc = GantryJobJson();
  std::string out;
  AppendJson(out, doc);
  CHECK(out == doc.dump());
}

TEST_CASE("SpecToJsonText is SpecToJson().dump() for every kind of document", "[job][spec][json]") {
  std::vector<std::string> bodies = {kGantryJobYaml, kBatchManifestYaml, kJobSetYaml, kPyTorchJobYaml};
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GANTRY_SOURCE_DIR) / "config" / "examples")) {
    bodies.push_back(ReadFile(entry.path().string()));
  }
  // Every optional field absent, then odd strings where strings may go.
  bodies.push_back(R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {name: bare}
spec:
  queue: q
  template:
    apiVersion: batch/v1
    kind: Job
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: i, resources: {requests: {cpu: 1, memory: 1Gi}}}]
)");
  bodies.push_back(R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {name: odd, labels: {team: nlp, example.com/run: r-1}}
spec:
  queue: q
  placement:
    accelerator: {minMemoryGiB: 40}
    clusterSelector: {matchLabels: {tier: prod}}
    maxPricePerGPUHour: 0.1
  dispatch: {mode: Incremental, stepSize: 1, roundSeconds: 5, timeoutSeconds: 600}
  onClusterLoss: Wait
  finishedRetentionSeconds: 0
  template:
    apiVersion: batch/v1
    kind: Job
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: "i\u0001", args: ["\"", "\\", "tab\there", "\u00e9t\u00e9"], resources: {requests: {cpu: 250m, memory: 1.5Gi}}}]
)");
  for (const std::string& body : bodies) {
    INFO(body);
    JobSpec spec = MustParse(body);
    CHECK(SpecToJsonText(spec) == SpecToJson(spec).dump());
    std::string labels;
    AppendJsonObject(labels, spec.labels);
    CHECK(labels == json(spec.labels).dump());
  }
}

}  // namespace
}  // namespace gantry::testing
