#include "gantry/job/job_document.h"
#include "gantry/job/kueue_labels.h"

#include <catch2/catch.hpp>

#include "job_fixtures.h"

namespace gantry {
namespace {

using nlohmann::json;
using testing::MustParse;

constexpr int64_t kGiMilli = (int64_t{1} << 30) * 1000;

struct WantPodSet {
  std::string name;
  int32_t count;
  std::map<std::string, int64_t> requests_milli;
};

struct GoodCase {
  const char* name;
  std::string body;
  DocumentFormat format;
  std::optional<std::string_view> path_namespace;
  std::string want_ns;
  std::string want_queue;
  int32_t want_priority;
  std::vector<WantPodSet> want_pod_sets;
};

const char* const kGpuLimitsOnlyJson = R"({
  "apiVersion": "gantry.dev/v1", "kind": "Job",
  "metadata": {"name": "gpu-limits"},
  "spec": {"queue": "q", "template": {"apiVersion": "batch/v1", "kind": "Job", "spec": {
    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i", "resources": {
      "requests": {"cpu": "2", "memory": "4Gi"},
      "limits": {"nvidia.com/gpu": 2, "cpu": "4", "memory": "4Gi"}}}]}}}}}
})";

TEST_CASE("ParseJobDocument reads good documents", "[job][document]") {
  const GoodCase cases[] = {
      {"gantry Job",
       testing::kGantryJobYaml,
       DocumentFormat::kYaml,
       std::nullopt,
       "team-a",
       "team-a",
       100,
       {{"main", 4, {{"cpu", 8500}, {"memory", 65 * kGiMilli}, {"nvidia.com/gpu", 8000}}}}},
      {"gantry Job, URL namespace agrees",
       testing::kGantryJobYaml,
       DocumentFormat::kYaml,
       "team-a",
       "team-a",
       "team-a",
       100,
       {{"main", 4, {{"cpu", 8500}, {"memory", 65 * kGiMilli}, {"nvidia.com/gpu", 8000}}}}},
      // count = min(parallelism 3, completions 2); cpu = max(sum 1, init 4).
      {"batch/v1 manifest",
       testing::kBatchManifestYaml,
       DocumentFormat::kYaml,
       std::nullopt,
       "team-b",
       "team-b",
       -5,
       {{"main", 2, {{"cpu", 4000}, {"memory", 2 * kGiMilli}}}}},
      {"JobSet",
       testing::kJobSetYaml,
       DocumentFormat::kYaml,
       "lab",
       "lab",
       "research",
       0,
       {{"driver", 1, {{"cpu", 1000}, {"memory", kGiMilli}}},
        {"workers", 8, {{"cpu", 2000}, {"memory", 8 * kGiMilli}, {"nvidia.com/gpu", 1000}}}}},
      {"PyTorchJob with podSets",
       testing::kPyTorchJobYaml,
       DocumentFormat::kYaml,
       std::nullopt,
       "default",
       "research",
       0,
       {{"master", 1, {{"cpu", 1000}, {"memory", 4 * kGiMilli}}},
        {"worker", 3, {{"cpu", 4000}, {"memory", 16 * kGiMilli}, {"nvidia.com/gpu", 2000}}}}},
      {"GPUs only in limits (JSON)",
       kGpuLimitsOnlyJson,
       DocumentFormat::kJson,
       std::nullopt,
       "default",
       "q",
       0,
       {{"main", 1, {{"cpu", 2000}, {"memory", 4 * kGiMilli}, {"nvidia.com/gpu", 2000}}}}},
  };
  for (const GoodCase& c : cases) {
    INFO(c.name);
    JobSpec spec = MustParse(c.body, c.format, c.path_namespace);
    CHECK(spec.ns == c.want_ns);
    CHECK(spec.queue == c.want_queue);
    CHECK(spec.priority == c.want_priority);
    REQUIRE(spec.pod_sets.size() == c.want_pod_sets.size());
    for (std::size_t i = 0; i < spec.pod_sets.size(); ++i) {
      CHECK(spec.pod_sets[i].name == c.want_pod_sets[i].name);
      CHECK(spec.pod_sets[i].count == c.want_pod_sets[i].count);
      CHECK(spec.pod_sets[i].requests_milli == c.want_pod_sets[i].requests_milli);
      CHECK(spec.pod_sets[i].pod_template.contains("spec"));
    }
  }
}

