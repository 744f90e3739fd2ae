// JobJsonText writes a job's JSON by hand (the submit, get and list hot
// paths); it must say exactly what JobToJson says.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gantry/api/job_view.h"
#include "gantry/api/k8s_status.h"
#include "gantry/job/job_document.h"

namespace gantry::api {
namespace {

JobRecord Job() {
  JobRecord job;
  job.uid = "0b7e3c1a-4f9e-4c55-9d8e-2f1a6b7c8d9e";
  job.ns = "team-a";
  job.name = "llama-ft";
  job.spec_json = R"({"queue":"team-a","priority":3,"template":{"kind":"Job"}})";
  job.created_ms = 1'764'000'000'123;
  job.updated_ms = 1'764'000'100'456;
  return job;
}

}  // namespace

TEST_CASE("a job's JSON text says what its JSON value says", "[api]") {
  std::vector<JobRecord> jobs;
  jobs.push_back(Job());  // fresh: no labels, no cluster, no message

  JobRecord full = Job();
  full.labels_json = R"({"run":"a\"b","team":"nlp"})";
  full.phase = JobPhase::kRunning;
  full.cluster = "gpu-eu-1";
  full.epoch = 2;
  full.lease_ms = 1'764'000'050'000;
  full.conditions_json = R"([{"type":"ClusterLost","status":"True","message":"x"}])";
  full.message = "quote \" backslash \\ newline \n tab \t bell \x07 unicode é ✓";
  full.remote_status = "1/4 pods active";
  jobs.push_back(full);

  JobRecord finished = full;
  finished.phase = JobPhase::kSucceeded;
  finished.finished_ms = 1'764'000'110'000;
  jobs.push_back(finished);

  JobRecord odd = Job();  // stored text that is not the expected kind stands in as empty
  odd.labels_json = "[]";
  odd.conditions_json = "";
  odd.spec_json = "oops";
  jobs.push_back(odd);

  for (const JobRecord& job : jobs) {
    INFO(job.message);
    std::string text = JobJsonText(job);
    nlohmann::json parsed = nlohmann::json::parse(text);
    CHECK(parsed == JobToJson(job));
    CHECK(parsed["metadata"]["uid"] == job.uid);
  }
  nlohmann::json parsed = nlohmann::json::parse(JobJsonText(full));
  CHECK(parsed["status"]["message"] == full.message);
  CHECK(parsed["metadata"]["labels"]["run"] == "a\"b");
  CHECK(parsed["status"]["leaseTime"] == "2025-11-24T16:00:50Z");
  CHECK_FALSE(parsed["status"].contains("completionTime"));
  CHECK(nlohmann::json::parse(JobJsonText(finished))["status"]["completionTime"] == "2025-11-24T16:01:50Z");
}

TEST_CASE("a running job whose owner is out of reach says so in its status, until the engine flags it itself",
          "[api]") {
  JobRecord running = Job();
  running.phase = JobPhase::kRunning;
  running.cluster = "gpu-eu-1";
  running.message = "running in gpu-eu-1";
  const OwnersOut out = {{"gpu-eu-1", {1'764'000'090'000, false}}};
  nlohmann::json parsed = nlohmann::json::parse(JobJsonText(running, &out));
  CHECK(parsed == JobToJson(running, &out));
  REQUIRE(parsed["status"].contains("ownerUnreachable"));
  CHECK(parsed["status"]["ownerUnreachable"]["since"] == "2025-11-24T16:01:30Z");
  CHECK_THAT(parsed["status"]["ownerUnreachable"]["message"].get<std::string>(),
             Catch::Contains("gpu-eu-1 has not answered gantry since 2025-11-24T16:01:30Z") &&
                 Catch::Contains("clusterLostTimeout"));
  CHECK(parsed["status"]["message"] == "running in gpu-eu-1");  // the stored message is kept
  // Not for another cluster's outage, nor a finished job, nor a job the
  // engine already flagged (condition OwnerUnreachable: its own story).
  const OwnersOut elsewhere = {{"gpu-us-1", {1, false}}};
  CHECK_FALSE(nlohmann::json::parse(JobJsonText(running, &elsewhere))["status"].contains("ownerUnreachable"));
  JobRecord finished = running;
  finished.phase = JobPhase::kSucceeded;
  CHECK_FALSE(nlohmann::json::parse(JobJsonText(finished, &out))["status"].contains("ownerUnreachable"));
  JobRecord flagged = running;
  flagged.conditions_json = R"([{"type":"OwnerUnreachable","status":"True","reason":"OwnerLost","message":"x"}])";
  CHECK_FALSE(nlohmann::json::parse(JobJsonText(flagged, &out))["status"].contains("ownerUnreachable"));
  CHECK_FALSE(nlohmann::json::parse(JobJsonText(running))["status"].contains("ownerUnreachable"));
  // Being cancelled: the cancel waits for the owner, whatever the outage's
  // length, and no onClusterLoss applies.
  JobRecord cancelling = running;
  cancelling.phase = JobPhase::kCancelling;
  const std::string said =
      nlohmann::json::parse(JobJsonText(cancelling, &out))["status"]["ownerUnreachable"]["message"].get<std::string>();
  CHECK_THAT(said, Catch::Contains("gpu-eu-1 has not answered gantry since 2025-11-24T16:01:30Z") &&
                       Catch::Contains("the cancel completes once it answers"));
  CHECK(said.find("onClusterLoss") == std::string::npos);
}

}  // namespace gantry::api

