// Names a worker derives from a JobSet's are checked at submission, as the
// JobSet webhook would check them after the lease.
#include <catch2/catch.hpp>

#include "gantry/job/job_document.h"
#include "job_fixtures.h"

namespace gantry {
namespace {

using nlohmann::json;

json JobSetDoc(const std::string& name) {
  json doc = std::get<json>(YamlToJson(testing::kJobSetYaml));
  doc["metadata"]["name"] = name;
  return doc;
}

// The causes of refusing doc, or none when it is accepted.
std::vector<FieldError> Causes(const json& doc) {
  auto parsed = ParseJobJson(doc, std::nullopt);
  if (std::holds_alternative<JobSpec>(parsed)) return {};
  return std::get<DocumentError>(parsed).causes;
}

const std::string kWorkers = "spec.template.spec.replicatedJobs[1].name";

}  // namespace

TEST_CASE("a JobSet's name must start with a letter", "[job][errors]") {
  std::vector<FieldError> causes = Causes(JobSetDoc("7b-ddp"));
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == "metadata.name");
  CHECK_THAT(causes[0].message, Catch::Contains("start with a letter"));
  // A batch/v1 Job's may: the Job API takes DNS-1123 names.
  json batch = std::get<json>(YamlToJson(testing::kGantryJobYaml));
  batch["metadata"]["name"] = "7b-ft";
  CHECK(Causes(batch).empty());
}

TEST_CASE("a JobSet's child Job names fit 63 characters", "[job][errors]") {
  // "workers" has replicas 2: <name>-<8 hex>-workers-1 is name + 19 long.
  CHECK(Causes(JobSetDoc(std::string(44, 'a'))).empty());
  std::vector<FieldError> causes = Causes(JobSetDoc(std::string(45, 'a')));
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == kWorkers);
  CHECK_THAT(causes[0].message, Catch::Contains("64 characters, more than 63"));

  // Eleven replicas: the last index, 10, has one more digit.
  json doc = JobSetDoc(std::string(44, 'a'));
  doc["spec"]["template"]["spec"]["replicatedJobs"][1]["replicas"] = 11;
  causes = Causes(doc);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == kWorkers);
}

TEST_CASE("an Indexed replicatedJob's pod names fit 63 characters", "[job][errors]") {
  // <name>-<8 hex>-workers-1-<last completion>-<5 random>: name + 19 + 1 + digits + 6.
  auto indexed = [](std::size_t name_len, int completions) {
    json doc = JobSetDoc(std::string(name_len, 'a'));
    json& spec = doc["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"];
    spec["completionMode"] = "Indexed";
    spec["completions"] = completions;
    return doc;
  };
  CHECK(Causes(indexed(36, 10)).empty());        // 36 + 19 + 1 + 1 + 6 = 63
  CHECK(Causes(indexed(36, 100)).size() == 1);   // two digits: 64
  std::vector<FieldError> causes = Causes(indexed(37, 10));
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == kWorkers);
  CHECK_THAT(causes[0].message, Catch::Contains("pods"));
  // Without Indexed, pod names are not checked.
  json plain = indexed(37, 10);
  plain["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"].erase(
      "completionMode");
  CHECK(Causes(plain).empty());
}

TEST_CASE("a JobSet manifest's names are checked the same way", "[job][errors]") {
  json doc = JobSetDoc("ddp");
  json manifest = doc["spec"]["template"];
  manifest["metadata"] = {{"name", "9ddp"},
                          {"labels", {{"kueue.x-k8s.io/queue-name", "research"}}}};
  std::vector<FieldError> causes = Causes(manifest);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == "metadata.name");
  manifest["metadata"]["name"] = std::string(45, 'a');
  causes = Causes(manifest);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == kWorkers.substr(std::string("spec.template.").size()));
}

}  // namespace gantry
