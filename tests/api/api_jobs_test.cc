// The job routes over real loopback HTTP: every route, every error code.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <memory>

#include "api_fixture.h"
#include "gantry/api/k8s_status.h"

namespace gantry::testing {

TEST_CASE("submit, idempotent resubmit, conflicting resubmit", "[api]") {
  ApiFixture api;
  auto created = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1"));
  REQUIRE(created.status == 201);
  auto job = api.Json(created);
  CHECK(job["metadata"]["uid"].get<std::string>().size() == 36);
  CHECK(job["status"]["phase"] == "Queued");
  CHECK(job["spec"]["podSets"][0]["count"] == 2);

  auto again = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1"));
  CHECK(again.status == 200);
  CHECK(api.Json(again)["metadata"]["uid"] == job["metadata"]["uid"]);

  auto conflict = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1", "team-a", 5));
  CHECK(conflict.status == 409);
  CHECK(api.Json(conflict)["reason"] == "AlreadyExists");

  auto got = api.Call("GET", "/api/v1/namespaces/team-a/jobs/train-1");
  CHECK(got.status == 200);
  CHECK(api.Json(got)["metadata"]["uid"] == job["metadata"]["uid"]);
}

TEST_CASE("a job submitted again with a quantity spelt another way is the same job and one with another amount "
          "is not",
          "[api]") {
  ApiFixture api;
  auto created = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1"));
  REQUIRE(created.status == 201);
  const std::string uid = api.Json(created)["metadata"]["uid"];
  // JobDoc asks cpu "4" and memory "16Gi".
  auto respelled = [](std::string doc, const std::string& from, const std::string& to) {
    const auto at = doc.find(from);
    REQUIRE(at != std::string::npos);
    return doc.replace(at, from.size(), to);
  };
  const std::string same = respelled(respelled(JobDoc("train-1"), R"("cpu":"4")", R"("cpu":"4000m")"),
                                     R"("memory":"16Gi")", R"("memory":"17179869184")");
  auto again = api.Call("POST", "/api/v1/namespaces/team-a/jobs", same);
  CHECK(again.status == 200);
  CHECK(api.Json(again)["metadata"]["uid"] == uid);
  auto more = api.Call("POST", "/api/v1/namespaces/team-a/jobs",
                       respelled(JobDoc("train-1"), R"("cpu":"4")", R"("cpu":"4001m")"));
  CHECK(more.status == 409);
  CHECK(api.Json(more)["reason"] == "AlreadyExists");
}

TEST_CASE("a document with thousands of bad fields gets the first 100 causes and a count of the rest", "[api]") {
  ApiFixture api;
  nlohmann::json doc = {{"apiVersion", "gantry.dev/v1"},
                        {"kind", "Job"},
                        {"metadata", {{"name", "many"}}},
                        {"spec", {{"queue", "team-a"}, {"template", {{"apiVersion", "batch/v1"}, {"kind", "Job"}}}}}};
  nlohmann::json containers = nlohmann::json::array();
  for (int i = 0; i < 3'000; ++i) containers.push_back({{"name", "c" + std::to_string(i)}});  // no image
  doc["spec"]["template"]["spec"]["template"]["spec"] = {{"containers", containers}};
  auto refused = api.Call("POST", "/api/v1/namespaces/team-a/jobs", doc.dump());
  REQUIRE(refused.status == 422);
  CHECK(refused.body.size() < 64 * 1024);
  const auto causes = api.Json(refused)["details"]["causes"];
  REQUIRE(causes.size() == api::kMaxCauses + 1);
  CHECK(causes[0]["field"] == "spec.template.spec.template.spec.containers[0].image");
  CHECK_THAT(causes.back().value("message", ""), Catch::StartsWith("and ") && Catch::EndsWith(" more not listed"));
}

TEST_CASE("a job's document as gantry shows it can be submitted again: as is it is the same job and renamed a new one",
          "[api]") {
  ApiFixture api;
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("shown")).status == 201);
  auto got = api.Call("GET", "/api/v1/namespaces/team-a/jobs/shown");
  REQUIRE(got.status == 200);
  nlohmann::json shown = api.Json(got);
  REQUIRE(shown.contains("status"));
  REQUIRE(shown["spec"]["podSets"].size() == 1);
  CHECK(api.Call("POST", "/api/v1/namespaces/team-a/jobs", shown.dump()).status == 200);  // unchanged
  shown["metadata"]["name"] = "shown-again";
  auto copy = api.Call("POST", "/api/v1/namespaces/team-a/jobs", shown.dump());
  REQUIRE(copy.status == 201);
  CHECK(api.Json(copy)["metadata"]["uid"] != shown["metadata"]["uid"]);
  // Pod sets other than the template's are still refused at their field.
  shown["metadata"]["name"] = "shown-other";
  shown["spec"]["podSets"][0]["count"] = 7;
  auto refused = api.Call("POST", "/api/v1/namespaces/team-a/jobs", shown.dump());
  REQUIRE(refused.status == 422);
  CHECK(api.Json(refused)["details"]["causes"][0]["field"] == "spec.podSets");
}

