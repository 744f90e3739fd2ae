#include "ctl.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gantry/http/client.h"
#include "journal.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

constexpr int kExitUsage = 2;

Result<http::ClientResponse> Call(const std::string& out_dir, const std::string& method, const std::string& target,
                            const std::string& body = "") {
  std::ifstream f(out_dir + "/admin");
  int port = 0;
  if (!(f >> port) || port <= 0) return Status::NotFound(fmt::format("{}/admin: no admin port (is gantry-sim running?)", out_dir));
  auto client = http::Client::Create(fmt::format("http://127.0.0.1:{}", port));
  if (!client.ok()) return client.status();
  return (*client)->Do(method, target, body, {{"Content-Type", "application/json"}});
}

// The runs of the simulator in out_dir (its journal), their clusters named
// "DIR:cluster" (two simulators both have a c1).
Result<std::vector<Run>> RunsOf(const std::string& out_dir) {
  auto resp = Call(out_dir, "GET", "/journal");
  if (!resp.ok()) return resp.status();
  if (resp->status != 200) return Status::Unavailable(fmt::format("{}: journal answered {}", out_dir, resp->status));
  std::vector<Run> runs;
  std::size_t at = 0;
  const std::string& body = resp->body;
  while (at < body.size()) {
    std::size_t nl = body.find('\n', at);
    if (nl == std::string::npos) nl = body.size();
    if (auto run = RunFromJson(json::parse(body.substr(at, nl - at), nullptr, false))) {
      run->cluster = out_dir + ":" + run->cluster;
      runs.push_back(std::move(*run));
    }
    at = nl + 1;
  }
  return runs;
}

// Prints the check's report (CheckReport's); the exit code: 0 when no job
// ran twice.
int PrintCheck(const json& r) {
  if (r.is_object() && r.value("ok", false)) {
    // Checked: no two runs of a job at once, no at-most-once job run twice.
    // A Requeue job may run again once its earlier run ended.
    const int64_t jobs = r.value("jobs", int64_t{0}), again = r.value("jobsRunAgain", int64_t{0});
    std::printf("ok: no job ran in two places at once, and no at-most-once job ran twice (%lld jobs ran",
                static_cast<long long>(jobs));
    if (again > 0) {
      std::printf("; %lld of them again after an earlier run ended, as a Requeue job moved or evicted may",
                  static_cast<long long>(again));
    }
    std::printf(")\n");
    return 0;
  }
  for (const json& v : r.value("violations", json::array())) {
    std::printf("VIOLATION %s: %s\n", v.value("jobUid", "").c_str(), v.value("message", "").c_str());
  }
  return 1;
}

}  // namespace
}  // namespace gantry::sim

