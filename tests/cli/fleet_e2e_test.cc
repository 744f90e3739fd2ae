// The daemon with a real inventory: gantry-sim clusters over HTTPS feed
// clusters.d; `gantry clusters` and `gantry explain` show what they report.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "daemon_fixture.h"

namespace gantry::testing {
namespace {

nlohmann::json ClustersJson(const std::string& url, const std::string& token = "") {
  std::map<std::string, std::string> env;
  if (!token.empty()) env["GANTRY_TOKEN"] = token;
  auto r = Cli(url, {"clusters", "-o", "json"}, env);
  if (r.code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out, nullptr, false);
}

// Whether gantry-sim was built; a test without it is skipped, saying so.
bool SimBuilt() {
  if (!ReadFile(std::string(GANTRY_BIN_DIR "/gantry-sim")).empty()) return true;
  WARN("gantry-sim was not built (GANTRY_BUILD_TOOLS=OFF): skipping");
  return false;
}

// gantry-sim with `clusters` clusters writing into sim_dir, once it is ready.
std::unique_ptr<Process> StartSim(const TempDir& dir, const std::string& sim_dir, int clusters) {
  auto sim = std::make_unique<Process>(
      std::vector<std::string>{std::string(GANTRY_BIN_DIR "/gantry-sim"), "--clusters",
                               std::to_string(clusters), "--out-dir", sim_dir},
      dir.path());
  REQUIRE(WaitFor([&] { return !ReadFile(sim_dir + "/ready").empty(); }, std::chrono::seconds(20)));
  return sim;
}

std::map<std::string, nlohmann::json> ByName(const nlohmann::json& list) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& item : list.value("items", nlohmann::json::array())) out[item["metadata"]["name"]] = item;
  return out;
}

}  // namespace

TEST_CASE("clusters from gantry-sim: health, capacity, explain, a persisted outage", "[cli][e2e][fleet]") {
  if (!SimBuilt()) return;
  TempDir dir;
  std::string sim_dir = dir.File("sim");
  auto sim = StartSim(dir, sim_dir, 5);
  std::string data = dir.File("data");
  std::vector<std::string> args = {"--clusters-dir", sim_dir + "/clusters.d"};
  std::string first_lost;
  {
    Daemon daemon(data, dir.path(), args);
    REQUIRE(daemon.ready());
    // Every cluster becomes Ready with the simulator's quota.
    REQUIRE(WaitFor([&] {
      auto clusters = ByName(ClustersJson(daemon.url()));
      if (clusters.size() != 5) return false;  // every file the simulator wrote is accepted
      for (auto& [name, c] : clusters) {
        if (c["status"]["health"] != "Ready" || !c["status"].contains("capacity")) return false;
      }
      return true;
    }, std::chrono::seconds(20)));
    auto c1 = ByName(ClustersJson(daemon.url()))["c1"];
    CHECK(c1["status"]["capacity"]["resources"]["nvidia.com/gpu"]["nominal"] == "32");
    CHECK(c1["status"]["capacity"]["stale"] == false);
    // Memory as Kubernetes writes it, not a count of bytes.
    const nlohmann::json memory = c1["status"]["capacity"]["resources"].value("memory", nlohmann::json());
    REQUIRE(memory.is_object());
    CHECK_THAT(memory.value("nominal", ""), Catch::EndsWith("Gi") || Catch::EndsWith("Ti"));
    // The table shows CPU beside GPUs, for a fleet without GPUs.
    const std::string listed = Cli(daemon.url(), {"clusters"}).out;
    CHECK(listed.find("CPU(RESERVED/QUOTA)") != std::string::npos);
    const std::string cpu = c1["status"]["capacity"]["resources"]["cpu"].value("nominal", "");
    CHECK(listed.find("/" + cpu + " ") != std::string::npos);

    // Placement over the live inventory: the H100 job fits c1 only (c2 has
    // A100s, c3 to c5 are in other regions); the JobSet fits all but c5,
    // whose 1-GPU nodes cannot hold a 2-GPU pod.
    REQUIRE(Cli(daemon.url(), {"submit", "-f", std::string(GANTRY_SOURCE_DIR "/config/examples/llama-ft.yaml")}).code == 0);
    REQUIRE(Cli(daemon.url(), {"submit", "-f", std::string(GANTRY_SOURCE_DIR "/config/examples/sweep-trial.yaml")}).code == 0);
    auto llama = Cli(daemon.url(), {"explain", "llama-ft", "-n", "team-a", "-o", "json"});
    REQUIRE(llama.code == 0);
    auto decision = nlohmann::json::parse(llama.out);
    CHECK(decision["candidates"] == nlohmann::json::array({"c1"}));
    CHECK(decision["unschedulable"] == false);
    std::map<std::string, std::string> filters;
    for (auto& c : decision["clusters"]) filters[c["name"]] = c.value("filter", "");
    CHECK(filters["c1"].empty());
    CHECK(filters["c2"] == "Accelerator");
    CHECK(filters["c3"] == "Region");
    auto sweep = nlohmann::json::parse(Cli(daemon.url(), {"explain", "sweep-trial-7", "-n", "team-a", "-o", "json"}).out);
    CHECK(sweep["candidates"].size() == 4);
    for (auto& c : sweep["clusters"]) {
      // c5's nodes have 1 GPU each: the 2-GPU worker pods cannot fit one.
      if (c["name"] == "c5") CHECK(c["filter"] == "NodeFit");
    }
    auto table = Cli(daemon.url(), {"explain", "llama-ft", "-n", "team-a"});
    CHECK(table.out.find("Candidates:    c1\n") == 0);

    // Stop c1's apiserver: NotReady, with the start of the outage recorded.
    REQUIRE(Run({std::string(GANTRY_BIN_DIR "/gantry-sim"), "ctl", "--out-dir", sim_dir, "stop", "c1"}).code == 0);
    REQUIRE(WaitFor([&] { return ByName(ClustersJson(daemon.url()))["c1"]["status"]["health"] == "NotReady"; },
                    std::chrono::seconds(20)));
    first_lost = ByName(ClustersJson(daemon.url()))["c1"]["status"]["firstLostAt"];
    CHECK_FALSE(first_lost.empty());
  }
  // A restarted daemon keeps the outage's start.
  Daemon daemon(data, dir.path(), args);
  REQUIRE(daemon.ready());
  CHECK(ByName(ClustersJson(daemon.url()))["c1"]["status"]["firstLostAt"] == first_lost);
  // The cluster comes back: Ready, and the outage is over.
  REQUIRE(Run({std::string(GANTRY_BIN_DIR "/gantry-sim"), "ctl", "--out-dir", sim_dir, "start", "c1"}).code == 0);
  CHECK(WaitFor([&] { return ByName(ClustersJson(daemon.url()))["c1"]["status"]["health"] == "Ready"; },
                std::chrono::seconds(30)));
  CHECK_FALSE(ByName(ClustersJson(daemon.url()))["c1"]["status"].contains("firstLostAt"));
}

