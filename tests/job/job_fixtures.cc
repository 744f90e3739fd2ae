#include "job_fixtures.h"

#include <catch2/catch.hpp>

namespace gantry::testing {

const char* const kGantryJobYaml = R"(
apiVersion: gantry.dev/v1
kind: Job
metadata:
  name: llama-ft
  namespace: team-a
  labels: {team: nlp}
spec:
  queue: team-a
  priority: 100
  placement:
    clusters: [gpu-eu-1]
    regions: [eu-central-1]
    complianceZones: [eu]
    clusterSelector: {matchLabels: {tier: prod}}
    accelerator: {model: H100-80GB, minMemoryGiB: 80, interconnect: nvlink}
    datasets: ["s3://corpus/v3"]
    maxPricePerGPUHour: 4.5
  dispatch: {mode: Incremental, stepSize: 3, roundSeconds: 60, timeoutSeconds: 600}
  onClusterLoss: Fail
  finishedRetentionSeconds: 3600
  template:
    apiVersion: batch/v1
    kind: Job
    metadata:
      labels: {app: llama}
    spec:
      parallelism: 4
      completions: 4
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: trainer
            image: trainer:1
            resources:
              requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: 8}
              limits: {nvidia.com/gpu: 8}
          - name: sidecar
            image: logs:1
            resources:
              requests: {cpu: 500m, memory: 1Gi}
)";

const char* const kBatchManifestYaml = R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: sweep-7
  namespace: team-b
  uid: 0b9d2a4e-1111-2222-3333-444455556666
  resourceVersion: "123"
  labels:
    kueue.x-k8s.io/queue-name: team-b
  annotations:
    gantry.dev/priority: "-5"
    gantry.dev/regions: "eu-central-1, eu-west-1"
    gantry.dev/on-cluster-loss: Wait
    gantry.dev/finished-retention-seconds: "600"
    note: keep-me
spec:
  parallelism: 3
  completions: 2
  template:
    spec:
      restartPolicy: OnFailure
      initContainers:
      - name: fetch
        image: fetch:1
        resources:
          requests: {cpu: "4", memory: 1Gi}
      containers:
      - name: main
        image: sweep:1
        resources:
          requests: {cpu: "1", memory: 2Gi}
status:
  active: 1
)";

const char* const kJobSetYaml = R"(
apiVersion: gantry.dev/v1
kind: Job
metadata: {name: ddp}
spec:
  queue: research
  template:
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    spec:
      replicatedJobs:
      - name: driver
        template:
          spec:
            template:
              spec:
                containers:
                - name: d
                  image: driver:1
                  resources: {requests: {cpu: 1, memory: 1Gi}}
      - name: workers
        replicas: 2
        template:
          spec:
            parallelism: 4
            template:
              spec:
                containers:
                - name: w
                  image: worker:1
                  resources:
                    requests: {cpu: 2, memory: 8Gi}
                    limits: {nvidia.com/gpu: 1}
)";

const char* const kPyTorchJobYaml = R"(
apiVersion: gantry.dev/v1
kind: Job
metadata: {name: torch}
spec:
  queue: research
  template:
    apiVersion: kubeflow.org/v1
    kind: PyTorchJob
    spec: {pytorchReplicaSpecs: {}}
  podSets:
  - name: master
    template:
      spec:
        containers:
        - {name: m, resources: {requests: {cpu: 1, memory: 4Gi}}}
  - name: worker
    count: 3
    template:
      spec:
        containers:
        - {name: w, resources: {requests: {cpu: 4, memory: 16Gi, nvidia.com/gpu: 2}}}
)";

nlohmann::json GantryJobJson() {
  auto doc = YamlToJson(kGantryJobYaml);
  REQUIRE(std::holds_alternative<nlohmann::json>(doc));
  return std::get<nlohmann::json>(doc);
}

JobSpec MustParse(const std::string& body, DocumentFormat format,
                  std::optional<std::string_view> path_namespace) {
  auto parsed = ParseJobDocument(body, format, path_namespace);
  if (auto* e = std::get_if<DocumentError>(&parsed)) FAIL("unexpected error: " << e->message);
  return std::get<JobSpec>(parsed);
}

}  // namespace gantry::testing
