// Load generator for the dispatch benchmark: submits JOBS short jobs to a
// running `gantry serve` whose clusters are a running gantry-sim, waits until
// gantry reports every one Succeeded, then reads where and when each ran and
// prints throughput and latency figures.
//
//   dispatch_loadgen ADDR SIM_DIR DB JOBS CONNECTIONS MODE [RATE]
//
// ADDR is gantry's host:port, SIM_DIR the simulator's --out-dir (its admin
// port and clusters.d), DB gantry's gantry.db (opened read-only), MODE
// AllAtOnce or Incremental. Without RATE each connection posts its next job
// when the previous one is answered (closed loop: the throughput figures);
// with RATE (jobs/s over all connections) posts follow a fixed schedule and
// every latency is measured from the scheduled time, so a stall is not hidden.
//
// Where the times come from (all on this host's clock, in milliseconds):
//   sent       the scheduled (or actual, closed loop) time of the POST;
//   lease      the job's LeaseTaken event in gantry's store; the REST API
//              rounds event times to seconds, so the store is read directly;
//   run        the first start of the job in the simulator's run journal:
//              the real job exists on the owner and its Workload is admitted.
// Reconciler passes: gantry_dispatch_passes_total by ladder step, read after
// the remote calls.
// Remote API calls: the simulator counts no requests, so the figure is the
// daemon's gantry_dispatch_remote_calls_total (every create, delete and 409
// look-up the engine made; not the prober's 5 GETs per cluster per probe
// (readiness, ClusterQueues, LocalQueues, WorkloadPriorityClasses), nor the
// watches), read once it stops moving after the last job finished. Beside
// it, the protocol's own count from the store's events: one create per
// Workload copy (Nominated, Widened, CopiesMoved) and per real job (LeaseTaken), each
// object deleted once again.
//
// With REST_SECONDS set (a backlog at rest), every job asks for a whole
// node's CPU (96) and runs for an hour, so 4 fit a cluster's quota and the
// rest wait, their Workload copies pending in every cluster asked. Once no
// job is Queued, and REST_SETTLE_SECONDS (5) more, the load generator
// measures REST_SECONDS of that rest: reconciler passes, and the CPU of
// GANTRY_PID and SIM_PID (from /proc); then it exits without waiting.
//
// The last line, "result k=v ...", is for the driver script.
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gantry/http/client.h"

using nlohmann::json;

namespace {

// The namespaces (and LocalQueues of the same name) every simulated cluster serves.
constexpr const char* kNamespaces[] = {"default", "team-a", "team-b", "team-c"};
constexpr std::chrono::milliseconds kPollInterval{50};
constexpr std::chrono::seconds kReadyTimeout{30};
constexpr std::chrono::seconds kFinishTimeout{600};
// No job changed phase for this long: the wait gives up early (a stall).
constexpr std::chrono::seconds kStallTimeout{60};
constexpr int kSettlePolls = 50;  // x 2 x kPollInterval = 5 s

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One pod of 100m CPU and 128 Mi that runs 200 ms: it fits every cluster.
// For a backlog at rest (REST_SECONDS), a node's CPU for an hour.
std::string JobDocument(const std::string& name, const std::string& ns, const std::string& mode, bool rest) {
  json dispatch = {{"mode", mode}};
  if (mode == "Incremental") dispatch.update({{"stepSize", 3}, {"roundSeconds", 60}});
  json container = {{"name", "main"},
                    {"image", "registry.example.com/bench:1"},
                    {"resources", {{"requests", {{"cpu", rest ? "96" : "100m"}, {"memory", "128Mi"}}}}}};
  json templ = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"annotations", {{"sim.gantry.dev/duration", rest ? "1h" : "200ms"}}}}},
      {"spec",
       {{"parallelism", 1},
        {"completions", 1},
        {"template",
         {{"spec", {{"restartPolicy", "Never"}, {"containers", json::array({container})}}}}}}}};
  return json{{"apiVersion", "gantry.dev/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"queue", ns}, {"dispatch", dispatch}, {"template", templ}}}}
      .dump();
}

struct Sample {
  double sent_ms = 0;  // scheduled (RATE) or actual send time
  double acked_ms = 0;
  std::string uid;
};

struct Run {
  std::string addr, sim_dir, db, mode;
  int jobs = 0, connections = 0;
  double rate = 0;
  double rest_s = 0;  // REST_SECONDS: a backlog at rest
  std::vector<Sample> samples;
  std::atomic<int> next{0}, errors{0};
  std::string first_error;
  std::mutex mu;  // guards first_error
};

std::unique_ptr<gantry::http::Client> Connect(const std::string& url) {
  auto c = gantry::http::Client::Create(url);
  if (!c.ok()) {
    std::fprintf(stderr, "dispatch_loadgen: %s: %s\n", url.c_str(), c.status().ToString().c_str());
    std::exit(2);
  }
  return std::move(c.value());
}

void Submitter(Run& run, int index, double start_ms) {
  auto client = Connect("http://" + run.addr);
  const double interval_ms = run.rate > 0 ? 1000.0 * run.connections / run.rate : 0;
  for (int sent_here = 0;; ++sent_here) {
    int n = run.next++;
    if (n >= run.jobs) return;
    Sample& s = run.samples[n];
    if (interval_ms > 0) {
      // Connection i posts at start + (i/connections + k) * interval.
      s.sent_ms = start_ms + interval_ms * (sent_here + double(index) / run.connections);
      double wait = s.sent_ms - NowMs();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(wait));
    } else {
      s.sent_ms = NowMs();
    }
    const char* ns = kNamespaces[n % std::size(kNamespaces)];
    auto r = client->Do("POST", fmt::format("/api/v1/namespaces/{}/jobs", ns),
                        JobDocument(fmt::format("bench-{}", n), ns, run.mode, run.rest_s > 0),
                        {{"Content-Type", "application/json"}});
    s.acked_ms = NowMs();
    if (r.ok() && r->status == 201) {
      json created = json::parse(r->body, nullptr, false);
      if (created.is_object()) s.uid = created.value("/metadata/uid"_json_pointer, "");
    }
    if (s.uid.empty()) {
      ++run.errors;
      std::lock_guard lock(run.mu);
      if (run.first_error.empty()) {
        run.first_error =
            r.ok() ? fmt::format("HTTP {}: {}", r->status, r->body) : r.status().ToString();
      }
    }
  }
}