TEST_CASE("the same document again puts an Unschedulable job back to Queued once, and while Queued it writes nothing",
          "[api]") {
  ApiFixture api;
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1")).status == 201);
  const JobRecord submitted = api.store().Get("team-a", "train-1").value();
  std::promise<bool> judged;  // the engine's verdict (the API tests run no engine)
  api.store().Transition(submitted.uid, JobPhase::kQueued, JobPhase::kUnschedulable, "no cluster could ever run it",
                         std::nullopt, [&judged](Result<JobRecord> r) { judged.set_value(r.ok()); });
  REQUIRE(judged.get_future().get());
  auto events = [&] { return api.store().Events(submitted.uid).value().size(); };
  const std::size_t events_before = events();

  // Unschedulable: queued to be judged again, and the answer says this post did it.
  auto again = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1"));
  CHECK(again.status == 200);
  CHECK(api.Json(again)["status"]["phase"] == "Queued");
  CHECK(again.headers["gantry-resubmitted"] == "true");
  CHECK(events() == events_before + 1);
  const JobRecord queued = api.store().Get("team-a", "train-1").value();
  CHECK(queued.message.rfind("submitted again", 0) == 0);
  // Queued since this post: its dispatch timeout counts from here.
  CHECK(queued.nominated_ms > 0);
  CHECK(queued.nominated_ms >= submitted.created_ms);

  // Still Queued (its message still says "submitted again"): the same
  // answer as any idempotent re-post, with nothing written and no header.
  for (int i = 0; i < 3; ++i) {
    auto once_more = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1"));
    CHECK(once_more.status == 200);
    CHECK(api.Json(once_more)["status"]["phase"] == "Queued");
    CHECK(once_more.headers.count("gantry-resubmitted") == 0);
  }
  CHECK(events() == events_before + 1);
  CHECK(api.store().Get("team-a", "train-1").value().updated_ms == queued.updated_ms);
}

TEST_CASE("a job the engine refuses is 422 with its field, unless it is already stored as sent", "[api]") {
  auto refusing = std::make_shared<std::atomic<bool>>(false);
  ApiFixtureOptions options;
  options.refuse = [refusing](const JobSpec&) -> std::optional<FieldError> {
    if (!refusing->load()) return std::nullopt;
    return FieldError{"spec.template.kind", "Unsupported value: \"Widget\""};
  };
  ApiFixture api(options);
  auto created = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1"));
  REQUIRE(created.status == 201);
  refusing->store(true);  // e.g. its kind left the daemon's genericKinds

  // The same document again: the stored job, as any idempotent resubmission.
  auto again = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("train-1"));
  CHECK(again.status == 200);
  CHECK(api.Json(again)["metadata"]["uid"] == api.Json(created)["metadata"]["uid"]);
  // Anything else is refused, naming the field, and nothing is stored.
  for (const std::string& body : {JobDoc("train-2"), JobDoc("train-1", "team-a", 5)}) {
    auto refused = api.Call("POST", "/api/v1/namespaces/team-a/jobs", body);
    CHECK(refused.status == 422);
    CHECK(api.Json(refused)["details"]["causes"][0]["field"] == "spec.template.kind");
  }
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/train-2").status == 404);
}

