// FreshJobs and the hand-over it rests on: the spec the API parsed for a new
// job is the spec the engine would get by reading the stored record back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "gantry/dispatch/demand.h"
#include "gantry/dispatch/fresh_jobs.h"
#include "gantry/dispatch/spec_cache.h"

namespace gantry::dispatch {
namespace {

JobSpec MustParse(const std::string& body, DocumentFormat format) {
  auto parsed = ParseJobDocument(body, format, std::nullopt);
  if (auto* err = std::get_if<DocumentError>(&parsed)) FAIL(err->message);
  return std::get<JobSpec>(parsed);
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every field the engine reads from a spec (Decide, placement, the remote objects).
void CheckSameSpec(const JobSpec& handed, const JobSpec& read_back) {
  CHECK(handed.name == read_back.name);
  CHECK(handed.ns == read_back.ns);
  CHECK(handed.labels == read_back.labels);
  CHECK(handed.queue == read_back.queue);
  CHECK(handed.priority == read_back.priority);
  CHECK(handed.on_cluster_loss == read_back.on_cluster_loss);
  CHECK(handed.dispatch.mode == read_back.dispatch.mode);
  CHECK(handed.dispatch.step_size == read_back.dispatch.step_size);
  CHECK(handed.dispatch.round_seconds == read_back.dispatch.round_seconds);
  CHECK(handed.dispatch.timeout_seconds == read_back.dispatch.timeout_seconds);
  CHECK(handed.template_object == read_back.template_object);
  REQUIRE(handed.pod_sets.size() == read_back.pod_sets.size());
  for (size_t i = 0; i < handed.pod_sets.size(); ++i) {
    CHECK(handed.pod_sets[i].name == read_back.pod_sets[i].name);
    CHECK(handed.pod_sets[i].count == read_back.pod_sets[i].count);
    CHECK(handed.pod_sets[i].requests_milli == read_back.pod_sets[i].requests_milli);
    CHECK(handed.pod_sets[i].pod_template == read_back.pod_sets[i].pod_template);
  }
  const PlacementConstraints& a = handed.placement;
  const PlacementConstraints& b = read_back.placement;
  CHECK(a.clusters == b.clusters);
  CHECK(a.regions == b.regions);
  CHECK(a.compliance_zones == b.compliance_zones);
  CHECK(a.cluster_match_labels == b.cluster_match_labels);
  CHECK(a.datasets == b.datasets);
  CHECK(a.max_price_per_gpu_hour == b.max_price_per_gpu_hour);
  REQUIRE(a.accelerator.has_value() == b.accelerator.has_value());
  if (a.accelerator) {
    CHECK(a.accelerator->model == b.accelerator->model);
    CHECK(a.accelerator->min_memory_gib == b.accelerator->min_memory_gib);
    CHECK(a.accelerator->interconnect == b.accelerator->interconnect);
  }
  CHECK(SpecToJson(handed).dump() == SpecToJson(read_back).dump());
}

}  // namespace

TEST_CASE("a spec handed over by the API is the spec read back from its stored record", "[dispatch]") {
  std::vector<std::pair<std::string, DocumentFormat>> docs;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GANTRY_SOURCE_DIR) / "config" / "examples")) {
    if (entry.path().extension() == ".yaml") docs.emplace_back(ReadFile(entry.path()), DocumentFormat::kYaml);
  }
  REQUIRE(docs.size() >= 3);
  // Every placement field, fractional quantities and a price, a JobSet, a plain manifest.
  docs.emplace_back(R"({"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{"name":"full","namespace":"team-a",)"
                    R"("labels":{"team":"nlp","run":"x"}},"spec":{"queue":"team-a","priority":-7,)"
                    R"("placement":{"clusters":["b","a"],"regions":["eu-central-1"],"complianceZones":["eu"],)"
                    R"("clusterSelector":{"matchLabels":{"tier":"prod"}},)"
                    R"("accelerator":{"model":"H100-80GB","minMemoryGiB":80,"interconnect":"nvlink"},)"
                    R"("datasets":["s3://corpus/v3"],"maxPricePerGPUHour":4.35},)"
                    R"("dispatch":{"mode":"Incremental","stepSize":2,"roundSeconds":17,"timeoutSeconds":600},)"
                    R"("onClusterLoss":"Wait","template":{"apiVersion":"batch/v1","kind":"Job","spec":{)"
                    R"("parallelism":3,"completions":3,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i",)"
                    R"("resources":{"requests":{"cpu":"1500m","memory":"1.5Gi","nvidia.com/gpu":2},"limits":{"nvidia.com/gpu":2}}}],)"
                    R"("initContainers":[{"name":"init","image":"i","resources":{"requests":{"cpu":"3","memory":"100M"}}}]}}}}}})",
                    DocumentFormat::kJson);
  docs.emplace_back(R"(apiVersion: batch/v1
kind: Job
metadata:
  name: plain
  namespace: team-b
  labels: {kueue.x-k8s.io/queue-name: team-b}
  annotations: {gantry.dev/priority: "5"}
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: i
        resources: {requests: {cpu: 250m, memory: 512Mi}}
)",
                    DocumentFormat::kYaml);
  for (const auto& [body, format] : docs) {
    JobSpec handed = MustParse(body, format);
    INFO(handed.ns << "/" << handed.name);
    JobRecord record = RecordOfSpec(handed, "uid-1", 1000);
    Result<JobSpec> read_back = SpecOfRecord(record);
    REQUIRE(read_back.ok());
    CheckSameSpec(handed, *read_back);
  }
}

