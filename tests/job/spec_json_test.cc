#include <catch2/catch.hpp>

#include "gantry/job/job_document.h"
#include "job_fixtures.h"

namespace gantry {
namespace {

using nlohmann::json;
using testing::MustParse;

std::string Canonical(const std::string& body, DocumentFormat format = DocumentFormat::kYaml) {
  return SpecToJson(MustParse(body, format)).dump();
}

// The JobSet fixture as JSON text: other key order, priority 0 spelled out,
// defaults given explicitly, quantities spelled differently.
const char* const kJobSetJson = R"({
  "spec": {
    "dispatch": {"roundSeconds": 60, "mode": "AllAtOnce", "stepSize": 3},
    "priority": 0, "onClusterLoss": "Requeue",
    "template": {"kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v1alpha2", "spec": {
      "replicatedJobs": [
        {"template": {"spec": {"template": {"spec": {"containers": [
          {"resources": {"requests": {"memory": "1Gi", "cpu": 1}}, "name": "d", "image": "driver:1"}]}}}},
         "name": "driver"},
        {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4,
          "template": {"spec": {"containers": [{"name": "w", "image": "worker:1", "resources": {
            "limits": {"nvidia.com/gpu": 1}, "requests": {"memory": "8Gi", "cpu": 2}}}]}}}}}]}},
    "queue": "research"},
  "metadata": {"name": "ddp"}, "kind": "Job", "apiVersion": "gantry.dev/v1"
})";

// The gantry form of kBatchManifestYaml.
const char* const kBatchAsGantryYaml = R"(
apiVersion: gantry.dev/v1
kind: Job
metadata: {name: sweep-7, namespace: team-b, labels: {kueue.x-k8s.io/queue-name: team-b}}
spec:
  queue: team-b
  priority: -5
  placement: {regions: [eu-central-1, eu-west-1]}
  onClusterLoss: Wait
  finishedRetentionSeconds: 600
  template:
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: sweep-7
      labels: {kueue.x-k8s.io/queue-name: team-b}
      annotations: {note: keep-me}
    spec:
      completions: 2
      parallelism: 3
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: main
            image: sweep:1
            resources: {requests: {memory: 2Gi, cpu: "1"}}
          initContainers:
          - name: fetch
            image: fetch:1
            resources: {requests: {memory: 1Gi, cpu: "4"}}
)";

TEST_CASE("Documents meaning the same job have the same canonical spec", "[job][spec]") {
  CHECK(Canonical(testing::kJobSetYaml) == Canonical(kJobSetJson, DocumentFormat::kJson));
  CHECK(Canonical(testing::kBatchManifestYaml) == Canonical(kBatchAsGantryYaml));
  // YAML -> JSON text -> parsed again.
  json as_json = testing::GantryJobJson();
  CHECK(Canonical(testing::kGantryJobYaml) == Canonical(as_json.dump(2), DocumentFormat::kJson));
}

TEST_CASE("Documents meaning different jobs have different canonical specs", "[job][spec]") {
  json doc = testing::GantryJobJson();
  std::string base = SpecToJson(std::get<JobSpec>(ParseJobJson(doc, std::nullopt))).dump();
  const std::vector<std::pair<std::string, json>> changes = {
      {"/spec/priority", 101},
      {"/spec/queue", "team-b"},
      {"/spec/template/spec/parallelism", 2},
      {"/spec/placement/regions/0", "us-east-1"},
      {"/spec/dispatch/mode", "AllAtOnce"},
      {"/spec/finishedRetentionSeconds", 60},
  };
  for (const auto& [pointer, value] : changes) {
    INFO(pointer);
    json changed = doc;
    changed[json::json_pointer(pointer)] = value;
    auto parsed = ParseJobJson(changed, std::nullopt);
    REQUIRE(std::holds_alternative<JobSpec>(parsed));
    CHECK(SpecToJson(std::get<JobSpec>(parsed)).dump() != base);
  }
  // Name, namespace and labels are stored apart from the spec.
  json renamed = doc;
  renamed["metadata"]["name"] = "other";
  renamed["metadata"]["labels"]["team"] = "cv";
  CHECK(SpecToJson(std::get<JobSpec>(ParseJobJson(renamed, std::nullopt))).dump() == base);
}

TEST_CASE("SpecToJson has the documented layout", "[job][spec]") {
  json spec = SpecToJson(MustParse(testing::kGantryJobYaml));
  CHECK(spec.at("queue") == "team-a");
  CHECK(spec.at("priority") == 100);
  CHECK(spec.at("onClusterLoss") == "Fail");
  CHECK(spec.at("finishedRetentionSeconds") == 3600);
  CHECK(spec.at("dispatch") == json{{"mode", "Incremental"},
                                    {"stepSize", 3},
                                    {"roundSeconds", 60},
                                    {"timeoutSeconds", 600}});
  CHECK(spec.at("placement").at("accelerator") ==
        json{{"model", "H100-80GB"}, {"minMemoryGiB", 80}, {"interconnect", "nvlink"}});
  CHECK(spec.at("placement").at("clusterSelector") == json{{"matchLabels", {{"tier", "prod"}}}});
  const json& set = spec.at("podSets").at(0);
  CHECK(set.at("name") == "main");
  CHECK(set.at("count") == 4);
  CHECK(set.at("requests") ==
        json{{"cpu", "8500m"}, {"memory", "69793218560"}, {"nvidia.com/gpu", "8"}});
  CHECK(set.at("template").at("spec").contains("containers"));
  CHECK_FALSE(spec.contains("name"));
  CHECK_FALSE(spec.contains("metadata"));
}