TEST_CASE("a large job document is read off the server's loop: other requests are answered meanwhile", "[api]") {
  // The intake's Refuse runs once the document is parsed; held here, it
  // stands for a parse that takes long (a megabyte of YAML takes most of a
  // second). On the loop it would hold every connection until it ends.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto reached = std::make_shared<std::atomic<bool>>(false);
  ApiFixtureOptions options;
  options.refuse = [released, reached](const JobSpec& spec) -> std::optional<FieldError> {
    if (spec.name == "large") {
      reached->store(true);
      released.wait();
    }
    return std::nullopt;
  };
  options.slow_lane_capacity = 1;
  ApiFixture api(options);
  // Valid JSON over 32 KiB.
  auto submit = [&](const std::string& name) { return PostLargeJob(api, name); };
  // Released once, also when a REQUIRE below fails: the pending submissions'
  // futures, destroyed then, wait for their answers, which wait for it.
  std::atomic<bool> released_once{false};
  auto release_once = [&] {
    if (!released_once.exchange(true)) release->set_value();
  };
  auto first = submit("large");
  struct OnExit {
    std::function<void()> fn;
    ~OnExit() { fn(); }
  } release_first{release_once};
  REQUIRE(WaitFor([&] { return reached->load(); }, std::chrono::seconds(10)));
  // Held: the health check and a small submission are answered all the same.
  CHECK(api.Call("GET", "/healthz", "", "").status == 200);
  CHECK(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("small")).status == 201);
  // Two more: one waits its turn (the lane's capacity), the other gets 429 at once, with nothing stored.
  std::map<std::string, std::future<Result<http::ClientResponse>>> more;
  more.emplace("large-2", submit("large-2"));
  more.emplace("large-3", submit("large-3"));
  OnExit release_more{release_once};
  std::string refused;
  REQUIRE(WaitFor([&] {
    for (auto& [name, f] : more) {
      if (f.wait_for(std::chrono::seconds(0)) == std::future_status::ready) refused = name;
    }
    return !refused.empty();
  }, std::chrono::seconds(10)));
  auto busy = more.at(refused).get();
  REQUIRE(busy.ok());
  CHECK(busy->status == 429);
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/" + refused).status == 404);
  release_once();
  const std::string waited = refused == "large-2" ? "large-3" : "large-2";
  for (auto* submitted : {&first, &more.at(waited)}) {
    auto answer = submitted->get();
    REQUIRE(answer.ok());
    CHECK(answer->status == 201);
  }
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/large").status == 200);
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/" + waited).status == 200);
}

TEST_CASE("YAML bodies are accepted", "[api]") {
  ApiFixture api;
  std::string yaml = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: plain
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: 1, memory: 1Gi}}
)";
  auto r = api.Call("POST", "/api/v1/namespaces/team-a/jobs", yaml, kAdminToken, "application/yaml");
  CHECK(r.status == 201);
  CHECK(api.Json(r)["spec"]["queue"] == "team-a");
}

