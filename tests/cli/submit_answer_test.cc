// What `gantry submit` says of a server's 200 to the same document again,
// against a server made here.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "daemon_fixture.h"
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
    http::ServerOptions options;
    options.address = "127.0.0.1";
    options.port = 0;
    http::Server server(options, [&](http::Request, http::Responder respond) {
      http::Response r = http::JsonResponse(200, job);
      if (row.header) r.headers.emplace_back("Gantry-Resubmitted", "true");
      respond(std::move(r));
    });
    REQUIRE(server.Start().ok());
    RunResult r = Cli("http://127.0.0.1:" + std::to_string(server.port()), {"submit", "-f", doc, "-n", "team-a"});
    CHECK(r.code == 0);
    CHECK(r.out == row.said);
    server.Stop(std::chrono::seconds(1));
  }
}

TEST_CASE("submit of a finished job's document says it is not run again, and how to run it again", "[cli]") {
  const std::string job = R"({"metadata":{"name":"once","namespace":"team-a"},"status":{"phase":"Failed"}})";
  http::ServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  http::Server server(options, [&](http::Request, http::Responder respond) { respond(http::JsonResponse(200, job)); });
  REQUIRE(server.Start().ok());
  TempDir dir;
  const std::string doc = dir.File("once.yaml");
  WriteFile(doc, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: once}\nspec: {queue: team-a}\n");
  RunResult r = Cli("http://127.0.0.1:" + std::to_string(server.port()), {"submit", "-f", doc, "-n", "team-a"});
  CHECK(r.code == 0);
  CHECK(r.out == "job.gantry.dev/once unchanged: it is Failed already, and is not run again (to run it again: gantry "
                 "cancel --purge once -n team-a, then submit)\n");
  server.Stop(std::chrono::seconds(1));
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

}  // namespace gantry::testing