TEST_CASE("SpecFromJson inverts SpecToJson exactly", "[job][spec]") {
  for (const char* body : {testing::kGantryJobYaml, testing::kBatchManifestYaml,
                           testing::kJobSetYaml, testing::kPyTorchJobYaml}) {
    JobSpec spec = MustParse(body);
    json stored = SpecToJson(spec);
    auto back = SpecFromJson(json::parse(stored.dump()), spec.name, spec.ns, spec.labels);
    REQUIRE(std::holds_alternative<JobSpec>(back));
    const JobSpec& s = std::get<JobSpec>(back);
    CHECK(SpecToJson(s) == stored);
    CHECK(SpecToJson(s).dump() == stored.dump());
    CHECK(s.name == spec.name);
    CHECK(s.ns == spec.ns);
    CHECK(s.labels == spec.labels);
    REQUIRE(s.pod_sets.size() == spec.pod_sets.size());
    for (std::size_t i = 0; i < s.pod_sets.size(); ++i) {
      CHECK(s.pod_sets[i].requests_milli == spec.pod_sets[i].requests_milli);
      CHECK(s.pod_sets[i].count == spec.pod_sets[i].count);
    }
    CHECK(s.placement.max_price_per_gpu_hour == spec.placement.max_price_per_gpu_hour);
    CHECK(s.dispatch.timeout_seconds == spec.dispatch.timeout_seconds);
    CHECK(s.finished_retention_seconds == spec.finished_retention_seconds);
  }
}

TEST_CASE("SpecFromJson reads back a stored spec whose placement names hold control characters", "[job][spec]") {
  // Accepted before submissions refused them: a job stored so must stay
  // readable (its passes, cancel and purge read the spec), not be frozen.
  JobSpec spec = MustParse(testing::kGantryJobYaml);
  json stored = SpecToJson(spec);
  stored["placement"]["regions"] = {"eu\nforged"};
  stored["placement"]["datasets"] = {"d\x1b[31m"};
  auto back = SpecFromJson(json::parse(stored.dump()), spec.name, spec.ns, spec.labels);
  REQUIRE(std::holds_alternative<JobSpec>(back));
  CHECK(std::get<JobSpec>(back).placement.regions == std::vector<std::string>{"eu\nforged"});
}

TEST_CASE("SpecFromJson refuses a damaged record", "[job][spec]") {
  json stored = SpecToJson(MustParse(testing::kGantryJobYaml));
  const std::vector<std::pair<std::string, json>> damage = {
      {"/queue", nullptr},
      {"/podSets/0/requests/cpu", "lots"},
      {"/dispatch/mode", "Never"},
      {"/template", "x"},
  };
  for (const auto& [pointer, value] : damage) {
    INFO(pointer);
    json bad = stored;
    bad[json::json_pointer(pointer)] = value;
    auto back = SpecFromJson(bad, "n", "ns", {});
    CHECK(std::holds_alternative<DocumentError>(back));
  }
  CHECK(std::holds_alternative<DocumentError>(SpecFromJson(json::array(), "n", "ns", {})));
}

TEST_CASE("SameJobSpec takes a quantity's spellings as one and nothing else", "[job]") {
  auto spec = [](const json& cpu, const char* memory, const char* image) {
    json container = {{"name", "main"},
                      {"image", image},
                      {"resources", {{"requests", {{"cpu", cpu}, {"memory", memory}}}, {"limits", {{"cpu", cpu}}}}}};
    json pod = {{"spec", {{"containers", json::array({container})}}}};
    return json{{"queue", "q"}, {"template", {{"spec", {{"template", pod}}}}}}.dump();
  };
  const std::string stored = spec("1", "1Gi", "a:1");
  CHECK(SameJobSpec(stored, stored));
  CHECK(SameJobSpec(stored, spec("1000m", "1073741824", "a:1")));
  CHECK(SameJobSpec(stored, spec(1, "1024Mi", "a:1")));
  CHECK_FALSE(SameJobSpec(stored, spec("1001m", "1Gi", "a:1")));
  CHECK_FALSE(SameJobSpec(stored, spec("1", "1Gi", "a:2")));
  // Only a container's requests and limits (and a pod's overhead) are
  // quantities: an image that reads as one, or a custom kind's own field
  // named so, is compared as written.
  CHECK_FALSE(SameJobSpec(json{{"image", "1"}}.dump(), json{{"image", "1000m"}}.dump()));
  CHECK_FALSE(SameJobSpec(json{{"spec", {{"limits", {{"a", "1"}}}}}}.dump(),
                          json{{"spec", {{"limits", {{"a", "1000m"}}}}}}.dump()));
  // Below milli precision, amounts are compared as written: 100u is not 1m.
  CHECK_FALSE(SameJobSpec(spec("100u", "1Gi", "a:1"), spec("1m", "1Gi", "a:1")));
  CHECK(SameJobSpec(spec("0.5", "1.5Gi", "a:1"), spec("500m", "1536Mi", "a:1")));
  CHECK_FALSE(SameJobSpec(stored, "not json"));
}

}  // namespace
}  // namespace gantry