TEST_CASE("error codes are Kubernetes Status objects", "[api]") {
  ApiFixture api({.with_tokens = true, .body_limit = 4096});
  struct Row {
    const char* what;
    std::string method, target, body, content_type;
    int code;
    std::string reason;
    std::string field;  // expected first cause field, "" = any
  };
  const Row rows[] = {
      {"malformed JSON", "POST", "/api/v1/namespaces/team-a/jobs", "{\"apiVersion\":", "application/json", 400,
       "BadRequest", ""},
      {"missing queue", "POST", "/api/v1/namespaces/team-a/jobs",
       R"({"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{"name":"x"},"spec":{}})", "application/json",
       422, "Invalid", "spec.queue"},
      {"unknown top-level field", "POST", "/api/v1/namespaces/team-a/jobs",
       JobDoc("x").substr(0, JobDoc("x").size() - 1) + ",\"extra\":1}", "application/json", 422, "Invalid",
       "extra"},
      {"bad name", "POST", "/api/v1/namespaces/team-a/jobs", JobDoc("Bad_Name"), "application/json", 422,
       "Invalid", "metadata.name"},
      {"namespace mismatch", "POST", "/api/v1/namespaces/team-b/jobs", JobDoc("x", "team-a"),
       "application/json", 422, "Invalid", "metadata.namespace"},
      {"body over the limit", "POST", "/api/v1/namespaces/team-a/jobs", std::string(5000, ' '),
       "application/json", 413, "RequestEntityTooLarge", ""},
      // The server refuses it before the API sees it; its answer is a Status
      // all the same (431, which the client cannot send: api_system_test).
      {"request target over the header limit", "GET", "/api/v1/jobs?x=" + std::string(70 << 10, 'a'), "", "", 414,
       "RequestURITooLong", ""},
      {"unsupported media type", "POST", "/api/v1/namespaces/team-a/jobs", JobDoc("x"), "text/csv", 415,
       "UnsupportedMediaType", ""},
      {"unknown job", "GET", "/api/v1/namespaces/team-a/jobs/nope", "", "", 404, "NotFound", ""},
      {"unknown route", "GET", "/api/v2/things", "", "", 404, "NotFound", ""},
      {"method not allowed", "PUT", "/api/v1/namespaces/team-a/jobs/x", "{}", "application/json", 405,
       "MethodNotAllowed", ""},
      {"bad limit", "GET", "/api/v1/jobs?limit=-1", "", "", 400, "BadRequest", "limit"},
      {"limit not a number", "GET", "/api/v1/jobs?limit=abc", "", "", 400, "BadRequest", "limit"},
      {"bad continue", "GET", "/api/v1/jobs?continue=garbage", "", "", 400, "BadRequest", "continue"},
      {"bad phase", "GET", "/api/v1/jobs?phase=Sleeping", "", "", 400, "BadRequest", "phase"},
      {"bad cluster name", "GET", "/api/v1/jobs?cluster=C_1", "", "", 400, "BadRequest", "cluster"},
      {"bad purge", "DELETE", "/api/v1/namespaces/team-a/jobs/x?purge=maybe", "", "", 400, "BadRequest", "purge"},
      {"list in a namespace that cannot be one", "GET", "/api/v1/namespaces/%2e%2e/jobs", "", "", 422, "Invalid",
       "metadata.namespace"},
      {"list by a namespace that cannot be one", "GET", "/api/v1/jobs?namespace=a%00b", "", "", 422, "Invalid",
       "metadata.namespace"},
      {"purge given twice", "DELETE", "/api/v1/namespaces/team-a/jobs/x?purge=false&purge=true", "", "", 400,
       "BadRequest", "purge"},
      {"cancel unknown job", "DELETE", "/api/v1/namespaces/team-a/jobs/nope", "", "", 404, "NotFound", ""},
      {"events of unknown job", "GET", "/api/v1/namespaces/team-a/jobs/nope/events", "", "", 404, "NotFound", ""},
      // Bytes that are not UTF-8 are quoted in the answer's message: never a 500.
      {"JSON body not UTF-8", "POST", "/api/v1/namespaces/team-a/jobs", "{\"a\":\"\xFF\"}", "application/json", 400,
       "BadRequest", ""},
      {"YAML body not UTF-8", "POST", "/api/v1/namespaces/team-a/jobs",
       "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: x}\nspec: {queue: \"caf\xE9\"}\n", "application/yaml",
       400, "BadRequest", ""},
      {"phase not UTF-8", "GET", "/api/v1/jobs?phase=%FF", "", "", 400, "BadRequest", "phase"},
      {"route not UTF-8", "GET", "/api/v2/%FF", "", "", 404, "NotFound", ""},
      {"continue beyond int64", "GET", "/api/v1/jobs?continue=v1:99999999999999999999", "", "", 400, "BadRequest",
       "continue"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    auto r = api.Call(row.method, row.target, row.body, kAdminToken, row.content_type);
    CHECK(r.status == row.code);
    auto body = nlohmann::json::parse(r.body, nullptr, false);
    REQUIRE(body.is_object());
    CHECK(body["kind"] == "Status");
    CHECK(body["status"] == "Failure");
    CHECK(body["code"] == row.code);
    CHECK(body["reason"] == row.reason);
    if (!row.field.empty()) {
      REQUIRE(body.contains("details"));
      CHECK(body["details"]["causes"][0]["field"] == row.field);
      if (row.field == "limit") {  // what is wrong with it, whatever was given
        CHECK_THAT(body["details"]["causes"][0].value("message", ""), Catch::StartsWith("must be an integer from 0 to"));
      }
    }
  }
}