namespace gantry::sim {

int RunCtl(const std::string& out_dir, const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "usage: gantry-sim ctl --out-dir DIR journal|check|clusters|evict|admission-check|partition|heal|stop|start|latency|errors|forbid|lose-answer|hold-watches|rbac|kill-watches|quota|local-queue ...\n");
    return kExitUsage;
  }
  const std::string& cmd = args[0];
  auto need = [&](std::size_t n) {
    if (args.size() >= n + 1) return true;
    std::fprintf(stderr, "gantry-sim ctl %s: needs %zu argument(s)\n", cmd.c_str(), n);
    return false;
  };
  // "NAMESPACE/NAME" (or "NAME" in default) as the admin API's query.
  auto workload = [](const std::string& ref) {
    auto slash = ref.find('/');
    std::string ns = slash == std::string::npos ? "default" : ref.substr(0, slash);
    std::string name = slash == std::string::npos ? ref : ref.substr(slash + 1);
    return fmt::format("namespace={}&name={}", ns, name);
  };
  std::string method = "POST", target, body;
  // check --with DIR ...: the journals of several simulators checked as one
  // (a job must not run in two of them at once either).
  std::vector<std::string> with;
  for (std::size_t i = 1; cmd == "check" && i < args.size(); ++i) {
    if (args[i] != "--with" || i + 1 >= args.size()) {
      std::fprintf(stderr, "usage: gantry-sim ctl --out-dir DIR check [--with OTHER_DIR]...\n");
      return kExitUsage;
    }
    with.push_back(args[++i]);
  }
  if (!with.empty()) {  // checked here, from their journals: no /check asked
    std::vector<Run> all;
    with.insert(with.begin(), out_dir);
    for (const std::string& dir : with) {
      auto runs = RunsOf(dir);
      if (!runs.ok()) {
        std::fprintf(stderr, "gantry-sim ctl: %s\n", runs.status().ToString().c_str());
        return 1;
      }
      all.insert(all.end(), runs->begin(), runs->end());
    }
    return PrintCheck(CheckReport(all));
  }
  if (cmd == "journal" || cmd == "check" || cmd == "clusters") {
    method = "GET";
    target = "/" + cmd;
  } else if (cmd == "evict") {
    if (!need(2)) return kExitUsage;
    target = fmt::format("/clusters/{}/evict?{}", args[1], workload(args[2]));
  } else if (cmd == "admission-check") {
    // admission-check CLUSTER NS/NAME STATE [CHECK]: every check when CHECK is not given.
    if (!need(3)) return kExitUsage;
    target = fmt::format("/clusters/{}/admission-check?{}&state={}&check={}", args[1], workload(args[2]), args[3],
                         args.size() > 4 ? args[4] : "");
  } else if (cmd == "partition") {
    if (!need(1)) return kExitUsage;
    target = fmt::format("/clusters/{}/partition?mode={}", args[1], args.size() > 2 ? args[2] : "1");
  } else if (cmd == "heal" || cmd == "stop" || cmd == "start" || cmd == "kill-watches") {
    if (!need(1)) return kExitUsage;
    target = fmt::format("/clusters/{}/{}", args[1], cmd);
  } else if (cmd == "latency") {
    if (!need(2)) return kExitUsage;
    // latency CLUSTER MS [VERBS]: VERBS e.g. create,delete (none: every request)
    target = fmt::format("/clusters/{}/latency?ms={}&verbs={}", args[1], args[2], args.size() > 3 ? args[3] : "");
  } else if (cmd == "errors") {  // errors CLUSTER FRACTION [CODES [VERBS]]: VERBS e.g. create,delete (none: every request)
    if (!need(2)) return kExitUsage;
    target = fmt::format("/clusters/{}/errors?fraction={}&codes={}&verbs={}", args[1], args[2],
                         args.size() > 3 ? args[3] : "", args.size() > 4 ? args[4] : "");
  } else if (cmd == "forbid") {  // forbid CLUSTER [RESOURCE[:VERB][=CODE],...]: none to allow everything again
    if (!need(1)) return kExitUsage;
    target = fmt::format("/clusters/{}/forbid?resources={}", args[1], args.size() > 2 ? args[2] : "");
  } else if (cmd == "hold-watches") {  // hold-watches CLUSTER on|off: the watch streams go silent, or send what was held
    if (!need(2)) return kExitUsage;
    target = fmt::format("/clusters/{}/hold-watches?hold={}", args[1], args[2]);
  } else if (cmd == "lose-answer") {  // lose-answer CLUSTER [RESOURCE:VERB]: the next one is carried out, its answer and watch events held
    if (!need(1)) return kExitUsage;
    target = fmt::format("/clusters/{}/lose-answer?request={}", args[1], args.size() > 2 ? args[2] : "");
  } else if (cmd == "rbac") {  // rbac CLUSTER [FILE]: only FILE's ClusterRole rules granted; none: everything
    if (!need(1)) return kExitUsage;
    target = fmt::format("/clusters/{}/rbac", args[1]);
    if (args.size() > 2) {
      std::ifstream in(args[2]);
      if (!in) {
        std::fprintf(stderr, "gantry-sim ctl rbac: cannot read %s\n", args[2].c_str());
        return kExitUsage;
      }
      body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  } else if (cmd == "local-queue") {  // local-queue CLUSTER NS/NAME: a LocalQueue for its ClusterQueue
    if (!need(2)) return kExitUsage;
    target = fmt::format("/clusters/{}/local-queue?{}", args[1], workload(args[2]));
  } else if (cmd == "quota") {
    if (!need(2)) return kExitUsage;
    json q = json::object();
    for (std::size_t i = 2; i < args.size(); ++i) {
      auto eq = args[i].find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "gantry-sim ctl quota: want RESOURCE=QUANTITY, got %s\n", args[i].c_str());
        return kExitUsage;
      }
      q[args[i].substr(0, eq)] = args[i].substr(eq + 1);
    }
    target = fmt::format("/clusters/{}/quota", args[1]);
    body = q.dump();
  } else {
    std::fprintf(stderr, "gantry-sim ctl: unknown command %s\n", cmd.c_str());
    return kExitUsage;
  }
  auto resp = Call(out_dir, method, target, body);
  if (!resp.ok()) {
    std::fprintf(stderr, "gantry-sim ctl: %s\n", resp.status().ToString().c_str());
    return 1;
  }
  if (resp->status != 200) {
    json err = json::parse(resp->body, nullptr, false);
    std::string msg = err.is_object() ? err.value("message", resp->body) : resp->body;
    std::fprintf(stderr, "gantry-sim ctl %s: %d %s\n", cmd.c_str(), resp->status, msg.c_str());
    return 1;
  }
  if (cmd == "check") return PrintCheck(json::parse(resp->body, nullptr, false));
  if (cmd == "clusters") {
    std::printf("%s\n", json::parse(resp->body, nullptr, false).dump(2).c_str());
  } else {
    std::fputs(resp->body.c_str(), stdout);
    if (cmd != "journal") std::fputs("\n", stdout);
  }
  return 0;
}

}  // namespace gantry::sim