TEST_CASE("A gantry Job keeps every spec field", "[job][document]") {
  JobSpec spec = MustParse(testing::kGantryJobYaml);
  CHECK(spec.name == "llama-ft");
  CHECK(spec.labels == std::map<std::string, std::string>{{"team", "nlp"}});
  const PlacementConstraints& p = spec.placement;
  CHECK(p.clusters == std::vector<std::string>{"gpu-eu-1"});
  CHECK(p.regions == std::vector<std::string>{"eu-central-1"});
  CHECK(p.compliance_zones == std::vector<std::string>{"eu"});
  CHECK(p.datasets == std::vector<std::string>{"s3://corpus/v3"});
  CHECK(p.cluster_match_labels == std::map<std::string, std::string>{{"tier", "prod"}});
  REQUIRE(p.accelerator);
  CHECK(p.accelerator->model == "H100-80GB");
  CHECK(p.accelerator->min_memory_gib == 80);
  CHECK(p.accelerator->interconnect == "nvlink");
  CHECK(p.max_price_per_gpu_hour == 4.5);
  CHECK(spec.dispatch.mode == DispatchMode::kIncremental);
  CHECK(spec.dispatch.step_size == 3);
  CHECK(spec.dispatch.round_seconds == 60);
  CHECK(spec.dispatch.timeout_seconds == 600);
  CHECK(spec.on_cluster_loss == OnClusterLoss::kFail);
  CHECK(spec.finished_retention_seconds == 3600);
  CHECK(spec.template_object.at("kind") == "Job");
  CHECK(spec.template_object.at("metadata").at("labels").at("app") == "llama");
}

TEST_CASE("A plain manifest becomes the template, cleaned of server fields", "[job][document]") {
  JobSpec spec = MustParse(testing::kBatchManifestYaml);
  CHECK(spec.name == "sweep-7");
  CHECK(spec.placement.regions == std::vector<std::string>{"eu-central-1", "eu-west-1"});
  CHECK(spec.on_cluster_loss == OnClusterLoss::kWait);
  CHECK(spec.finished_retention_seconds == 600);
  CHECK(spec.dispatch.mode == DispatchMode::kAllAtOnce);
  const json& t = spec.template_object;
  CHECK(t.at("apiVersion") == "batch/v1");
  CHECK_FALSE(t.contains("status"));
  const json& meta = t.at("metadata");
  CHECK(meta.at("name") == "sweep-7");
  CHECK_FALSE(meta.contains("namespace"));
  CHECK_FALSE(meta.contains("uid"));
  CHECK_FALSE(meta.contains("resourceVersion"));
  CHECK(meta.at("labels").at("kueue.x-k8s.io/queue-name") == "team-b");
  // gantry.dev/* annotations were consumed into the spec; others stay.
  CHECK(meta.at("annotations") == json{{"note", "keep-me"}});
}

TEST_CASE("Defaults are filled in", "[job][document]") {
  JobSpec spec = MustParse(testing::kJobSetYaml);
  CHECK(spec.ns == "default");
  CHECK(spec.priority == 0);
  CHECK(spec.dispatch.mode == DispatchMode::kAllAtOnce);
  CHECK(spec.dispatch.step_size == 3);
  CHECK(spec.dispatch.round_seconds == 60);
  CHECK_FALSE(spec.dispatch.timeout_seconds);
  CHECK(spec.on_cluster_loss == OnClusterLoss::kRequeue);
  CHECK_FALSE(spec.finished_retention_seconds);  // the daemon's setting applies
  CHECK_FALSE(spec.placement.accelerator);
  CHECK_FALSE(spec.placement.max_price_per_gpu_hour);
}

// LocalQueue names are DNS-1123 subdomains (the Workload CRD's queueName
// pattern); the worker's Kueue reads the queue from a label, whose value has
// at most 63 characters.
TEST_CASE("A queue may be any LocalQueue name a label can carry", "[job][document]") {
  const std::string longest = std::string(30, 'a') + "." + std::string(32, 'b');
  for (const std::string& queue : {std::string("team.a"), std::string("a.b-c.d"), longest}) {
    INFO(queue);
    json doc = testing::GantryJobJson();
    doc["spec"]["queue"] = queue;
    auto parsed = ParseJobJson(doc, std::nullopt);
    REQUIRE(std::holds_alternative<JobSpec>(parsed));
    CHECK(std::get<JobSpec>(parsed).queue == queue);
    json manifest = std::get<json>(YamlToJson(testing::kBatchManifestYaml));
    manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue;
    auto from_label = ParseJobJson(manifest, std::nullopt);
    REQUIRE(std::holds_alternative<JobSpec>(from_label));
    CHECK(std::get<JobSpec>(from_label).queue == queue);
  }
  const std::pair<std::string, std::string> bad[] = {
      {"team..a", "each dot-separated part"},
      {".team", "each dot-separated part"},
      {"Team.A", "each dot-separated part"},
      {longest + "c", "at most 63 characters"},
  };
  for (const auto& [queue, message] : bad) {
    INFO(queue);
    json doc = testing::GantryJobJson();
    doc["spec"]["queue"] = queue;
    auto parsed = ParseJobJson(doc, std::nullopt);
    REQUIRE(std::holds_alternative<DocumentError>(parsed));
    const DocumentError& e = std::get<DocumentError>(parsed);
    CHECK(e.code == 422);
    REQUIRE(e.causes.size() == 1);
    CHECK(e.causes[0].field == "spec.queue");
    CHECK_THAT(e.causes[0].message, Catch::Contains(message));
  }
}

