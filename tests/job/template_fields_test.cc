// UnknownTemplateFields: field names Kubernetes does not know in a Job's or a
// JobSet's pod templates, warned of at submission.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "gantry/job/template_fields.h"

namespace gantry {
namespace {

nlohmann::json BatchJob() {
  return nlohmann::json::parse(R"({"apiVersion": "batch/v1", "kind": "Job", "spec": {
      "parallelism": 2,
      "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "t:1",
                        "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": 8}}}]}}}})");
}

}  // namespace

TEST_CASE("a misspelt field of a Job's pod template is named with its path, a right one is not", "[job]") {
  CHECK(UnknownTemplateFields(BatchJob()).empty());

  nlohmann::json typo = BatchJob();
  typo["spec"]["parallelizm"] = 4;
  auto& container = typo["spec"]["template"]["spec"]["containers"][0];
  container["resources"]["limts"] = container["resources"]["limits"];
  container["resources"].erase("limits");
  typo["spec"]["template"]["spec"]["nodeSelecter"] = {{"gpu", "h100"}};
  const std::vector<std::string> found = UnknownTemplateFields(typo);
  CHECK(found == std::vector<std::string>{
                     "spec.template.spec: unknown field \"parallelizm\"",
                     "spec.template.spec.template.spec: unknown field \"nodeSelecter\"",
                     "spec.template.spec.template.spec.containers[0].resources: unknown field \"limts\"",
                 });
}

TEST_CASE("a GANTRY_EPOCH the template sets is warned of: gantry replaces it with the job's epoch", "[job]") {
  nlohmann::json job = BatchJob();
  job["spec"]["template"]["spec"]["containers"][0]["env"] = {{{"name", "A"}, {"value", "1"}},
                                                             {{"name", "GANTRY_EPOCH"}, {"value", "77"}}};
  CHECK(UnknownTemplateFields(job) ==
        std::vector<std::string>{"spec.template.spec.template.spec.containers[0].env: GANTRY_EPOCH is set by gantry "
                                 "to the job's epoch; the value given here is replaced"});
  // An entry whose name is no string (the worker's API server judges it) is
  // passed over, not a throw.
  job["spec"]["template"]["spec"]["containers"][0]["env"] = {{{"name", 5}}, {{"name", nullptr}}, 7};
  CHECK(UnknownTemplateFields(job).empty());
}

TEST_CASE("a JobSet's pod templates are looked at too, another kind's not at all", "[job]") {
  nlohmann::json jobset = nlohmann::json::parse(R"({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
      "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
        "template": {"spec": {"initContainers": [{"name": "i", "image": "t:1", "comand": ["x"]}],
                              "containers": [{"name": "m", "image": "t:1"}]}}}}}]}})");
  CHECK(UnknownTemplateFields(jobset) ==
        std::vector<std::string>{
            "spec.template.spec.replicatedJobs[0].template.spec.template.spec.initContainers[0]: unknown field "
            "\"comand\""});
  nlohmann::json other = nlohmann::json::parse(
      R"({"apiVersion": "ray.io/v1", "kind": "RayJob", "spec": {"anything": {"limts": 1}}})");
  CHECK(UnknownTemplateFields(other).empty());
  CHECK(UnknownTemplateFields(nlohmann::json::array()).empty());  // the wrong shape: nothing, no throw
}

}  // namespace gantry

namespace gantry {

TEST_CASE("finalizers at any level of the template are warned of as dropped, and a Job's unknown top-level field",
          "[job]") {
  const nlohmann::json keep = nlohmann::json::array({"example.com/keep"});
  nlohmann::json job = BatchJob();
  job["metadata"]["finalizers"] = keep;
  job["spec"]["template"]["metadata"]["finalizers"] = keep;
  job["spc"] = nlohmann::json::object();
  const std::vector<std::string> found = UnknownTemplateFields(job);
  REQUIRE(found.size() == 3);
  CHECK(found[0] == "spec.template: unknown field \"spc\"");
  CHECK_THAT(found[1], Catch::StartsWith("spec.template.metadata.finalizers: dropped: gantry deletes the remote job"));
  CHECK_THAT(found[2], Catch::StartsWith("spec.template.spec.template.metadata.finalizers: dropped"));
  // Submitted as is: the manifest's own paths; its top-level fields are the
  // document's (refused there), not warned of here.
  CHECK(UnknownTemplateFields(job, "") ==
        std::vector<std::string>{found[1].substr(std::string("spec.template.").size()),
                                 found[2].substr(std::string("spec.template.").size())});
  // An empty list is none.
  job["metadata"]["finalizers"] = nlohmann::json::array();
  CHECK(UnknownTemplateFields(job).size() == 2);

  nlohmann::json jobset = nlohmann::json::parse(R"({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
      "spec": {"replicatedJobs": [{"name": "w", "template": {"metadata": {"finalizers": ["x/y"]}, "spec": {
        "template": {"spec": {"containers": [{"name": "m", "image": "t:1"}]}}}}}]}})");
  CHECK(UnknownTemplateFields(jobset) ==
        std::vector<std::string>{"spec.template.spec.replicatedJobs[0].template.metadata.finalizers: dropped: gantry "
                                 "deletes the remote job to cancel, requeue or fence it, and a finalizer would hold "
                                 "that delete (the worker's controllers add their own)"});
  // Another kind: its finalizers (its top-level fields are its CRD's business).
  nlohmann::json ray = nlohmann::json::parse(
      R"({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"finalizers": ["ray.io/rayjob-finalizer"]},
          "extra": 1, "spec": {}})");
  const std::vector<std::string> of_ray = UnknownTemplateFields(ray);
  REQUIRE(of_ray.size() == 1);
  CHECK_THAT(of_ray[0], Catch::StartsWith("spec.template.metadata.finalizers: dropped"));
}

TEST_CASE("a manifest submitted as is gets paths of its own, and warnings stay few, short and printable", "[job]") {
  nlohmann::json manifest = BatchJob();
  manifest["spec"]["parallelizm"] = 4;
  CHECK(UnknownTemplateFields(manifest, "") == std::vector<std::string>{"spec: unknown field \"parallelizm\""});

  nlohmann::json many = BatchJob();
  for (int i = 0; i < 30; ++i) many["spec"]["typo" + std::to_string(i)] = i;
  many["spec"]["bad\r\nX-Injected: 1"] = 1;
  many["spec"][std::string(1000, 'k')] = 1;
  const std::vector<std::string> found = UnknownTemplateFields(many);
  REQUIRE(found.size() == kMaxTemplateWarnings);
  CHECK(found.back() == "and 23 more unknown field(s)");
  for (const std::string& w : found) {
    INFO(w);
    CHECK(w.size() <= kMaxTemplateWarningBytes);
    CHECK(std::all_of(w.begin(), w.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
  }
}

}  // namespace gantry
