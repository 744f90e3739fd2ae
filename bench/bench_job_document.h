// The job document both submission benchmarks use (submit_loadgen posts it,
// job_parse_bench parses it).
#pragma once

#include <string>

namespace gantry::bench {

// A 4-pod, 8-GPU-per-pod fine-tuning job, about 1.3 KB like the examples.
inline std::string JobDocument(const std::string& name) {
  return R"({"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{"name":")" + name +
         R"(","namespace":"bench","labels":{"team":"nlp","run":"bench"}},"spec":{"queue":"team-a","priority":100,)"
         R"("placement":{"regions":["eu-central-1","eu-west-1"],"complianceZones":["eu"],)"
         R"("accelerator":{"model":"H100-80GB","minMemoryGiB":80,"interconnect":"nvlink"},)"
         R"("datasets":["s3://corpus/v3"],"maxPricePerGPUHour":4.5},)"
         R"("dispatch":{"mode":"Incremental","stepSize":3,"roundSeconds":60},"onClusterLoss":"Requeue",)"
         R"("template":{"apiVersion":"batch/v1","kind":"Job","spec":{"parallelism":4,"completions":4,)"
         R"("completionMode":"Indexed","template":{"metadata":{"labels":{"app":"trainer"}},"spec":{)"
         R"("restartPolicy":"Never","containers":[{"name":"trainer","image":"registry.example.com/llama-trainer:3.1",)"
         R"("args":["--config","/etc/ft/llama.yaml","--epochs","3"],"env":[{"name":"NCCL_DEBUG","value":"WARN"}],)"
         R"("resources":{"requests":{"cpu":"32","memory":"400Gi","nvidia.com/gpu":8},"limits":{"nvidia.com/gpu":8}}}]}}}}}})";
}

}  // namespace gantry::bench