namespace gantry::api {

TEST_CASE("a JSON answer quoting bytes that are not UTF-8 writes them as U+FFFD, not a 500", "[api]") {
  // An event's message or a cluster's lastError quoting a worker's error
  // page cut inside a character.
  const nlohmann::json body = {{"items", {{{"message", "caf\xC3"}}}}};
  http::Response r = JsonAnswer(body);
  CHECK(r.status == 200);
  auto parsed = nlohmann::json::parse(r.body, nullptr, false);
  REQUIRE_FALSE(parsed.is_discarded());
  CHECK(parsed["items"][0]["message"] == "caf\xEF\xBF\xBD");
}

}  // namespace gantry::api

namespace gantry::api {

TEST_CASE("the template's kind of a stored spec is read without parsing it, as parsing would read it",
          "[api]") {
  std::vector<std::string> specs;
  for (const char* example : {"llama-ft", "batch-infer", "sweep-trial", "trainjob"}) {
    INFO(example);
    std::ifstream in(std::string(GANTRY_SOURCE_DIR) + "/config/examples/" + example + ".yaml");
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseJobDocument(text.str(), DocumentFormat::kYaml, std::nullopt);
    REQUIRE(std::holds_alternative<JobSpec>(parsed));
    specs.push_back(SpecToJsonText(std::get<JobSpec>(parsed)));
  }
  specs.push_back(R"({"queue":"q","template":{"apiVersion":"x/v1","kind":"Tr\u0061inJob"}})");  // parsed
  specs.push_back(R"({"queue":"q","template":{"kind":7}})");
  specs.push_back(R"({"queue":"q"})");
  specs.push_back("not JSON");
  specs.push_back(R"({"template":[{"kind":"Job"}]})");
  specs.push_back(R"({"template":{"kind":null}})");
  specs.push_back(R"({"kind":"Job","spec":{"template":{"kind":"Pod"}}})");
  specs.push_back(R"({"template":{"kind":"Job","kind":"JobSet"}})");  // nlohmann keeps the last
  specs.push_back(R"({"template":{"kind":"Jo)");
  for (const std::string& spec : specs) {
    INFO(spec.substr(0, 200));
    std::string before;  // as GET .../remoteobjects read it, parsing the spec
    try {
      before = nlohmann::json::parse(spec).value(nlohmann::json::json_pointer("/template/kind"), std::string());
    } catch (const nlohmann::json::exception&) {
    }
    CHECK(TemplateKindOf(spec) == before);
  }
  CHECK(TemplateKindOf(specs[0]) == "Job");
  CHECK(TemplateKindOf(specs[2]) == "JobSet");
  CHECK(TemplateKindOf(specs[4]) == "TrainJob");
}

TEST_CASE("a remote object's lastError shows while its create is to be sent again, not once it landed", "[api]") {
  RemoteIntent row;
  row.cluster = "c1";
  row.kind = "Job";
  row.ns = "team-a";
  row.name = "llama-ft-0b7e3c1a";
  row.epoch = 2;
  dispatch::ActionError error{"c1", "Job", 2, "HTTP 503 the cluster was unreachable", 1'764'000'000'000};
  auto item = [&](const std::vector<dispatch::ObservedObject>& observed) {
    return RemoteObjectsToJson({row}, observed, {error}, "Job")["items"][0];
  };
  CHECK(item({})["lastError"]["message"] == "HTTP 503 the cluster was unreachable");
  // Seen there at its epoch: the failed try's answer was lost, or a later try landed.
  dispatch::ObservedObject seen;
  seen.cluster = "c1";
  seen.kind = "Job";
  seen.name = row.name;
  seen.epoch = 2;
  seen.state = "Running";
  CHECK_FALSE(item({seen}).contains("lastError"));
  // An older epoch's object holding the name says nothing of this create.
  seen.epoch = 1;
  CHECK(item({seen}).contains("lastError"));
  row.created_ms = 1'764'000'001'000;
  CHECK_FALSE(item({}).contains("lastError"));
}

TEST_CASE("a remote object of a cluster removed from the inventory says so", "[api]") {
  RemoteIntent in_c1, in_c9;
  in_c1.cluster = "c1";
  in_c1.kind = "Workload";
  in_c9 = in_c1;
  in_c9.cluster = "c9";
  const nlohmann::json items = RemoteObjectsToJson({in_c9, in_c1}, {}, {}, "", {"c9"})["items"];
  REQUIRE(items.size() == 2);
  CHECK(items[0]["cluster"] == "c1");  // by cluster
  CHECK_FALSE(items[0].contains("notInInventory"));
  CHECK(items[1]["notInInventory"] == true);
}

}  // namespace gantry::api
