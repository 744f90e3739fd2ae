// What `gantry submit` says of a server's 200 to the same document again,
// against a server made here.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>

#include "api_client.h"
#include "daemon_fixture.h"
#include "gantry/common/clock.h"
#include "gantry/http/server.h"

namespace gantry::testing {

TEST_CASE("submit says the job is queued to be judged again only when the server says this post did it",
          "[cli]") {
  // The job as the server keeps it after a resubmission: Queued, its
  // message from the post that put it back, whichever post this is.
  const std::string job = R"({"metadata":{"name":"mars","namespace":"team-a"},"status":{"phase":"Queued",)"
                          R"("message":"submitted again: judged again against the clusters of now"}})";
  struct Row {
    const char* what;
    bool header;
    std::string said;
  };
  const Row rows[] = {
      {"this post put it back", true, "job.gantry.dev/mars unchanged; queued to be judged again\n"},
      {"it was Queued already: nothing written", false, "job.gantry.dev/mars unchanged\n"},
  };
  TempDir dir;
  const std::string doc = dir.File("mars.yaml");
  WriteFile(doc, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: mars}\nspec: {queue: team-a}\n");
  for (const Row& row : rows) {
    INFO(row.what);
    auto server = StartedServer([&](http::Request, http::Responder respond) {
      http::Response r = http::JsonResponse(200, job);
      if (row.header) r.headers.emplace_back("Gantry-Resubmitted", "true");
      respond(std::move(r));
    });
    RunResult r = Cli(UrlOf(*server), {"submit", "-f", doc, "-n", "team-a"});
    CHECK(r.code == 0);
    CHECK(r.out == row.said);
    server->Stop(std::chrono::seconds(1));
  }
}

TEST_CASE("submit of a finished job's document says it is not run again, and how to run it again", "[cli]") {
  const std::string job = R"({"metadata":{"name":"once","namespace":"team-a"},"status":{"phase":"Failed"}})";
  auto server = StartedServer([&](http::Request, http::Responder respond) { respond(http::JsonResponse(200, job)); });
  TempDir dir;
  const std::string doc = dir.File("once.yaml");
  WriteFile(doc, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: once}\nspec: {queue: team-a}\n");
  RunResult r = Cli(UrlOf(*server), {"submit", "-f", doc, "-n", "team-a"});
  CHECK(r.code == 0);
  CHECK(r.out == "job.gantry.dev/once unchanged: it is Failed already, and is not run again (to run it again: gantry "
                 "cancel --purge once -n team-a, then submit)\n");
  server->Stop(std::chrono::seconds(1));
}

TEST_CASE("submit of a JSON file tells its errors as JSON's", "[cli]") {
  TempDir dir;
  const std::string doc = dir.File("dup.json");
  WriteFile(doc, R"({"apiVersion": "gantry.dev/v1", "kind": "Job", "spec": {"queue": "a", "queue": "b"}})");
  RunResult r = Cli("http://127.0.0.1:1", {"submit", "-f", doc});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("invalid JSON") && Catch::Contains("duplicate key"));
  CHECK(r.err.find("YAML") == std::string::npos);
}