// Waits until every cluster of SIM_DIR/clusters.d is Ready with capacity in gantry.
bool WaitClustersReady(gantry::http::Client& client, const std::string& sim_dir) {
  std::size_t want = 0;
  for (const auto& e : std::filesystem::directory_iterator(sim_dir + "/clusters.d")) {
    want += e.is_regular_file();
  }
  auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = client.Do("GET", "/api/v1/clusters");
    if (r.ok() && r->status == 200) {
      json list = json::parse(r->body, nullptr, false);
      json items = list.is_object() ? list.value("items", json::array()) : json::array();
      std::size_t ready = std::count_if(items.begin(), items.end(), [](const json& c) {
        const json& st = c.value("status", json::object());
        return st.value("health", "") == "Ready" && st.contains("capacity");
      });
      if (ready >= want) return true;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return false;
}

// One sample of a Prometheus text exposition: "name{labels} value" lines.
struct MetricLine {
  std::string name, labels;
  double value = 0;
};

std::vector<MetricLine> Scrape(gantry::http::Client& client) {
  std::vector<MetricLine> out;
  auto r = client.Do("GET", "/metrics");
  if (!r.ok() || r->status != 200) return out;
  std::size_t start = 0;
  while (start < r->body.size()) {
    std::size_t end = r->body.find('\n', start);
    if (end == std::string::npos) end = r->body.size();
    std::string line = r->body.substr(start, end - start);
    start = end + 1;
    std::size_t sp = line.rfind(' ');
    if (line.empty() || line[0] == '#' || sp == std::string::npos) continue;
    MetricLine m;
    std::size_t brace = line.find('{');
    m.name = line.substr(0, std::min(brace, sp));
    if (brace < sp) m.labels = line.substr(brace, sp - brace);
    m.value = std::strtod(line.c_str() + sp + 1, nullptr);
    out.push_back(std::move(m));
  }
  return out;
}

// The value of label key in {a="x",b="y"}, or "".
std::string LabelOf(const std::string& labels, const std::string& key) {
  std::size_t at = labels.find(key + "=\"");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return labels.substr(at, labels.find('"', at) - at);
}

// gantry_jobs{phase="P"}.
std::map<std::string, int> JobsByPhase(const std::vector<MetricLine>& metrics) {
  std::map<std::string, int> out;
  for (const MetricLine& m : metrics) {
    if (m.name == "gantry_jobs") out[LabelOf(m.labels, "phase")] = static_cast<int>(m.value);
  }
  return out;
}

// The samples of metric `name`, summed by key(labels).
template <typename KeyFn>
std::map<std::string, double> SumBy(const std::vector<MetricLine>& metrics, const std::string& name, KeyFn key) {
  std::map<std::string, double> out;
  for (const MetricLine& m : metrics) {
    if (m.name == name) out[key(m.labels)] += m.value;
  }
  return out;
}

// gantry_dispatch_remote_calls_total by "verb code" ("" when the daemon does not export it).
std::map<std::string, double> RemoteCalls(const std::vector<MetricLine>& metrics) {
  return SumBy(metrics, "gantry_dispatch_remote_calls_total",
               [](const std::string& l) { return LabelOf(l, "verb") + " " + LabelOf(l, "code"); });
}

// gantry_dispatch_passes_total by ladder step.
std::map<std::string, double> Passes(const std::vector<MetricLine>& metrics) {
  return SumBy(metrics, "gantry_dispatch_passes_total", [](const std::string& l) { return LabelOf(l, "step"); });
}

double Total(const std::map<std::string, double>& by_key) {
  double n = 0;
  for (const auto& [k, v] : by_key) n += v;
  return n;
}

// uid -> first start in the journal, and how many runs each uid had.
void ReadJournal(const std::string& sim_dir, std::map<std::string, double>* first_start,
                 std::map<std::string, int>* runs) {
  int port = 0;
  std::ifstream(sim_dir + "/admin") >> port;
  auto client = Connect(fmt::format("http://127.0.0.1:{}", port));
  auto r = client->Do("GET", "/journal");
  if (!r.ok() || r->status != 200) {
    std::fprintf(stderr, "dispatch_loadgen: cannot read the journal\n");
    return;
  }
  std::size_t start = 0;
  while (start < r->body.size()) {
    std::size_t end = r->body.find('\n', start);
    if (end == std::string::npos) end = r->body.size();
    json line = json::parse(r->body.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (!line.is_object()) continue;
    std::string uid = line.value("jobUid", "");
    double t = line.value("startMs", 0.0);
    ++(*runs)[uid];
    auto [it, fresh] = first_start->emplace(uid, t);
    if (!fresh) it->second = std::min(it->second, t);
  }
}

struct StoreFacts {
  std::map<std::string, double> submitted_ms, lease_ms;  // by uid
  std::map<std::string, int> reasons;                    // event reason -> count
  int64_t creates = 0;                                   // remote creates the events call for
};

// Number of clusters copies went to: "Workload copies to c1, c2; ...",
// "Workload copies added to c3, feasible ...", "Workload copies moved from
// c1, which ..., to c3, which ...": the names after the first " to ", up to
// a ';' or the first words that are no name.
int ClustersIn(const std::string& message) {
  std::size_t from = message.find("Workload copies");
  std::size_t to = from == std::string::npos ? from : message.find(" to ", from);
  if (to == std::string::npos) return 0;
  std::string names = message.substr(to + 4);
  names = names.substr(0, names.find(';'));
  int n = 0;
  for (std::size_t at = 0; at <= names.size();) {
    std::size_t end = names.find(", ", at);
    const std::string name = names.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (name.empty() || name.find(' ') != std::string::npos) break;
    ++n;
    if (end == std::string::npos) break;
    at = end + 2;
  }
  return n;
}

StoreFacts ReadStore(const std::string& path) {
  StoreFacts f;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "dispatch_loadgen: %s: %s\n", path.c_str(), sqlite3_errmsg(db));
    sqlite3_close(db);
    return f;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* st = nullptr;
  const char* sql = "SELECT job_uid, reason, time_ms, message FROM job_events ORDER BY id";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "dispatch_loadgen: %s: %s\n", path.c_str(), sqlite3_errmsg(db));
  }
  while (st && sqlite3_step(st) == SQLITE_ROW) {
    std::string uid = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    std::string reason = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    double t = static_cast<double>(sqlite3_column_int64(st, 2));
    std::string message = reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
    ++f.reasons[reason];
    if (reason == "Submitted") f.submitted_ms.emplace(uid, t);
    if (reason == "LeaseTaken") {
      f.lease_ms.emplace(uid, t);  // the first lease
      ++f.creates;
    }
    if (reason == "Nominated" || reason == "Widened" || reason == "CopiesMoved") f.creates += ClustersIn(message);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return f;
}