TEST_CASE("a phase filter is read whatever its case, and an unknown one is told the phases there are", "[api]") {
  ApiFixture api;
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("one")).status == 201);
  for (const char* phase : {"Queued", "queued", "QUEUED"}) {
    INFO(phase);
    auto r = api.Call("GET", std::string("/api/v1/jobs?phase=") + phase);
    REQUIRE(r.status == 200);
  }
  auto bad = api.Call("GET", "/api/v1/jobs?phase=Runing");
  CHECK(bad.status == 400);
  CHECK_THAT(bad.body, Catch::Contains("one of Queued, Nominating, Admitted, Running"));
}

TEST_CASE("a field of the pod template Kubernetes does not know is warned of, and the job is taken", "[api]") {
  ApiFixture api;
  nlohmann::json doc = nlohmann::json::parse(JobDoc("typo"));
  auto& job_spec = doc["spec"]["template"]["spec"];
  job_spec["parallelizm"] = job_spec["parallelism"];  // the worker would drop it, and run one pod
  job_spec.erase("parallelism");
  auto created = api.Call("POST", "/api/v1/namespaces/team-a/jobs", doc.dump());
  CHECK(created.status == 201);
  CHECK(created.headers["warning"] == "299 - \"spec.template.spec: unknown field \\\"parallelizm\\\"\"");
  // Told again when submitted again; a right document gets no warning.
  auto again = api.Call("POST", "/api/v1/namespaces/team-a/jobs", doc.dump());
  CHECK(again.status == 200);
  CHECK(again.headers.count("warning") == 1);
  auto right = api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("right"));
  CHECK(right.status == 201);
  CHECK(right.headers.count("warning") == 0);
}

TEST_CASE("405 names the allowed methods", "[api]") {
  ApiFixture api;
  auto r = api.Call("PATCH", "/api/v1/namespaces/team-a/jobs/x", "{}");
  CHECK(r.status == 405);
  CHECK(r.headers["allow"].find("GET") != std::string::npos);
  CHECK(r.headers["allow"].find("DELETE") != std::string::npos);
}

