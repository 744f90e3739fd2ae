// `gantry status -w` (and submit/cancel --wait) against a server made here:
// a daemon that answered once and is gone a while (restarting) is waited
// for, and a server never reached is not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon_fixture.h"
#include "gantry/http/server.h"

namespace gantry::testing {
namespace {

// Answers any GET of a job with the given phase.
std::unique_ptr<http::Server> JobServer(uint16_t port, const std::string& phase, std::atomic<int>* asked,
                                        const std::string& message = "") {
  http::ServerOptions options;
  options.address = "127.0.0.1";
  options.port = port;
  auto server =
      std::make_unique<http::Server>(options, [phase, asked, message](http::Request, http::Responder respond) {
        ++*asked;
        respond(http::JsonResponse(200, R"({"metadata":{"name":"train","namespace":"team-a"},"status":{"phase":")" +
                                            phase + R"(","message":")" + message + R"("}})"));
      });
  REQUIRE(server->Start().ok());
  return server;
}

}  // namespace

TEST_CASE("a wait outlasts a daemon restart: the job is followed to its end once the daemon answers again",
          "[cli]") {
  std::atomic<int> asked{0};
  auto before = JobServer(0, "Running", &asked);
  const uint16_t port = before->port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  // Its deadline ends it, and the test, should the restarted server fail to start.
  auto watch = std::async(std::launch::async,
                          [&] { return Cli(url, {"status", "train", "-n", "team-a", "-w", "--timeout", "60"}); });
  REQUIRE(WaitFor([&] { return asked.load() > 0; }, std::chrono::seconds(20)));
  before->Stop(std::chrono::milliseconds(0));
  before.reset();  // the daemon is gone: the wait goes on
  // Down for three of the watch's polls (1 s apart): it meets the outage
  // (unless the machine stalls it that long: the test then asks less, and
  // still passes only if the wait ends right).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::atomic<int> asked_after{0};
  auto after = JobServer(port, "Succeeded", &asked_after);
  REQUIRE(watch.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  RunResult r = watch.get();
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Succeeded"));
  CHECK(asked_after.load() > 0);
}

TEST_CASE("a wait on a server never reached ends at once with exit 3", "[cli]") {
  std::atomic<int> asked{0};
  auto gone = JobServer(0, "Running", &asked);
  const std::string url = "http://127.0.0.1:" + std::to_string(gone->port());
  gone->Stop(std::chrono::milliseconds(0));
  gone.reset();
  RunResult r = Cli(url, {"status", "train", "-n", "team-a", "-w"});
  CHECK(r.code == 3);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("status -w --timeout gives up with exit 1, also while the daemon is out of reach", "[cli]") {
  std::atomic<int> asked{0};
  auto server = JobServer(0, "Running", &asked);
  const std::string url = "http://127.0.0.1:" + std::to_string(server->port());
  RunResult running = Cli(url, {"status", "train", "-n", "team-a", "-w", "--timeout", "1"});
  CHECK(running.code == 1);
  CHECK_THAT(running.err, Catch::Contains("timed out after 1s"));

  auto watch = std::async(std::launch::async,
                          [&] { return Cli(url, {"status", "train", "-n", "team-a", "-w", "--timeout", "2"}); });
  const int before = asked.load();
  REQUIRE(WaitFor([&] { return asked.load() > before; }, std::chrono::seconds(20)));
  server->Stop(std::chrono::milliseconds(0));  // gone for good: the deadline ends the wait
  REQUIRE(watch.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  RunResult gone = watch.get();
  CHECK(gone.code == 1);
  CHECK_THAT(gone.err, Catch::Contains("timed out after 2s"));
  CHECK(Cli(url, {"status", "train", "-w", "--timeout=-5"}).code == 2);  // refused, not tried (3)
}

TEST_CASE("a wait that times out says what the job waits for, as its message tells", "[cli]") {
  std::atomic<int> asked{0};
  auto server = JobServer(0, "Cancelling", &asked, "waiting for cluster(s) c3 to confirm deletion");
  const std::string url = "http://127.0.0.1:" + std::to_string(server->port());
  RunResult r = Cli(url, {"cancel", "train", "-n", "team-a", "--wait", "--timeout", "1"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("timed out after 1s waiting for job train (phase Cancelling: waiting for "
                                    "cluster(s) c3 to confirm deletion)"));
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("cancel --wait of a job that had already ended otherwise exits 1, saying so", "[cli]") {
  std::atomic<int> asked{0};
  auto failed = JobServer(0, "Failed", &asked);  // answers the DELETE with the job as it is
  const std::string url = "http://127.0.0.1:" + std::to_string(failed->port());
  RunResult waited = Cli(url, {"cancel", "train", "-n", "team-a", "--wait", "--timeout", "10"});
  CHECK(waited.code == 1);
  CHECK_THAT(waited.err, Catch::Contains("had already ended (Failed)"));
  RunResult told = Cli(url, {"cancel", "train", "-n", "team-a"});
  CHECK(told.code == 0);  // without --wait: told, not an error
  CHECK(told.out == "job.gantry.dev/train had already ended (Failed): nothing to cancel\n");
  auto cancelled = JobServer(0, "Cancelled", &asked);
  CHECK(Cli("http://127.0.0.1:" + std::to_string(cancelled->port()), {"cancel", "train", "-n", "team-a", "--wait"})
            .code == 0);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a wait with -o json prints one document, the job as it ended, and says the rest on stderr", "[cli]") {
  std::atomic<int> asked{0};
  auto cancelled = JobServer(0, "Cancelled", &asked);
  const std::string url = "http://127.0.0.1:" + std::to_string(cancelled->port());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"cancel", "train", "-n", "team-a", "--wait", "-o", "json"},
        std::vector<std::string>{"status", "train", "-n", "team-a", "-w", "-o", "json"}}) {
    CAPTURE(args);
    RunResult r = Cli(url, args);
    CHECK(r.code == 0);
    const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);  // one document, nothing else
    REQUIRE_FALSE(doc.is_discarded());
    CHECK(doc["status"]["phase"] == "Cancelled");
    CHECK_THAT(r.err, Catch::Contains("job.gantry.dev/train"));
  }
}

TEST_CASE("a --timeout without --wait (or --watch), and cancel --purge --wait, are refused as usage errors", "[cli]") {
  const std::string url = "http://127.0.0.1:1";  // never asked
  RunResult submit = Cli(url, {"submit", "-f", "job.yaml", "--timeout", "5"});
  CHECK(submit.code == 2);
  CHECK_THAT(submit.err, Catch::Contains("--timeout requires --wait"));
  RunResult status = Cli(url, {"status", "train", "--timeout", "5"});
  CHECK(status.code == 2);
  CHECK_THAT(status.err, Catch::Contains("--timeout requires --watch"));
  RunResult cancel = Cli(url, {"cancel", "train", "--timeout", "5"});
  CHECK(cancel.code == 2);
  RunResult purge = Cli(url, {"cancel", "train", "--purge", "--wait"});
  CHECK(purge.code == 2);
  CHECK_THAT(purge.err, Catch::Contains("--wait excludes --purge"));
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("status -w prints a line when the job moves to another cluster or epoch, or its owner is out of reach",
          "[cli]") {
  // Each GET shows the next state; the last one stays.
  const std::vector<std::string> states = {
      R"("phase":"Running","cluster":"c1","epoch":1)",
      R"("phase":"Running","cluster":"c1","epoch":1,"ownerUnreachable":{"since":"2026-12-06T10:00:00Z"})",
      R"("phase":"Running","cluster":"c2","epoch":2)",
      R"("phase":"Succeeded","cluster":"c2","epoch":2,"message":"succeeded in c2")",
  };
  std::atomic<int> asked{0};
  http::ServerOptions options;
  options.address = "127.0.0.1";
  http::Server server(options, [&](http::Request, http::Responder respond) {
    const int n = std::min<int>(asked++, static_cast<int>(states.size()) - 1);
    respond(http::JsonResponse(
        200, R"({"metadata":{"name":"train","namespace":"team-a"},"status":{)" + states[n] + "}}"));
  });
  REQUIRE(server.Start().ok());
  RunResult r = Cli("http://127.0.0.1:" + std::to_string(server.port()),
                    {"status", "train", "-n", "team-a", "-w", "--timeout", "60"});
  CHECK(r.code == 0);
  CHECK(r.out ==
        "job.gantry.dev/train Running on c1\n"
        "job.gantry.dev/train Running on c1, its owner out of reach since 2026-12-06T10:00:00Z\n"
        "job.gantry.dev/train Running on c2 (epoch 2)\n"
        "job.gantry.dev/train Succeeded on c2 (epoch 2)\n"
        "job train is Succeeded: succeeded in c2\n");
  CHECK(r.err.empty());  // a watch that ends, however, is no error
  server.Stop(std::chrono::milliseconds(0));
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a -o json wait that times out with the daemon gone prints the job as last read", "[cli]") {
  std::atomic<int> asked{0};
  auto server = JobServer(0, "Cancelling", &asked);
  const std::string url = "http://127.0.0.1:" + std::to_string(server->port());
  auto wait = std::async(std::launch::async, [&] {
    return Cli(url, {"cancel", "train", "-n", "team-a", "--wait", "--timeout", "2", "-o", "json"});
  });
  REQUIRE(WaitFor([&] { return asked.load() > 0; }, std::chrono::seconds(20)));
  server->Stop(std::chrono::milliseconds(0));  // gone from the cancel's answer on, perhaps
  REQUIRE(wait.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  RunResult r = wait.get();
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("timed out after 2s"));
  const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc["status"]["phase"] == "Cancelling");
}

}  // namespace gantry::testing