// The other side of Kubernetes' rules for resources it does not overcommit
// (extended resources, hugepages-*): what it accepts is accepted.
TEST_CASE("Requests Kubernetes accepts are accepted", "[job][document]") {
  const std::string c0 = "/spec/template/spec/template/spec/containers/0/resources";
  const std::vector<std::pair<std::string, json>> resources = {
      {"hugepages equal", {{"requests", {{"cpu", 1}, {"memory", "1Gi"}, {"hugepages-2Mi", "4Mi"}}},
                           {"limits", {{"hugepages-2Mi", "4Mi"}}}}},
      {"hugepages limit only", {{"requests", {{"cpu", 1}, {"memory", "1Gi"}}},
                                {"limits", {{"hugepages-1Gi", "2Gi"}}}}},
      {"GPU limit only", {{"requests", {{"cpu", 1}, {"memory", "1Gi"}}}, {"limits", {{"nvidia.com/gpu", 2}}}}},
      {"ephemeral-storage request without a limit",
       {{"requests", {{"cpu", 1}, {"memory", "1Gi"}, {"ephemeral-storage", "10Gi"}}}}},
      {"cpu request below its limit", {{"requests", {{"cpu", 1}, {"memory", "1Gi"}}}, {"limits", {{"cpu", 2}}}}},
  };
  for (const auto& [what, value] : resources) {
    INFO(what);
    json doc = testing::GantryJobJson();
    doc[json::json_pointer(c0)] = value;
    auto parsed = ParseJobJson(doc, std::nullopt);
    if (auto* e = std::get_if<DocumentError>(&parsed)) FAIL(e->message);
  }
}

// The API server refuses a Workload whose quantity is 0.5 (int-or-string);
// the job is stored, and its copies written, with "500m".
TEST_CASE("Sidecars count as Kubernetes counts them: beside the containers and the later init containers",
          "[job][document]") {
  const std::string yaml = R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: sidecar
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  template:
    spec:
      restartPolicy: Never
      initContainers:
      - {name: proxy, image: proxy:1, restartPolicy: Always, resources: {requests: {cpu: "1", memory: 1Gi}}}
      - {name: fetch, image: fetch:1, resources: {requests: {cpu: "4"}}}
      containers:
      - {name: main, image: main:1, resources: {requests: {cpu: "2", memory: 2Gi}}}
)";
  JobSpec spec = MustParse(yaml);
  REQUIRE(spec.pod_sets.size() == 1);
  // cpu: fetch with the proxy beside it, 4 + 1, beats main with it, 2 + 1;
  // memory: main with the proxy, 2Gi + 1Gi (not the larger of the two).
  CHECK(spec.pod_sets[0].requests_milli.at("cpu") == 5000);
  CHECK(spec.pod_sets[0].requests_milli.at("memory") == 3 * kGiMilli);
}

