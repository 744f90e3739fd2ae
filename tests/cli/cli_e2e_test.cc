// The CLI end to end against a real daemon process.
#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "daemon_fixture.h"
#include "gantry/http/server.h"

namespace gantry::testing {
namespace {

const char* kJobYaml = R"(apiVersion: gantry.dev/v1
kind: Job
metadata:
  name: e2e-train
  namespace: team-a
spec:
  queue: team-a
  priority: 7
  template:
    apiVersion: batch/v1
    kind: Job
    metadata: {labels: {kueue.x-k8s.io/priority-class: prod}}
    spec:
      parallelism: 3
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: main
            image: trainer:1
            resources:
              requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 8}
              limits: {nvidia.com/gpu: 8}
)";

}  // namespace

TEST_CASE("CLI commands against a real daemon", "[cli][e2e]") {
  TempDir dir;
  Daemon daemon(dir.File("data"), dir.path());
  REQUIRE(daemon.ready());
  std::string job = dir.File("job.yaml");
  WriteFile(job, kJobYaml);

  auto submit = Cli(daemon.url(), {"submit", "-f", job});
  CHECK(submit.code == 0);
  CHECK(submit.out == "job.gantry.dev/e2e-train created\n");
  auto again = Cli(daemon.url(), {"submit", "-f", job});
  CHECK(again.code == 0);
  CHECK(again.out == "job.gantry.dev/e2e-train unchanged\n");
  CHECK(again.err.empty());
  // A misspelt field of the pod template: taken, with a warning that names it.
  std::string typo_text = kJobYaml;
  typo_text.replace(typo_text.find("name: e2e-train"), 15, "name: e2e-typo");
  typo_text.replace(typo_text.find("parallelism:"), 12, "parallelizm:");
  std::string typo = dir.File("typo.yaml");
  WriteFile(typo, typo_text);
  auto warned = Cli(daemon.url(), {"submit", "-f", typo});
  CHECK(warned.code == 0);
  CHECK(warned.err == "Warning: spec.template.spec: unknown field \"parallelizm\"\n");
  auto cancelled = Cli(daemon.url(), {"cancel", "e2e-typo", "-n", "team-a", "-o", "json"});
  CHECK(cancelled.code == 0);
  const auto cancelled_job = nlohmann::json::parse(cancelled.out, nullptr, false);  // the job, for scripts
  CHECK((cancelled_job.is_object() && cancelled_job["metadata"]["name"] == "e2e-typo"));

  auto list = Cli(daemon.url(), {"list", "-A"});
  CHECK(list.code == 0);
  CHECK(list.out.rfind("NAMESPACE   NAME", 0) == 0);
  CHECK(list.out.find("e2e-train") != std::string::npos);
  CHECK(list.out.find("Queued") != std::string::npos);
  auto list_b = Cli(daemon.url(), {"list", "-n", "team-b"});
  CHECK(list_b.code == 0);
  CHECK(list_b.out.empty());
  CHECK(list_b.err == "No jobs found.\n");
  // A cluster name the daemon does not know: said, not read as an idle cluster.
  auto list_c = Cli(daemon.url(), {"list", "-A", "--cluster", "gpu-eu-9"});
  CHECK(list_c.code == 0);
  CHECK(list_c.err == "No jobs found. (no cluster gpu-eu-9 in gantry's inventory: gantry clusters lists them)\n");

  auto status = Cli(daemon.url(), {"status", "e2e-train", "-n", "team-a"});
  CHECK(status.code == 0);
  CHECK(status.out.find("Phase:      Queued") != std::string::npos);
  CHECK(status.out.find("Class:      prod (WorkloadPriorityClass") != std::string::npos);
  CHECK(status.out.find("main   3       cpu=4, memory=16Gi, nvidia.com/gpu=8") != std::string::npos);
  CHECK(status.out.find("Submitted") != std::string::npos);
  CHECK(status.out.find("Remote objects: <none>") != std::string::npos);  // no cluster here: nothing dispatched

  // NAMESPACE/NAME, as gantry names jobs, is the same job.
  auto by_ref = Cli(daemon.url(), {"status", "team-a/e2e-train"});
  CHECK(by_ref.code == 0);
  CHECK(by_ref.out.find("Name:       e2e-train\nNamespace:  team-a\n") != std::string::npos);
  CHECK(by_ref.out.find("Phase:      Queued") != std::string::npos);
  CHECK(Cli(daemon.url(), {"explain", "team-a/e2e-train", "-n", "team-a"}).code == 0);
  auto both = Cli(daemon.url(), {"status", "team-a/e2e-train", "-n", "team-b"});
  CHECK(both.code == 2);
  CHECK(both.err == "error: job team-a/e2e-train is in namespace team-a, and -n says team-b\n");
  for (const char* bad : {"team-a/", "/e2e-train", "a/b/c"}) {
    auto r = Cli(daemon.url(), {"cancel", bad});
    INFO(bad);
    CHECK(r.code == 2);
    CHECK(r.err == std::string("error: \"") + bad + "\" is no job name: give NAME, or NAMESPACE/NAME\n");
  }
  for (const char* command : {"status", "cancel", "explain", "events"}) {
    auto r = Cli(daemon.url(), {command, "", "-n", "team-a"});
    INFO(command);
    CHECK(r.code == 2);
    CHECK(r.err == "error: a job's name is empty: give NAME, or NAMESPACE/NAME\n");
  }

  auto as_json = Cli(daemon.url(), {"status", "e2e-train", "-n", "team-a", "-o", "json"});
  REQUIRE(as_json.code == 0);
  auto parsed = nlohmann::json::parse(as_json.out);
  CHECK(parsed["spec"]["priority"] == 7);
  auto as_yaml = Cli(daemon.url(), {"status", "e2e-train", "-n", "team-a", "-o", "yaml"});
  CHECK(as_yaml.code == 0);
  CHECK(as_yaml.out.find("kind: Job") != std::string::npos);

  auto cancel = Cli(daemon.url(), {"cancel", "e2e-train", "-n", "team-a", "--wait", "--timeout", "30"});
  CHECK(cancel.code == 0);
  CHECK(cancel.out.find("Cancelled") != std::string::npos);
  auto tail = Cli(daemon.url(), {"events", "team-a/e2e-train", "--tail", "1"});
  CHECK(tail.code == 0);
  CHECK(tail.out.find("Cancelled") != std::string::npos);
  CHECK(tail.out.find("Submitted") == std::string::npos);
  auto purge = Cli(daemon.url(), {"cancel", "e2e-train", "-n", "team-a", "--purge"});
  CHECK(purge.code == 0);
  CHECK(purge.out == "job.gantry.dev/e2e-train purged\n");
}

