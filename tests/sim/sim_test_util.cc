#include "sim_test_util.h"

namespace gantry::sim::testing {

using nlohmann::json;

json MakeWorkload(const std::string& name, int count, int gpus, const std::string& queue, int priority) {
  json requests = {{"cpu", "1"}};
  if (gpus > 0) requests["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata", {{"name", name}, {"labels", {{"kueue.x-k8s.io/multikueue-origin", "gantry"}}}}},
          {"spec",
           {{"queueName", queue},
            {"priority", priority},
            {"podSets",
             json::array({{{"name", "main"},
                           {"count", count},
                           {"template",
                            {{"spec",
                              {{"containers", json::array({{{"name", "c"},
                                                            {"image", "x"},
                                                            {"resources", {{"requests", requests}}}}})}}}}}}})}}}};
}

json MakeJob(const std::string& name, const std::string& workload, const std::string& job_uid,
             const std::string& duration) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", name},
            {"labels", {{"gantry.dev/job-uid", job_uid}}},
            {"annotations",
             {{"kueue.x-k8s.io/prebuilt-workload-name", workload},
              {"gantry.dev/epoch", "1"},
              {"sim.gantry.dev/duration", duration}}}}},
          {"spec",
           {{"suspend", true},
            {"parallelism", 1},
            {"template", {{"spec", {{"restartPolicy", "Never"}, {"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}}}}}};
}

ClusterConfig SmallCluster(const std::string& name, int nodes) {
  ClusterConfig c;
  c.name = name;
  c.accelerator = {"H100-80GB", 80, 8, "nvlink"};
  c.nodes = nodes;
  c.flavor = "h100";
  FinishClusterConfig(&c);
  return c;
}

std::vector<nlohmann::json> StreamEvents(const std::shared_ptr<http::ResponseStream>& stream) {
  bool finished = false;
  std::vector<nlohmann::json> out;
  for (const std::string& line : stream->Take(&finished)) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json ClusterFixture::Get(const ResourceInfo& res, const std::string& name, const std::string& ns) {
  return *state.Get(res, ns, name);
}

int64_t ClusterFixture::ReservedGpus() {
  const ResourceList& r = state.Reserved();
  return r.count(kGpuResource) ? r.at(kGpuResource) / kGpu : 0;
}

}  // namespace gantry::sim::testing