TEST_CASE("submit of a file of several jobs sends each in order: one refused does not stop the others", "[cli]") {
  std::mutex mu;
  std::vector<std::string> posted;  // "namespace/name" as the server got them
  auto server = StartedServer([&](http::Request req, http::Responder respond) {
    const nlohmann::json doc = nlohmann::json::parse(req.body);
    const std::string name = doc["metadata"].value("name", "");
    {
      std::lock_guard lock(mu);
      posted.push_back(req.path + " " + name);
    }
    if (name == "b") {
      respond(http::JsonResponse(422, R"({"kind":"Status","status":"Failure","code":422,"reason":"Invalid",)"
                                      R"("message":"spec.queue: required"})"));
      return;
    }
    nlohmann::json job = {{"metadata", {{"name", name}, {"namespace", "team-a"}}}, {"status", {{"phase", "Queued"}}}};
    respond(http::JsonResponse(201, job.dump()));
  });
  const std::string url = UrlOf(*server);
  TempDir dir;
  const std::string file = dir.File("sweep.yaml");
  WriteFile(file,
            "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: a, namespace: team-a}\nspec: {queue: q}\n"
            "---\napiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: b, namespace: team-b}\nspec: {}\n"
            "---\napiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: c}\nspec: {queue: q}\n---\n");
  RunResult r = Cli(url, {"submit", "-f", file});
  INFO(r.out << r.err);
  CHECK(r.code != 0);
  CHECK(r.out == "job.gantry.dev/a created\njob.gantry.dev/c created\n");
  CHECK_THAT(r.err, Catch::Contains("b (job 2 of 3 in the file): ") && Catch::Contains("spec.queue: required"));
  {
    std::lock_guard lock(mu);
    CHECK(posted == std::vector<std::string>{"/api/v1/namespaces/team-a/jobs a", "/api/v1/namespaces/team-b/jobs b",
                                             "/api/v1/namespaces/default/jobs c"});
  }

  // -o json: the jobs as a List.
  RunResult json_out = Cli(url, {"submit", "-f", file, "-o", "json"});
  INFO(json_out.out << json_out.err);
  const nlohmann::json list = nlohmann::json::parse(json_out.out);
  CHECK(list["kind"] == "List");
  CHECK(list["items"].size() == 2);

  // --wait follows one job: refused whole, nothing sent.
  const std::size_t sent = [&] {
    std::lock_guard lock(mu);
    return posted.size();
  }();
  RunResult waited = Cli(url, {"submit", "-f", file, "--wait"});
  CHECK(waited.code == 2);
  CHECK_THAT(waited.err, Catch::Contains("holds 3 jobs: --wait follows one job"));
  // A document that is no mapping: the file is refused before any is sent.
  const std::string odd = dir.File("odd.yaml");
  WriteFile(odd, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: a}\n---\n- just\n- a list\n");
  RunResult refused = Cli(url, {"submit", "-f", odd});
  CHECK(refused.code == 2);
  CHECK_THAT(refused.err, Catch::Contains("(job 2 of 2 in the file): the document must be a mapping"));
  // A Job with a ConfigMap beside it (a rendered chart), or a document with
  // no kind: refused whole too.
  const std::string chart = dir.File("chart.yaml");
  WriteFile(chart, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: a}\n---\n"
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n");
  refused = Cli(url, {"submit", "-f", chart});
  CHECK(refused.code == 2);
  CHECK_THAT(refused.err, Catch::Contains("(job 2 of 2 in the file): v1 ConfigMap is no job") &&
                              Catch::Contains("nothing in the file was sent"));
  WriteFile(chart, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: a}\n---\nmetadata: {name: b}\n");
  refused = Cli(url, {"submit", "-f", chart});
  CHECK(refused.code == 2);
  CHECK_THAT(refused.err, Catch::Contains("(job 2 of 2 in the file): the document needs an apiVersion and a kind"));
  std::lock_guard lock(mu);
  CHECK(posted.size() == sent);
  server->Stop(std::chrono::seconds(1));
}