TEST_CASE("list filters and paginates in a stable order", "[api]") {
  ApiFixture api;
  for (int i = 0; i < 7; ++i) {
    REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("a" + std::to_string(i))).status == 201);
  }
  for (int i = 0; i < 3; ++i) {
    REQUIRE(api.Call("POST", "/api/v1/namespaces/team-b/jobs", JobDoc("b" + std::to_string(i), "team-b")).status ==
            201);
  }
  std::vector<std::string> names;
  std::string target = "/api/v1/jobs?limit=3";
  int pages = 0;
  while (true) {
    auto page = api.Json(api.Call("GET", target));
    ++pages;
    for (auto& item : page["items"]) names.push_back(item["metadata"]["name"]);
    if (!page["metadata"].contains("continue")) break;
    target = "/api/v1/jobs?limit=3&continue=" + page["metadata"]["continue"].get<std::string>();
  }
  CHECK(pages == 4);
  CHECK(names == std::vector<std::string>{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "b0", "b1", "b2"});
  CHECK(api.Json(api.Call("GET", "/api/v1/namespaces/team-b/jobs"))["items"].size() == 3);
  CHECK(api.Json(api.Call("GET", "/api/v1/jobs?namespace=team-a&phase=Queued"))["items"].size() == 7);
  CHECK(api.Json(api.Call("GET", "/api/v1/jobs?phase=Running"))["items"].empty());
  CHECK(api.Json(api.Call("GET", "/api/v1/jobs?queue=other"))["items"].empty());
  // limit=0, Kubernetes' "no limit": the default page, here all ten.
  CHECK(api.Json(api.Call("GET", "/api/v1/jobs?limit=0"))["items"].size() == 10);
}

TEST_CASE("cancel, events and purge", "[api]") {
  ApiFixture api;
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("c1")).status == 201);
  auto purge_early = api.Call("DELETE", "/api/v1/namespaces/team-a/jobs/c1?purge=true");
  CHECK(purge_early.status == 409);  // not finished yet
  auto cancel = api.Call("DELETE", "/api/v1/namespaces/team-a/jobs/c1");
  CHECK(cancel.status == 202);
  CHECK(api.Json(cancel)["status"]["phase"] == "Cancelling");
  // The reconciler finishes the cancellation: nothing remote to withdraw.
  CHECK(WaitFor([&] {
    return api.Json(api.Call("GET", "/api/v1/namespaces/team-a/jobs/c1"))["status"]["phase"] == "Cancelled";
  }));
  auto events = api.Json(api.Call("GET", "/api/v1/namespaces/team-a/jobs/c1/events"))["items"];
  std::vector<std::string> reasons;
  for (auto& e : events) reasons.push_back(e["reason"]);
  CHECK(reasons == std::vector<std::string>{"Submitted", "CancelRequested", "Cancelled"});
  // limit: the last so many, oldest first, and how many there are in all.
  auto tail = api.Json(api.Call("GET", "/api/v1/namespaces/team-a/jobs/c1/events?limit=2"));
  REQUIRE(tail["items"].size() == 2);
  CHECK(tail["items"][0]["reason"] == "CancelRequested");
  CHECK(tail["items"][1]["reason"] == "Cancelled");
  CHECK(tail["metadata"]["totalItems"] == 3);
  CHECK(api.Json(api.Call("GET", "/api/v1/namespaces/team-a/jobs/c1/events?limit=0"))["items"].size() == 3);
  CHECK(api.Json(api.Call("GET", "/api/v1/namespaces/team-a/jobs/c1/events?limit=50"))["items"].size() == 3);
  for (const char* bad : {"-1", "ten", "99999999"}) {
    auto refused = api.Call("GET", std::string("/api/v1/namespaces/team-a/jobs/c1/events?limit=") + bad);
    CHECK(refused.status == 400);
    CHECK(refused.body.find("limit") != std::string::npos);
  }
  // Cancelling a finished job again is harmless and says so.
  auto again = api.Call("DELETE", "/api/v1/namespaces/team-a/jobs/c1");
  CHECK(again.status == 202);
  CHECK(api.Json(again)["status"]["phase"] == "Cancelled");
  const int64_t passes_before = api.reconciled();
  auto purged = api.Call("DELETE", "/api/v1/namespaces/team-a/jobs/c1?purge=true");
  CHECK(purged.status == 200);
  // The purge wakes the job's pass, which finds it gone (and an engine
  // would forget what it held for it).
  CHECK(WaitFor([&] { return api.reconciled() > passes_before; }));
  CHECK(api.Json(purged)["status"] == "Success");
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/c1").status == 404);
  // The name is free again.
  CHECK(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("c1")).status == 201);
}