// Polls /metrics until every accepted job is in a final phase; the time then
// (0 on timeout, or when no job changed phase for kStallTimeout) and the last
// counts by phase.
double WaitFinished(gantry::http::Client& client, int accepted,
                    std::map<std::string, int>* phases) {
  const auto start = std::chrono::steady_clock::now();
  auto moved = start;
  while (std::chrono::steady_clock::now() < start + kFinishTimeout) {
    auto now = JobsByPhase(Scrape(client));
    if (now != *phases) moved = std::chrono::steady_clock::now();
    *phases = std::move(now);
    auto& p = *phases;
    if (p["Succeeded"] + p["Failed"] + p["Unschedulable"] + p["Cancelled"] >= accepted) {
      return NowMs();
    }
    if (std::chrono::steady_clock::now() - moved > kStallTimeout) {
      std::printf("  STALLED     no job changed phase for %lld s\n",
                  static_cast<long long>(kStallTimeout.count()));
      return 0;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  std::printf("  TIMEOUT     after %lld s waiting for every job to finish\n",
              static_cast<long long>(kFinishTimeout.count()));
  return 0;
}

// The finished jobs' copies are deleted just after they finish: the remote
// call counts once they stop moving (three polls in a row), or after kSettlePolls.
std::map<std::string, double> SettledRemoteCalls(gantry::http::Client& client) {
  std::map<std::string, double> calls = RemoteCalls(Scrape(client));
  for (int same = 0, polls = 0; same < 3 && polls < kSettlePolls; ++polls) {
    std::this_thread::sleep_for(kPollInterval * 2);
    auto now = RemoteCalls(Scrape(client));
    same = Total(now) == Total(calls) ? same + 1 : 0;
    calls = std::move(now);
  }
  return calls;
}

// CPU seconds (user + system) process `pid` has used, from /proc; -1 if unknown.
double CpuSeconds(const char* pid) {
  if (!pid || !*pid) return -1;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f((std::istream_iterator<std::string>(fields)), std::istream_iterator<std::string>());
  if (f.size() < 13) return -1;  // f[0] is field 3 (state): utime is field 14, stime 15
  return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Resident memory of process `pid` in MiB, from /proc; -1 if unknown.
double ResidentMib(const char* pid) {
  if (!pid || !*pid) return -1;
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024;
  }
  return -1;
}

// REST_SECONDS: once no job is Queued (and REST_SETTLE_SECONDS more, 5 by
// default, for the copies to be created and seen), what the backlog costs
// while nothing happens.
int RestPhase(gantry::http::Client& client, const Run& run, int accepted) {
  const auto deadline = std::chrono::steady_clock::now() + kFinishTimeout;
  std::map<std::string, int> phases;
  for (;;) {
    phases = JobsByPhase(Scrape(client));
    int placed = phases["Nominating"] + phases["Admitted"] + phases["Running"];
    if (phases["Queued"] == 0 && placed >= accepted) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::printf("  TIMEOUT     jobs still Queued after %lld s\n", static_cast<long long>(kFinishTimeout.count()));
      return 1;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  const char* settle = std::getenv("REST_SETTLE_SECONDS");
  std::this_thread::sleep_for(std::chrono::duration<double>(settle ? std::atof(settle) : 5.0));
  const char* gantry_pid = std::getenv("GANTRY_PID");
  const char* sim_pid = std::getenv("SIM_PID");
  const double g0 = CpuSeconds(gantry_pid), s0 = CpuSeconds(sim_pid);
  const std::map<std::string, double> p0 = Passes(Scrape(client));
  const double t0 = NowMs();
  std::this_thread::sleep_for(std::chrono::duration<double>(run.rest_s));
  const double g1 = CpuSeconds(gantry_pid), s1 = CpuSeconds(sim_pid);
  const std::map<std::string, double> p1 = Passes(Scrape(client));
  const double seconds = (NowMs() - t0) / 1000;
  phases = JobsByPhase(Scrape(client));
  std::string by;
  for (const auto& [step, n] : p1) {
    auto before = p0.find(step);
    double d = n - (before == p0.end() ? 0 : before->second);
    if (d > 0) by += fmt::format(", {} {:.1f}", step, d / seconds);
  }
  const double passes_per_s = (Total(p1) - Total(p0)) / seconds;
  std::printf("  backlog     %d Nominating, %d Admitted or Running\n", phases["Nominating"],
              phases["Admitted"] + phases["Running"]);
  std::printf("  at rest     over %.0f s: %.1f passes/s (%.4f per waiting job per second%s)\n", seconds, passes_per_s,
              phases["Nominating"] > 0 ? passes_per_s / phases["Nominating"] : 0.0, by.c_str());
  std::printf("  rest cpu    gantry %.1f%% of a core (resident %.0f MiB), gantry-sim %.1f%%\n",
              g0 < 0 ? -1.0 : 100 * (g1 - g0) / seconds, ResidentMib(gantry_pid), s0 < 0 ? -1.0 : 100 * (s1 - s0) / seconds);
  std::printf("result rest_passes_per_s=%.1f rest_gantry_cpu_pct=%.1f errors=%d\n", passes_per_s,
              g0 < 0 ? -1.0 : 100 * (g1 - g0) / seconds, run.errors.load());
  return run.errors == 0 ? 0 : 1;
}

struct Dist {
  std::vector<double> v;
  double At(double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
  }
  std::string Line() {
    return fmt::format("p50 {:.0f} ms  p99 {:.0f} ms  max {:.0f} ms  (n={})", At(0.5), At(0.99),
                       At(1.0), v.size());
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(
        stderr,
        "usage: dispatch_loadgen ADDR SIM_DIR DB JOBS CONNECTIONS AllAtOnce|Incremental [RATE]\n");
    return 2;
  }
  Run run;
  run.addr = argv[1];
  run.sim_dir = argv[2];
  run.db = argv[3];
  run.jobs = std::stoi(argv[4]);
  run.connections = std::stoi(argv[5]);
  run.mode = argv[6];
  run.rate = argc > 7 ? std::stod(argv[7]) : 0;
  if (const char* rest = std::getenv("REST_SECONDS")) run.rest_s = std::atof(rest);
  run.samples.resize(run.jobs);

  auto poller = Connect("http://" + run.addr);
  if (!WaitClustersReady(*poller, run.sim_dir)) {
    std::fprintf(stderr, "dispatch_loadgen: the clusters did not all become Ready with capacity\n");
    return 1;
  }
  const double start_ms = NowMs() + 20;  // every connection is up before the first scheduled post
  std::vector<std::thread> threads;
  for (int i = 0; i < run.connections; ++i)
    threads.emplace_back(Submitter, std::ref(run), i, start_ms);
  for (auto& t : threads) t.join();
  double first_sent = run.samples.front().sent_ms, last_acked = 0;
  for (const Sample& s : run.samples) {
    first_sent = std::min(first_sent, s.sent_ms);
    last_acked = std::max(last_acked, s.acked_ms);
  }
  const int accepted = run.jobs - run.errors;
  std::printf("  submitted   %d jobs in %.2f s: %.0f jobs/s (%d errors%s%s)\n", accepted,
              (last_acked - first_sent) / 1000, accepted / ((last_acked - first_sent) / 1000),
              run.errors.load(),
              run.first_error.empty() ? "" : "; first: ", run.first_error.substr(0, 200).c_str());

  if (run.rest_s > 0) return RestPhase(*poller, run, accepted);
  std::map<std::string, int> phases;
  const double done_ms = WaitFinished(*poller, accepted, &phases);
  std::map<std::string, double> calls =
      done_ms > 0 ? SettledRemoteCalls(*poller) : RemoteCalls(Scrape(*poller));
  const std::vector<MetricLine> settled = Scrape(*poller);
  std::map<std::string, double> passes = Passes(settled);
  // Store commits by whether they were fsync'd ("true"/"false"; empty when
  // the daemon does not export gantry_store_commits_total).
  std::map<std::string, double> commits = SumBy(settled, "gantry_store_commits_total",
                                                [](const std::string& l) { return LabelOf(l, "fsync"); });

  std::map<std::string, double> first_start;
  std::map<std::string, int> runs;
  ReadJournal(run.sim_dir, &first_start, &runs);
  StoreFacts store = ReadStore(run.db);

  Dist lease, run_lat, gantry_lease;
  std::vector<double> run_at;  // first start of each job
  int twice = 0;
  for (const Sample& s : run.samples) {
    if (s.uid.empty()) continue;
    if (auto it = store.lease_ms.find(s.uid); it != store.lease_ms.end()) {
      lease.v.push_back(it->second - s.sent_ms);
      if (auto sub = store.submitted_ms.find(s.uid); sub != store.submitted_ms.end()) {
        gantry_lease.v.push_back(it->second - sub->second);
      }
    }
    if (auto it = first_start.find(s.uid); it != first_start.end()) {
      run_lat.v.push_back(it->second - s.sent_ms);
      run_at.push_back(it->second);
    }
    if (runs[s.uid] > 1) ++twice;
  }
  std::sort(run_at.begin(), run_at.end());
  double dispatched_per_s = 0, steady_per_s = 0;
  if (!run_at.empty()) {
    dispatched_per_s = run_at.size() / ((run_at.back() - first_sent) / 1000);
    std::size_t lo = run_at.size() / 10, hi = run_at.size() * 9 / 10;
    if (hi > lo && run_at[hi] > run_at[lo]) {
      steady_per_s = (hi - lo) / ((run_at[hi] - run_at[lo]) / 1000);
    }
    std::printf(
        "  dispatched  %zu jobs, the last %.2f s after the first post: %.0f jobs/s (%.0f jobs/s "
        "from the "
        "10th to the 90th percentile)\n",
        run_at.size(), (run_at.back() - first_sent) / 1000, dispatched_per_s, steady_per_s);
  }
  std::printf("  post -> LeaseTaken        %s\n", lease.Line().c_str());
  std::printf("  Submitted -> LeaseTaken   %s  (gantry's own event times)\n",
              gantry_lease.Line().c_str());
  std::printf("  post -> running on owner  %s\n", run_lat.Line().c_str());
  std::string phase_text;
  for (const auto& [p, n] : phases) {
    if (n > 0) phase_text += fmt::format(" {} {}", p, n);
  }
  if (done_ms > 0) {
    std::printf("  finished    all %d jobs %.2f s after the first post:%s\n", accepted,
                (done_ms - first_sent) / 1000, phase_text.c_str());
  } else {
    std::printf("  unfinished  jobs by phase:%s\n", phase_text.c_str());
  }
  std::string reason_text;
  for (const auto& [r, n] : store.reasons) reason_text += fmt::format(" {} {}", r, n);
  std::printf("  events     %s\n", reason_text.c_str());
  double creates_per_job = accepted ? double(store.creates) / accepted : 0;
  double calls_per_job = accepted ? Total(calls) / accepted : 0;
  if (!calls.empty()) {
    std::string by;
    for (const auto& [k, v] : calls) by += fmt::format(", {} {:.0f}", k, v);
    std::printf(
        "  remote API  %.1f calls/job by the engine (%.0f in all%s); by the protocol %.1f; probes "
        "(5 GETs per cluster per probe) and watches not counted\n",
        calls_per_job, Total(calls), by.c_str(), 2 * creates_per_job);
  } else {
    std::printf(
        "  remote API  ~%.1f calls/job by the protocol (%.1f creates + as many deletes; this "
        "daemon exports "
        "no gantry_dispatch_remote_calls_total)\n",
        2 * creates_per_job, creates_per_job);
  }
  if (!passes.empty() && accepted > 0) {
    std::string by;
    for (const auto& [step, n] : passes) by += fmt::format(", {} {:.0f}", step, n);
    std::printf("  passes      %.1f per job (%.0f in all%s)\n", Total(passes) / accepted, Total(passes), by.c_str());
  }
  if (!commits.empty() && accepted > 0) {
    std::printf("  commits     %.2f store commits per job, %.2f of them fsync'd (%.0f in all, %.0f without fsync)\n",
                Total(commits) / accepted, commits["true"] / accepted, Total(commits), commits["false"]);
  }
  std::printf("  journal     %zu of our jobs ran, %d of them more than once\n", run_at.size(),
              twice);
  std::printf(
      "result dispatched_per_s=%.0f steady_per_s=%.0f lease_p50_ms=%.0f lease_p99_ms=%.0f "
      "run_p99_ms=%.0f "
      "finished_s=%.2f calls_per_job=%.1f errors=%d\n",
      dispatched_per_s, steady_per_s, lease.At(0.5), lease.At(0.99), run_lat.At(0.99),
      done_ms > 0 ? (done_ms - first_sent) / 1000 : -1.0,
      calls.empty() ? 2 * creates_per_job : calls_per_job, run.errors.load());
  bool ok = run.errors == 0 && done_ms > 0 && phases["Succeeded"] == accepted && twice == 0;
  return ok ? 0 : 1;
}