TEST_CASE("submit of a file of several jobs stops at a failure no later one could escape", "[cli]") {
  std::atomic<int> posts{0};
  auto server = StartedServer([&](http::Request, http::Responder respond) {
    ++posts;
    respond(http::JsonResponse(503, R"({"kind":"Status","status":"Failure","code":503,"reason":"ServiceUnavailable",)"
                                    R"("message":"the store is read-only"})"));
  });
  TempDir dir;
  const std::string file = dir.File("sweep.yaml");
  std::string text;
  for (const char* name : {"a", "b", "c"}) {
    text += fmt::format("---\napiVersion: gantry.dev/v1\nkind: Job\nmetadata: {{name: {}}}\nspec: {{queue: q}}\n",
                        name);
  }
  WriteFile(file, text);
  RunResult r = Cli(UrlOf(*server), {"submit", "-f", file});
  INFO(r.out << r.err);
  CHECK(r.code != 0);
  CHECK(posts == 1);
  CHECK_THAT(r.err, Catch::Contains("the other 2 job(s) after it were not sent"));
  server->Stop(std::chrono::seconds(1));
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("submit sends a job again when the server asks it to (429 with Retry-After) and gives up on a wait past "
          "--timeout",
          "[cli]") {
  const std::string job = R"({"metadata":{"name":"busy","namespace":"team-a"},"status":{"phase":"Queued"}})";
  std::atomic<int> posts{0};
  std::atomic<int> busy_answers{2};
  std::string retry_after = "0";
  auto server = StartedServer([&](http::Request, http::Responder respond) {
    ++posts;
    if (busy_answers.fetch_sub(1) > 0) {
      http::Response r =
          http::JsonResponse(429, R"({"kind":"Status","code":429,"message":"busy; submit again shortly"})");
      r.headers.emplace_back("Retry-After", retry_after);
      return respond(std::move(r));
    }
    respond(http::JsonResponse(201, job));
  });
  TempDir dir;
  const std::string doc = dir.File("busy.yaml");
  WriteFile(doc, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: busy}\nspec: {queue: team-a}\n");
  const std::string url = UrlOf(*server);
  RunResult r = Cli(url, {"submit", "-f", doc, "-n", "team-a"});
  CHECK(r.code == 0);
  CHECK(r.out == "job.gantry.dev/busy created\n");
  CHECK(posts == 3);
  // Asked to wait an hour, past the 30 s --timeout: the 429 stands, at once.
  posts = 0;
  busy_answers = 1;
  retry_after = "3600";
  r = Cli(url, {"submit", "-f", doc, "-n", "team-a"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("Error from server (429): busy; submit again shortly"));
  CHECK(posts == 1);
  server->Stop(std::chrono::seconds(1));
}

TEST_CASE("a request sent again after a 429 gets what is left of --request-timeout and not a whole one again",
          "[cli]") {
  std::atomic<int> posts{0};
  std::mutex mu;
  std::vector<http::Responder> unanswered;
  auto server = StartedServer([&](http::Request, http::Responder respond) {
    if (++posts == 1) {
      http::Response r = http::JsonResponse(429, R"({"kind":"Status","code":429,"message":"busy"})");
      r.headers.emplace_back("Retry-After", "1");
      return respond(std::move(r));
    }
    std::lock_guard<std::mutex> lock(mu);
    unanswered.push_back(std::move(respond));  // the second try waits out its deadline
  });
  TempDir dir;
  const std::string doc = dir.File("slow.yaml");
  WriteFile(doc, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: slow}\nspec: {queue: team-a}\n");
  RunResult r = Cli(UrlOf(*server), {"submit", "-f", doc, "-n", "team-a", "--request-timeout", "3"});
  CHECK(r.code != 0);
  CHECK(posts == 2);
  // The first try and the 1 s wait took a second or more of the 3: the
  // second try's deadline is what was left, under 2 s, not 3 s again.
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex("no answer from \\S+ within ([0-9]+) ms")));
  const int given_ms = std::stoi(m[1]);
  CHECK(given_ms >= 1'000);
  CHECK(given_ms <= 2'000);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (http::Responder& respond : unanswered) respond(http::JsonResponse(503, R"({"kind":"Status"})"));
  }
  server->Stop(std::chrono::seconds(1));
}

TEST_CASE("RetryWait reads the Retry-After of a 429 or a 503 in seconds or as a date", "[cli]") {
  using std::chrono::milliseconds;
  const int64_t now = 1'700'000'000'000;
  CHECK(cli::RetryWait(429, {}, now) == milliseconds(1'000));
  CHECK(cli::RetryWait(429, {{"retry-after", "7"}}, now) == milliseconds(7'000));
  CHECK(cli::RetryWait(503, {{"retry-after", "2"}}, now) == milliseconds(2'000));
  CHECK(cli::RetryWait(503, {{"retry-after", FormatHttpDate(now + 5'000)}}, now) == milliseconds(5'000));
  CHECK(cli::RetryWait(503, {{"retry-after", FormatHttpDate(now - 5'000)}}, now) == milliseconds(0));
  CHECK_FALSE(cli::RetryWait(503, {}, now));  // a 503 that does not say when
  CHECK_FALSE(cli::RetryWait(503, {{"retry-after", "soon"}}, now));
  CHECK_FALSE(cli::RetryWait(500, {{"retry-after", "1"}}, now));
  CHECK_FALSE(cli::RetryWait(409, {}, now));
}

TEST_CASE("a refusal's causes are printed one a line and one with no field as its message alone", "[cli]") {
  TempDir dir;
  const std::string doc = dir.File("bad.yaml");
  WriteFile(doc, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: bad}\nspec: {}\n");
  RunResult r = CliAgainst(R"({"kind":"Status","code":422,"message":"the job is invalid",)"
                           R"("details":{"causes":[{"field":"spec.queue","message":"Required value"},)"
                           R"({"field":"","message":"and 5 more not listed"}]}})",
                           {"submit", "-f", doc, "-n", "team-a"}, 422);
  CHECK(r.code == 1);
  CHECK(r.err ==
        "Error from server (422): the job is invalid\n  spec.queue: Required value\n  and 5 more not listed\n");
}

}  // namespace gantry::testing