namespace {

// A row of the job's object in cluster at epoch 1, and the write that puts
// the job at epoch 1, Nominating, with rows, as the engine would.
RemoteIntent IntentRow(const std::string& cluster, const std::string& kind, const std::string& name) {
  RemoteIntent i;
  i.cluster = cluster;
  i.kind = kind;
  i.ns = "team-a";
  i.name = name;
  i.epoch = 1;
  return i;
}

Status Nominate(ApiFixture& api, const std::string& uid, std::vector<RemoteIntent> rows) {
  DispatchUpdate u;
  u.uid = uid;
  u.expected_phase = JobPhase::kQueued;
  u.phase = JobPhase::kNominating;
  u.epoch = 1;
  u.upsert_intents = std::move(rows);
  std::promise<Status> written;
  api.store().ApplyDispatch(u, [&](Result<JobRecord> r) { written.set_value(r.status()); });
  return written.get_future().get();
}

}  // namespace

TEST_CASE("remoteobjects: where gantry has the job's objects, and in what state", "[api]") {
  ApiFixture api;
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("r1")).status == 201);
  const std::string uid = api.Json(api.Call("GET", "/api/v1/namespaces/team-a/jobs/r1"))["metadata"]["uid"];
  const std::string path = "/api/v1/namespaces/team-a/jobs/r1/remoteobjects";
  CHECK(api.Json(api.Call("GET", path))["items"] == nlohmann::json::array());  // nothing dispatched yet

  // As the engine would write them: a copy wanted in c2, one refused by c1,
  // and c3's withdrawn.
  auto row = [&](const std::string& cluster, bool present, const std::string& refusal) {
    RemoteIntent i = IntentRow(cluster, "Workload", "r1-0123abcd");
    i.present = present;
    i.refusal = refusal;
    return i;
  };
  std::vector<RemoteIntent> rows = {row("c2", true, ""), row("c1", false, "HTTP 403 denied by policy"),
                                    row("c3", false, "")};
  rows[0].gate_opened_ms = 1'780'000'000'000;
  rows[0].gate_refusal = "HTTP 403 patch denied";
  // c3's real job, withdrawn after c3 failed every create of it: held out.
  RemoteIntent held = IntentRow("c3", "Job", "r1-0123abcd");
  held.present = false;
  held.hold = "owner cluster c3 answers gantry's reads but has failed every try to create the job there";
  rows.push_back(held);
  // c4's, seen gone there while the hold is on: held out, not refused.
  RemoteIntent gone = IntentRow("c4", "Job", "r1-0123abcd");
  gone.present = false;
  gone.hold = "owner cluster c4 answers gantry's reads but has failed every try to create the job there";
  gone.refusal = gone.hold;
  rows.push_back(gone);
  REQUIRE(Nominate(api, uid, std::move(rows)).ok());

  auto r = api.Call("GET", path);
  REQUIRE(r.status == 200);
  nlohmann::json list = api.Json(r);
  CHECK(list["kind"] == "RemoteObjectList");
  const nlohmann::json& items = list["items"];
  REQUIRE(items.size() == 5);
  CHECK(items[0]["cluster"] == "c1");  // by cluster
  CHECK(items[0]["state"] == "Refused");
  CHECK(items[0]["refusal"] == "HTTP 403 denied by policy");
  CHECK(items[1]["cluster"] == "c2");
  CHECK(items[1]["state"] == "Wanted");
  CHECK(items[1]["name"] == "r1-0123abcd");
  CHECK(items[1]["epoch"] == 1);
  CHECK(items[1]["kind"] == "Workload");
  CHECK(items[1].contains("updateTime"));
  CHECK_FALSE(items[1].contains("refusal"));
  CHECK(items[1]["preemptionGateOpened"] == "2026-05-28T20:26:40Z");
  CHECK(items[1]["preemptionGateRefusal"] == "HTTP 403 patch denied");
  CHECK(items[2]["kind"] == "Job");  // by kind within a cluster
  CHECK(items[2]["state"] == "Withdrawing");  // a hold is no refusal: it may be there
  CHECK(items[2]["hold"] == held.hold);
  CHECK_FALSE(items[2].contains("refusal"));
  CHECK_FALSE(items[3].contains("preemptionGateOpened"));
  CHECK_FALSE(items[3].contains("hold"));
  CHECK(items[3]["state"] == "Withdrawing");
  CHECK(items[4]["state"] == "HeldOut");
  CHECK(items[4]["hold"] == gone.hold);
  CHECK_FALSE(items[4].contains("refusal"));
  // Like the job itself: no token is 401, a missing job 404.
  CHECK(api.Call("GET", path, "", "").status == 401);
  CHECK(api.Call("GET", "/api/v1/namespaces/team-a/jobs/nope/remoteobjects").status == 404);
}