namespace {

// The user of `kubeconfig` becomes an exec plugin: `exec` is the flow
// mapping that replaces its `token: ...` line.
void UseExecPlugin(const std::string& kubeconfig, const std::string& exec) {
  std::string text = ReadFile(kubeconfig);
  auto at = text.find("token: ");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find('\n', at) - at, "exec: " + exec);
  WriteFile(kubeconfig, text);
}

}  // namespace

TEST_CASE("clusters from gantry-sim whose kubeconfig users are exec plugins", "[cli][e2e][fleet]") {
  if (!SimBuilt()) return;
  TempDir dir;
  std::string sim_dir = dir.File("sim");
  auto sim = StartSim(dir, sim_dir, 2);
  // c1: a plugin beside its kubeconfig printing the cluster's token.
  const std::string kubeconfig = ReadFile(sim_dir + "/c1.kubeconfig");
  const size_t at = kubeconfig.find("token: ") + 7;
  WriteFile(dir.File("c1-token"), kubeconfig.substr(at, kubeconfig.find('\n', at) - at));
  WriteExecutable(sim_dir + "/plugin",
                  "#!/bin/sh\n"
                  "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                  "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \"$(cat \"$TOKEN_FILE\")\"\n");
  UseExecPlugin(sim_dir + "/c1.kubeconfig",
                "{apiVersion: client.authentication.k8s.io/v1beta1, command: ./plugin, env: [{name: "
                "TOKEN_FILE, value: " + dir.File("c1-token") + "}]}");
  // c2: a plugin that is not installed.
  UseExecPlugin(sim_dir + "/c2.kubeconfig",
                "{apiVersion: client.authentication.k8s.io/v1, command: gantry-test-missing-plugin, "
                "interactiveMode: Never, installHint: 'install it from the vendor'}");

  Daemon daemon(dir.File("data"), dir.path(), {"--clusters-dir", sim_dir + "/clusters.d"});
  REQUIRE(daemon.ready());
  CHECK(WaitFor([&] {
    auto clusters = ByName(ClustersJson(daemon.url()));
    return clusters["c1"]["status"]["health"] == "Ready" && clusters["c1"]["status"].contains("capacity") &&
           clusters["c2"]["status"].contains("lastError");
  }, std::chrono::seconds(20)));
  auto clusters = ByName(ClustersJson(daemon.url()));
  CHECK(clusters["c1"]["status"]["capacity"]["resources"]["nvidia.com/gpu"]["nominal"] == "32");
  CHECK(clusters["c2"]["status"]["health"] != "Ready");
  // It answers when asked without a token: up, refusing us (an outage with
  // the longer credentialsRefusedTimeoutSeconds).
  CHECK(clusters["c2"]["status"]["lastError"] ==
        "no token: exec plugin gantry-test-missing-plugin: not found in PATH; install it from the vendor "
        "(the cluster answers)");
  CHECK(clusters["c2"]["status"]["credentialsRefused"] == true);
  CHECK(clusters["c2"]["status"].contains("firstLostAt"));
  // The table shows the error of a cluster that is not Ready.
  CHECK(Cli(daemon.url(), {"clusters"}).out.find("not found in PATH; install it from the vendor") !=
        std::string::npos);
}