TEST_CASE("fresh jobs are taken once, dropped on a wake and bounded", "[dispatch]") {
  FreshJobs fresh(2);
  auto job = [](const std::string& uid) {
    JobRecord r;
    r.uid = uid;
    r.name = "n-" + uid;
    return r;
  };
  auto spec = [](const std::string& name) {
    auto s = std::make_shared<JobSpec>();
    s->name = name;
    return s;
  };
  CHECK(fresh.Put(job("a"), spec("a")));
  CHECK_FALSE(fresh.full());
  CHECK(fresh.Put(job("b"), spec("b")));
  CHECK(fresh.full());  // the API keeps (and frees) the next spec itself
  CHECK(fresh.Put(job("c"), spec("c")));  // already on its way: kept, up to twice the capacity
  CHECK(fresh.Put(job("e"), spec("e")));
  CHECK_FALSE(fresh.Put(job("f"), spec("f")));  // f's first pass reads the store
  CHECK_FALSE(fresh.Put(job("d"), nullptr));
  CHECK(fresh.size() == 4);
  fresh.Drop("c");
  fresh.Drop("e");

  auto a = fresh.Take("a");
  REQUIRE(a.has_value());
  CHECK(a->record.name == "n-a");
  CHECK(a->spec->name == "a");
  CHECK_FALSE(fresh.Take("a").has_value());  // once only: later passes read the store
  CHECK_FALSE(fresh.full());
  CHECK_FALSE(fresh.Take("f").has_value());

  fresh.Drop("b");  // woken (e.g. cancelled) before its first pass
  CHECK_FALSE(fresh.Take("b").has_value());
  CHECK(fresh.size() == 0);
  CHECK(fresh.Put(job("g"), spec("g")));  // room again
}

TEST_CASE("the spec cache keeps a spec put from outside and parses nothing", "[dispatch]") {
  SpecCache cache(4);
  JobSpec spec = MustParse(R"({"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{"name":"p"},"spec":{"queue":"q",)"
                           R"("template":{"apiVersion":"batch/v1","kind":"Job","spec":{"parallelism":5,"template":{"spec":)"
                           R"({"restartPolicy":"Never","containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}}}})",
                           DocumentFormat::kJson);
  auto put = cache.Put("uid-p", spec);
  REQUIRE(put->demand.pod_sets.size() == 1);
  CHECK(put->demand.pod_sets[0].count == 5);
  JobRecord unreadable;  // a record whose JSON would not parse: Get must not need it
  unreadable.uid = "uid-p";
  unreadable.spec_json = "not json";
  auto got = cache.Get(unreadable);
  REQUIRE(got.ok());
  CHECK(got->get() == put.get());
  CHECK(cache.misses() == 0);
}

}  // namespace gantry::dispatch
