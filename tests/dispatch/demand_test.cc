#include <catch2/catch.hpp>

#include <variant>

#include "gantry/dispatch/demand.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/inventory/cluster_config.h"
#include "gantry/placement/place.h"

namespace gantry {

TEST_CASE("a job spec becomes a placement demand", "[dispatch]") {
  const char* doc = R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {name: ft}
spec:
  queue: q
  placement:
    regions: [eu-central-1]
    accelerator: {model: H100-80GB, minMemoryGiB: 80, interconnect: nvlink}
    maxPricePerGPUHour: 4.5
  dispatch: {mode: Incremental, stepSize: 2}
  template:
    apiVersion: batch/v1
    kind: Job
    spec:
      parallelism: 4
      template:
        spec:
          restartPolicy: Never
          containers:
          - {name: c, image: i, resources: {requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: 8}, limits: {nvidia.com/gpu: 8}}}
)";
  auto parsed = ParseJobDocument(doc, DocumentFormat::kYaml, std::nullopt);
  REQUIRE(std::holds_alternative<JobSpec>(parsed));
  placement::JobDemand d = DemandFromSpec(std::get<JobSpec>(parsed));
  REQUIRE(d.pod_sets.size() == 1);
  CHECK(d.pod_sets[0].count == 4);
  CHECK(d.pod_sets[0].requests_milli.at("nvidia.com/gpu") == 8000);
  CHECK(d.constraints.regions == std::vector<std::string>{"eu-central-1"});
  REQUIRE(d.constraints.accelerator.has_value());
  CHECK(d.constraints.accelerator->interconnect == placement::Interconnect::kNvlink);
  CHECK(d.constraints.accelerator->min_memory_gib == 80);
  CHECK(d.constraints.max_price_per_gpu_hour == 4.5);
  CHECK(d.dispatch.mode == placement::DispatchMode::kIncremental);
  CHECK(d.dispatch.step_size == 2);

  // And placement can decide on it: one fitting cluster, one too small.
  placement::ClusterSnapshot big, small;
  big.name = "big";
  small.name = "small";
  for (auto* c : {&big, &small}) {
    c->region = "eu-central-1";
    c->health = placement::ClusterHealth::kReady;
    c->accelerators = {{"H100-80GB", 80, 8, placement::Interconnect::kNvlink, true}};
    c->price_per_gpu_hour = 3.0;
  }
  big.capacity.quota = {{"cpu", {512'000, 0}}, {"memory", {4096LL << 30 << 10, 0}}, {"nvidia.com/gpu", {64'000, 0}}};
  small.capacity.quota = {{"cpu", {512'000, 0}}, {"memory", {4096LL << 30 << 10, 0}}, {"nvidia.com/gpu", {16'000, 0}}};
  std::vector<placement::ClusterSnapshot> fleet = {big, small};
  auto decision = placement::Place(d, fleet);
  CHECK(decision.candidates == std::vector<std::string>{"big"});
  CHECK_FALSE(decision.unschedulable);
}

TEST_CASE("a job's demand names the namespace and LocalQueue its Workload copy names", "[dispatch][queues]") {
  // The gantry document form (spec.queue, namespace from the path) and the
  // plain Job form (the kueue.x-k8s.io/queue-name label, metadata.namespace).
  const char* gantry_doc = R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {name: ft}
spec:
  queue: team-a
  template:
    apiVersion: batch/v1
    kind: Job
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - {name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}
)";
  const char* plain_job = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: ft
  namespace: ml
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}
)";
  for (const char* doc : {gantry_doc, plain_job}) {
    INFO(doc);
    auto parsed = ParseJobDocument(doc, DocumentFormat::kYaml, std::string_view("ml"));
    if (auto* err = std::get_if<DocumentError>(&parsed)) FAIL(err->message);
    const JobSpec& spec = std::get<JobSpec>(parsed);
    const placement::JobDemand d = DemandFromSpec(spec);
    CHECK(d.ns == "ml");
    CHECK(d.queue == "team-a");
    // What the copy says in a cluster that maps ml to another LocalQueue,
    // and in one that does not: placement resolves the same.
    inventory::ClusterConfig mapped;
    mapped.local_queues = {{"ml", "ml-gpu"}};
    for (const inventory::ClusterConfig& config : {inventory::ClusterConfig{}, mapped}) {
      dispatch::WorkloadParams p;
      p.spec = &spec;
      p.job_uid = "0123456789abcdef";
      p.local_queue = inventory::LocalQueueFor(config, spec.ns, spec.queue);
      const nlohmann::json wl = dispatch::BuildWorkload(p);
      CHECK(wl["metadata"]["namespace"] == d.ns);
      CHECK(wl["spec"]["queueName"] == placement::LocalQueueIn(config.local_queues, d.ns, d.queue));
    }
  }
}

}  // namespace gantry