// A plugin stuck on the network (a token service that does not answer): the
// probe and the watches wait for its run, up to 30 s. SIGTERM ends the run.
TEST_CASE("a daemon whose cluster's credential plugin hangs stops at once, the plugin killed", "[cli][e2e][fleet]") {
  if (!SimBuilt()) return;
  TempDir dir;
  std::string sim_dir = dir.File("sim");
  auto sim = StartSim(dir, sim_dir, 1);
  WriteExecutable(sim_dir + "/plugin", "#!/bin/sh\necho $$ > \"$PID_FILE\"\nexec sleep 60\n");
  UseExecPlugin(sim_dir + "/c1.kubeconfig",
                "{apiVersion: client.authentication.k8s.io/v1, command: ./plugin, interactiveMode: Never, env: "
                "[{name: PID_FILE, value: " + dir.File("plugin.pid") + "}]}");
  Daemon daemon(dir.File("data"), dir.path(), {"--clusters-dir", sim_dir + "/clusters.d"});
  REQUIRE(daemon.ready());
  REQUIRE(WaitFor([&] { return !ReadFile(dir.File("plugin.pid")).empty(); }, std::chrono::seconds(20)));
  const pid_t plugin = std::stoi(ReadFile(dir.File("plugin.pid")));

  const auto signalled = std::chrono::steady_clock::now();
  daemon.process().Signal(SIGTERM);
  CHECK(daemon.process().Wait(std::chrono::seconds(20)) == 0);
  CHECK(std::chrono::steady_clock::now() - signalled < std::chrono::seconds(5));
  CHECK(kill(plugin, 0) == -1);  // killed, and reaped by the daemon
  // A run given up for the stop is no outage, nor a refusal of the credentials.
  const std::string log = daemon.process().Stderr();
  INFO(log);
  CHECK(log.find("NotReady") == std::string::npos);
  CHECK(log.find("a probe failed") == std::string::npos);
}

TEST_CASE("a cluster whose kubeconfig does not load is listed, saying why to an admin and not to a tenant",
          "[cli][e2e][fleet]") {
  if (!SimBuilt()) return;
  TempDir dir;
  std::string sim_dir = dir.File("sim");
  auto sim = StartSim(dir, sim_dir, 1);
  std::string file = ReadFile(sim_dir + "/clusters.d/c1.yaml");
  const std::string from = "name: c1";
  REQUIRE(file.find(from) != std::string::npos);
  file.replace(file.find(from), from.size(), "name: c9");
  const std::string kubeconfig_at = "kubeconfig: ";
  const size_t at = file.find(kubeconfig_at);
  REQUIRE(at != std::string::npos);
  file.replace(at, file.find('\n', at) - at, "kubeconfig: " + dir.File("gone.kubeconfig"));
  WriteFile(sim_dir + "/clusters.d/c9.yaml", file);

  const std::string admin = "admin-token-0123456789", tenant = "tenant-token-0123456789";
  WriteFile(dir.File("tokens.yaml"), "tokens:\n- {subject: ops, token: " + admin +
                                         ", namespaces: ['*']}\n- {subject: a, token: " + tenant +
                                         ", namespaces: [team-a]}\n");
  WriteFile(dir.File("gantry.yaml"), "tokensFile: " + dir.File("tokens.yaml") + "\n");
  Daemon daemon(dir.File("data"), dir.path(),
                {"--clusters-dir", sim_dir + "/clusters.d", "--config", dir.File("gantry.yaml")});
  REQUIRE(daemon.ready());
  auto clusters = ByName(ClustersJson(daemon.url(), admin));
  REQUIRE(clusters.count("c9"));
  const std::string error = clusters["c9"]["status"].value("credentialsError", "");
  CHECK_THAT(error, Catch::Contains("gone.kubeconfig"));
  const std::string table = Cli(daemon.url(), {"clusters"}, {{"GANTRY_TOKEN", admin}}).out;
  INFO(table);
  CHECK(table.find(",CredentialsUnloadable") != std::string::npos);
  CHECK(table.find(error.substr(0, 40)) != std::string::npos);
  // A tenant sees that it does not load, not the operator's paths.
  auto seen = ByName(ClustersJson(daemon.url(), tenant));
  REQUIRE(seen.count("c9"));
  const std::string tenant_error = seen["c9"]["status"].value("credentialsError", "");
  CHECK_THAT(tenant_error, Catch::StartsWith("withheld from tenant tokens"));
  CHECK(seen["c9"].dump().find(dir.path()) == std::string::npos);
  CHECK(seen["c1"].dump().find(dir.path()) == std::string::npos);
}

}  // namespace gantry::testing