TEST_CASE("remoteobjects: what the watches show of each object is beside its row", "[api]") {
  std::string asked_for;
  ApiFixtureOptions options;
  options.remote_view = [&](const std::string& uid) {
    asked_for = uid;
    return std::vector<dispatch::ObservedObject>{
        {"c1", "Workload", "v1-0123abcd", 1, "Pending", "Pending",
         "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu"},
        {"c2", "Job", "v1-0123abcd", 1, "Running", "", "", true},
        {"c2", "Workload", "other-name", 1, "Admitted", "", ""},  // not this row's name
        {"c3", "Workload", "v1-0123abcd", 1, "Admitted", "", ""},  // no row in c3
    };
  };
  ApiFixture api(options);
  REQUIRE(api.Call("POST", "/api/v1/namespaces/team-a/jobs", JobDoc("v1")).status == 201);
  const std::string uid = api.Json(api.Call("GET", "/api/v1/namespaces/team-a/jobs/v1"))["metadata"]["uid"];
  REQUIRE(Nominate(api, uid,
                   {IntentRow("c1", "Workload", "v1-0123abcd"), IntentRow("c2", "Workload", "v1-0123abcd"),
                    IntentRow("c2", "Job", "v1-0123abcd")})
              .ok());

  auto r = api.Call("GET", "/api/v1/namespaces/team-a/jobs/v1/remoteobjects");
  REQUIRE(r.status == 200);
  CHECK(asked_for == uid);
  const nlohmann::json items = api.Json(r)["items"];
  INFO(items.dump());
  REQUIRE(items.size() == 3);  // the rows only: c3's object has none
  CHECK(items[0]["cluster"] == "c1");
  CHECK(items[0]["observed"]["state"] == "Pending");
  CHECK(items[0]["observed"]["epoch"] == 1);
  CHECK(items[0]["observed"]["reason"] == "Pending");
  CHECK(items[0]["observed"]["message"].get<std::string>().find("insufficient unused quota") != std::string::npos);
  CHECK(items[1]["kind"] == "Job");  // by cluster, then kind
  CHECK(items[1]["observed"]["state"] == "Running");
  CHECK(items[1]["observed"]["lastSeen"] == true);  // its cluster's view may be behind
  CHECK_FALSE(items[0]["observed"].contains("lastSeen"));
  CHECK_FALSE(items[1]["observed"].contains("message"));
  CHECK(items[2]["kind"] == "Workload");
  CHECK_FALSE(items[2].contains("observed"));  // seen under another name only
}

}  // namespace gantry::testing