TEST_CASE("Fractional numbers as quantities are stored as strings", "[job][document]") {
  const char* const yaml = R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: half
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  template:
    spec:
      overhead: {cpu: 0.1}
      restartPolicy: Never
      initContainers:
      - {name: i, image: i:1, resources: {requests: {cpu: 0.25, memory: 1Gi}}}
      containers:
      - name: c
        image: c:1
        resources:
          requests: {cpu: 0.5, memory: 1.5e9}
          limits: {cpu: 1.5, memory: 2Gi}
)";
  JobSpec spec = MustParse(yaml);
  const json& containers = spec.template_object["spec"]["template"]["spec"]["containers"];
  CHECK(containers[0]["resources"] ==
        json::parse(R"({"requests": {"cpu": "500m", "memory": "1500000000"},
                        "limits": {"cpu": "1500m", "memory": "2Gi"}})"));
  CHECK(spec.template_object["spec"]["template"]["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] ==
        "250m");
  CHECK(spec.template_object["spec"]["template"]["spec"]["overhead"]["cpu"] == "100m");
  REQUIRE(spec.pod_sets.size() == 1);
  CHECK(spec.pod_sets[0].pod_template == spec.template_object["spec"]["template"]);
  CHECK(spec.pod_sets[0].requests_milli.at("cpu") == 600);
  // The same job as the one spelled with strings, from YAML or JSON.
  json as_json = std::get<json>(YamlToJson(yaml));
  std::string text = SpecToJsonText(spec);
  CHECK(SpecToJsonText(MustParse(as_json.dump(), DocumentFormat::kJson)) == text);
  json strings = as_json;
  json& resources = strings["spec"]["template"]["spec"]["containers"][0]["resources"];
  resources["requests"]["cpu"] = "500m";
  resources["limits"]["cpu"] = "1500m";
  resources["requests"]["memory"] = "1500000000";
  strings["spec"]["template"]["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = "250m";
  strings["spec"]["template"]["spec"]["overhead"]["cpu"] = "100m";
  CHECK(SpecToJsonText(MustParse(strings.dump(), DocumentFormat::kJson)) == text);

  // A JobSet's templates, and explicit podSets, the same way.
  json jobset = std::get<json>(YamlToJson(testing::kJobSetYaml));
  jobset["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0]
        ["resources"]["requests"]["cpu"] = 0.5;
  JobSpec js = MustParse(jobset.dump(), DocumentFormat::kJson);
  CHECK(js.template_object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0]
                          ["resources"]["requests"]["cpu"] == "500m");
  CHECK(js.pod_sets[1].pod_template["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m");
  json torch = std::get<json>(YamlToJson(testing::kPyTorchJobYaml));
  torch["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 0.5;
  JobSpec explicit_sets = MustParse(torch.dump(), DocumentFormat::kJson);
  CHECK(explicit_sets.pod_sets[0].pod_template["spec"]["containers"][0]["resources"]["requests"]["cpu"] ==
        "500m");
}

// Kueue compares the label with the Workload's maximumExecutionTimeSeconds.
TEST_CASE("A job's max-exec-time label is read for its Workload", "[job][document]") {
  JobSpec spec = MustParse(testing::kGantryJobYaml);
  CHECK_FALSE(MaxExecutionTimeSeconds(spec.template_object));
  json doc = testing::GantryJobJson();
  doc["spec"]["template"]["metadata"]["labels"][kMaxExecTimeLabel] = "3600";
  auto parsed = ParseJobJson(doc, std::nullopt);
  REQUIRE(std::holds_alternative<JobSpec>(parsed));
  CHECK(MaxExecutionTimeSeconds(std::get<JobSpec>(parsed).template_object) == 3600);
  // Where Kueue does not read partial admission, the annotation is the user's.
  json jobset = std::get<json>(YamlToJson(testing::kJobSetYaml));
  jobset["spec"]["template"]["metadata"]["annotations"][kMinParallelismAnnotation] = "2";
  CHECK(std::holds_alternative<JobSpec>(ParseJobJson(jobset, std::nullopt)));
  // A value submission would refuse (a stored record) gives none.
  for (json bad : {json("0"), json("-1"), json("1h"), json("2147483648"), json(""), json(60)}) {
    CHECK_FALSE(MaxExecutionTimeSeconds(json{{"metadata", {{"labels", {{kMaxExecTimeLabel, bad}}}}}}));
  }
  CHECK(MaxExecutionTimeSeconds(json{{"metadata", {{"labels", {{kMaxExecTimeLabel, "2147483647"}}}}}}) ==
        2147483647);
}

// What gantry writes once per key (pod_lists.h) without changing its meaning.
TEST_CASE("Repeated keys that mean one thing are accepted", "[job][document]") {
  json doc = testing::GantryJobJson();
  json& pod = doc["spec"]["template"]["spec"]["template"]["spec"];
  pod["containers"][0]["env"] = json::parse(R"j([{"name": "A", "value": "1"}, {"name": "B", "value": "$(C) $$(A)"},
                                                {"name": "A", "value": "2"}, {"name": "C", "value": "$(B)"}])j");
  pod["containers"][0]["ports"] = json::parse(R"([{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"},
                                                 {"containerPort": 80, "protocol": "UDP"}])");
  pod["imagePullSecrets"] = json::parse(R"([{"name": "r"}, {"name": "r"}])");
  auto parsed = ParseJobJson(doc, std::nullopt);
  if (auto* e = std::get_if<DocumentError>(&parsed)) FAIL(e->message);
  // Explicit podSets only describe pods to Kueue: not checked.
  json torch = std::get<json>(YamlToJson(testing::kPyTorchJobYaml));
  torch["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["env"] =
      json::parse(R"j([{"name": "A", "value": "1"}, {"name": "A", "value": "$(A)"}])j");
  CHECK(std::holds_alternative<JobSpec>(ParseJobJson(torch, std::nullopt)));
}

TEST_CASE("Enum names", "[job][document]") {
  CHECK(DispatchModeName(DispatchMode::kIncremental) == "Incremental");
  CHECK(DispatchModeName(DispatchMode::kAllAtOnce) == "AllAtOnce");
  CHECK(OnClusterLossName(OnClusterLoss::kRequeue) == "Requeue");
  CHECK(OnClusterLossName(OnClusterLoss::kFail) == "Fail");
  CHECK(OnClusterLossName(OnClusterLoss::kWait) == "Wait");
}

}  // namespace
}  // namespace gantry