TEST_CASE("CLI exit codes", "[cli][e2e]") {
  TempDir dir;
  Daemon daemon(dir.File("data"), dir.path());
  REQUIRE(daemon.ready());
  // 1: the server said no, and its message is shown with the offending field.
  auto missing = Cli(daemon.url(), {"status", "nope", "-n", "team-a"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("(404)") != std::string::npos);
  // So does watching it: a 404 is no final phase.
  auto watched = Cli(daemon.url(), {"status", "nope", "-n", "team-a", "-w"});
  CHECK(watched.code == 1);
  CHECK(watched.err.find("(404)") != std::string::npos);
  std::string bad = dir.File("bad.yaml");
  WriteFile(bad, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: x}\nspec: {priority: 1}\n");
  auto invalid = Cli(daemon.url(), {"submit", "-f", bad});
  CHECK(invalid.code == 1);
  CHECK(invalid.err.find("spec.queue") != std::string::npos);
  // Told once: the cause the message gives already is not listed again.
  std::size_t first = invalid.err.find("spec.queue");
  CHECK(invalid.err.find("spec.queue", first + 1) == std::string::npos);
  auto version = Cli(daemon.url(), {"--version"});
  CHECK(version.code == 0);
  CHECK_THAT(version.out, Catch::StartsWith("gantry "));
  // 2: usage errors, and files that are not YAML at all.
  CHECK(Cli(daemon.url(), {"submit"}).code == 2);
  auto unknown = Cli(daemon.url(), {"frobnicate"});
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("unknown command \"frobnicate\"; the commands are serve, submit") != std::string::npos);
  CHECK(Cli(daemon.url(), {"submit", "-f", dir.File("absent.yaml")}).code == 2);
  auto directory = Cli(daemon.url(), {"submit", "-f", dir.path()});
  CHECK(directory.code == 2);
  CHECK(directory.err == "error: " + dir.path() + " is a directory: give one job file (YAML or JSON), or - for standard input\n");
  CHECK(Cli(daemon.url(), {"list", "-o", "xml"}).code == 2);
  // Not a mapping: exit 2 with a line that says so, not an abort.
  for (const char* text : {"hello\n", "- a\n- b\n"}) {
    std::string file = dir.File("not-a-job.yaml");
    WriteFile(file, text);
    auto r = Cli(daemon.url(), {"submit", "-f", file});
    CHECK(r.code == 2);
    CHECK(r.err.find("must be a mapping") != std::string::npos);
  }
  // 1 and the server's 413 for a document over maxBodyBytes (1 MiB): the
  // CLI writes it whole before it reads, and the daemon reads and drops the
  // rest rather than reset the connection (which read as "cannot reach").
  std::string big = dir.File("big.yaml");
  WriteFile(big, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: big, annotations: {pad: \"" +
                     std::string(4 << 20, 'x') + "\"}}\nspec: {queue: q}\n");
  auto over = Cli(daemon.url(), {"submit", "-f", big, "-n", "team-a"});
  CHECK(over.code == 1);
  CHECK(over.err.find("(413)") != std::string::npos);
  // A mapping of the wrong shape goes to the server, which names the field.
  std::string shaped = dir.File("shaped.yaml");
  WriteFile(shaped, "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: []\nspec: {queue: q}\n");
  auto wrong = Cli(daemon.url(), {"submit", "-f", shaped, "-n", "team-a"});
  CHECK(wrong.code == 1);
  CHECK(wrong.err.find("metadata") != std::string::npos);
  // 1, with a message, when the server is not gantry (a proxy's page).
  http::ServerOptions other;
  other.address = "127.0.0.1";
  http::Server page(other, [](http::Request, http::Responder respond) {
    respond(http::TextResponse(200, "<html>sign in</html>"));
  });
  REQUIRE(page.Start().ok());
  const std::string page_url = "http://127.0.0.1:" + std::to_string(page.port());
  for (std::vector<std::string> args : {std::vector<std::string>{"list"}, {"status", "x"}, {"clusters"}}) {
    auto r = Cli(page_url, args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.code == 1);
    CHECK(r.err.find("is it a gantry daemon") != std::string::npos);
  }
  page.Stop(std::chrono::milliseconds(0));
  // 3, and a hint, when the URL's scheme is not the daemon's.
  std::string https_url = daemon.url();
  https_url.replace(0, 4, "https");
  auto wrong_scheme = Cli(https_url, {"list"});
  CHECK(wrong_scheme.code == 3);
  CHECK(wrong_scheme.err.find("does not speak TLS: if the daemon serves plain HTTP (no tls in its gantry.yaml), use " +
                              daemon.url()) != std::string::npos);
  // 2: a server URL with a path, which would be dropped.
  auto prefixed = Cli(daemon.url() + "/gantry", {"list"});
  CHECK(prefixed.code == 2);
  CHECK(prefixed.err.find("has a path ('/gantry'): gantry serves its API at the root") != std::string::npos);
  CHECK(Cli(daemon.url() + "/", {"list"}).code == 0);  // the root, spelled with its slash
  // Nor a query, a fragment or credentials (whose password is not repeated).
  for (const std::string& url : {daemon.url() + "?x=1", daemon.url() + "#f",
                                 "http://user:secret-pw@" + daemon.url().substr(7)}) {
    auto r = Cli(url, {"list"});
    INFO(url << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("may hold only the scheme, host and port") != std::string::npos);
    CHECK(r.err.find("secret-pw") == std::string::npos);
  }
  // 3: nobody listens there.
  auto unreachable = Cli("http://127.0.0.1:1", {"list"});
  CHECK(unreachable.code == 3);
  CHECK(unreachable.err.find("cannot reach gantry") != std::string::npos);
}

TEST_CASE("tokens: 401 without, SIGHUP reloads the file", "[cli][e2e][auth]") {
  TempDir dir;
  std::string tokens = dir.File("tokens.yaml");
  WriteFile(tokens, "tokens:\n- {subject: a, token: first-token-0123456789, namespaces: [team-a]}\n");
  std::string config = dir.File("gantry.yaml");
  WriteFile(config, "tokensFile: " + tokens + "\n");
  Daemon daemon(dir.File("data"), dir.path(), {"--config", config});
  REQUIRE(daemon.ready());
  auto anonymous = Cli(daemon.url(), {"list"});
  CHECK(anonymous.code == 1);
  CHECK(anonymous.err.find("(401)") != std::string::npos);
  CHECK(Cli(daemon.url(), {"list", "-n", "team-a"}, {{"GANTRY_TOKEN", "first-token-0123456789"}}).code == 0);
  auto forbidden = Cli(daemon.url(), {"list", "-n", "team-b"}, {{"GANTRY_TOKEN", "first-token-0123456789"}});
  CHECK(forbidden.code == 1);
  CHECK(forbidden.err.find("(403)") != std::string::npos);

  WriteFile(tokens, "tokens:\n- {subject: b, token: second-token-0123456789, namespaces: ['*']}\n");
  daemon.process().Signal(SIGHUP);
  CHECK(WaitFor([&] {
    return Cli(daemon.url(), {"list", "-A"}, {{"GANTRY_TOKEN", "second-token-0123456789"}}).code == 0;
  }));
  CHECK(Cli(daemon.url(), {"list", "-n", "team-a"}, {{"GANTRY_TOKEN", "first-token-0123456789"}}).code == 1);
  // The tokens never reach the log.
  daemon.process().Signal(SIGTERM);
  CHECK(daemon.process().Wait() == 0);
  std::string log = daemon.process().Stderr();
  CHECK(log.find("first-token") == std::string::npos);
  CHECK(log.find("second-token") == std::string::npos);
}
TEST_CASE("a reload says when gantry.yaml changed since the start, and whether the daemon would start with it",
          "[cli][e2e][config]") {
  TempDir dir;
  std::string config = dir.File("gantry.yaml");
  WriteFile(config, "shutdownGraceSeconds: 5\n");
  Daemon daemon(dir.File("data"), dir.path(), {"--config", config});
  REQUIRE(daemon.ready());
  // Unchanged: the reload says nothing of it.
  daemon.process().Signal(SIGHUP);
  REQUIRE(WaitFor([&] { return daemon.process().Stderr().find("SIGHUP: inventory reloaded") != std::string::npos; }));
  // Comments and blank lines edited, the settings the same: no change either.
  WriteFile(config, "# drains get five seconds\n\nshutdownGraceSeconds: 5   # seconds\n");
  daemon.process().Signal(SIGHUP);
  REQUIRE(WaitFor([&] {
    const std::string log = daemon.process().Stderr();
    const size_t first = log.find("SIGHUP: inventory reloaded");
    return first != std::string::npos && log.find("SIGHUP: inventory reloaded", first + 1) != std::string::npos;
  }));
  // (Checked below, once the next reload has been handled after it.)
  // A setting the daemon does not know: it would not start with this file.
  WriteFile(config, "shutdownGraceSeconds: 5\nbogusSetting: 1\n");
  daemon.process().Signal(SIGHUP);
  REQUIRE(WaitFor([&] { return daemon.process().Stderr().find("would not start with it") != std::string::npos; }));
  std::string log = daemon.process().Stderr();
  CHECK(log.find("bogusSetting") != std::string::npos);
  CHECK(log.find("line 2") != std::string::npos);
  // The third reload's line is the only one about gantry.yaml (the two
  // done before it said nothing), and neither spoke of tokens: there is
  // no tokens file.
  const size_t changed = log.find("changed since the start");
  CHECK(changed != std::string::npos);
  CHECK(log.find("changed since the start", changed + 1) == std::string::npos);
  CHECK(log.find("API token(s) reloaded") == std::string::npos);
  // Valid YAML naming a file that is not there: the start would fail too.
  WriteFile(config, "tokensFile: " + dir.File("missing-tokens.yaml") + "\n");
  daemon.process().Signal(SIGHUP);
  REQUIRE(WaitFor([&] {
    return daemon.process().Stderr().find("missing-tokens.yaml cannot be read") != std::string::npos;
  }));
  // A valid change: taken at the next restart, and said so.
  WriteFile(config, "shutdownGraceSeconds: 7\n");
  daemon.process().Signal(SIGHUP);
  REQUIRE(WaitFor([&] {
    return daemon.process().Stderr().find("take effect at the next restart") != std::string::npos;
  }));
  CHECK(Cli(daemon.url(), {"list", "-A"}).code == 0);  // still serving
  daemon.process().Signal(SIGTERM);
  CHECK(daemon.process().Wait() == 0);
}

}  // namespace gantry::testing
