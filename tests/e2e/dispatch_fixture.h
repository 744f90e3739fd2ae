// End-to-end dispatch fixture: a gantry-sim process with N simulated Kueue
// clusters and a real `gantry serve` pointed at them, with helpers to submit
// jobs, read them back and operate the simulator (faults, journal check).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon_fixture.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/kube/kube_client.h"
#include "process.h"
#include "test_support.h"

namespace gantry::testing {

struct DispatchFleetOptions {
  int clusters = 3;
  std::string sim_config_yaml;          // "" = --clusters N (varied shapes)
  std::string daemon_config_yaml;       // extra lines for gantry.yaml
};

class DispatchFleet {
 public:
  explicit DispatchFleet(DispatchFleetOptions options = {});
  ~DispatchFleet();

  bool ok() const { return daemon_ && daemon_->ready(); }
  const std::string& url() const { return daemon_->url(); }
  const std::string& sim_dir() const { return sim_dir_; }
  TempDir& dir() { return dir_; }

  // Stops the daemon (SIGKILL when kill) and starts it again on the same data.
  void RestartDaemon(bool kill);
  // The same in two steps, for what happens while no daemon runs.
  void StopDaemon(bool kill);
  void StartDaemon();
  // Rewrites gantry.yaml with these extra lines in place of the options'
  // daemon_config_yaml; the next RestartDaemon reads it.
  void SetDaemonConfig(const std::string& extra_yaml);
  Daemon& daemon() { return *daemon_; }

  // POST a YAML job document; returns the HTTP status.
  int Submit(const std::string& ns, const std::string& yaml);
  // POST /api/v1/clusters:reload (the daemon re-reads its inventory): the
  // HTTP status, -1 when unreachable.
  int ReloadClusters();
  // GET the job (null when absent or unreachable).
  nlohmann::json Job(const std::string& ns, const std::string& name);
  // GET the job's placement route: where it could run now (null on failure).
  nlohmann::json Placement(const std::string& ns, const std::string& name);
  // GET /api/v1/clusters/NAME (null on failure).
  nlohmann::json Cluster(const std::string& name);
  std::string Phase(const std::string& ns, const std::string& name);
  // Waits until the job's phase is one of `phases`.
  bool WaitPhase(const std::string& ns, const std::string& name, std::vector<std::string> phases,
                 std::chrono::milliseconds deadline = std::chrono::seconds(60));
  // Waits until the daemon reports every cluster of the simulator Ready, so
  // a job submitted next is placed at once and may go to any of them.
  bool WaitClustersReady(std::chrono::milliseconds deadline = std::chrono::seconds(20));
  // GET a whole page of jobs in a namespace.
  nlohmann::json List(const std::string& ns);
  std::vector<nlohmann::json> Events(const std::string& ns, const std::string& name);
  // Where gantry has the job's objects (GET .../remoteobjects): its rows.
  std::vector<nlohmann::json> RemoteObjects(const std::string& ns, const std::string& name);

  // The daemon's gantry_dispatch_remote_calls_total for cluster ("" = all
  // clusters, summed), verb and code (0 when it has no such series, -1 when
  // /metrics cannot be read).
  double RemoteCalls(const std::string& cluster, const std::string& verb, int code);
  // The daemon's /metrics text (nullopt when it cannot be read).
  std::optional<std::string> Metrics();
  // A per-cluster gauge of the daemon's /metrics (gantry_cluster_...), by
  // cluster; empty when /metrics cannot be read or has no such series.
  std::map<std::string, double> ClusterGauge(const std::string& name);

  // gantry-sim ctl ARGS...
  RunResult Ctl(std::vector<std::string> args);
  // Every run the simulator recorded (journal lines parsed).
  std::vector<nlohmann::json> Journal();
  // The journal's runs of one job uid, in start order.
  std::vector<nlohmann::json> Runs(const std::string& job_uid);
  // The job's uid ("" when absent).
  std::string Uid(const std::string& ns, const std::string& name);

  // GET path from simulated cluster `cluster`, as gantry would (its
  // kubeconfig in sim_dir()): the HTTP status (-1 when unreachable) and body.
  struct RemoteReply {
    int status = -1;
    nlohmann::json body;
  };
  RemoteReply RemoteGet(const std::string& cluster, const std::string& path);
  // A client of simulated cluster `cluster` with gantry's credentials (its
  // kubeconfig in sim_dir()); null when they cannot be read.
  std::unique_ptr<kube::KubeClient> RemoteClient(const std::string& cluster,
                                                 const kube::KubeClientOptions& options = {});

 private:
  // GET path from the daemon, parsed (null unless it answered 200).
  nlohmann::json GetJson(const std::string& path);
  std::vector<nlohmann::json> JobItems(const std::string& ns, const std::string& name, const std::string& sub);
  DispatchFleetOptions options_;
  TempDir dir_;
  std::string sim_dir_;
  std::string config_path_;
  std::unique_ptr<Process> sim_;
  std::unique_ptr<Daemon> daemon_;
};

// Two clusters, c1 and c2, of 2 nodes x 8 H100 (16 GPUs of nominal quota each).
inline constexpr const char* kTwoH100Clusters = R"(clusters:
- {name: c1, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 2}
- {name: c2, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 2}
)";

// A batch/v1 Job document for the simulator: `pods` pods of cpu/memory/gpus,
// running `duration` (sim.gantry.dev/duration) then succeeding or failing.
std::string SimJobYaml(const std::string& name, const std::string& ns, int pods, int gpus,
                       const std::string& duration = "1s", const std::string& extra_spec = "",
                       bool fail = false);

// A JobSet document for the simulator: one replicated job of one 1-CPU pod
// that runs `duration`, placed in `cluster` ("" = anywhere).
std::string JobSetYaml(const std::string& name, const std::string& ns, const std::string& duration,
                       const std::string& cluster = "");

// The name of a job's Workload and real job in the workers: the engine's own
// RemoteName (its rows are pinned in remote_objects_test).
using dispatch::RemoteName;

// Paths of a job's remote objects, as gantry names them (RemoteName).
std::string RemoteJobPath(const std::string& ns, const std::string& remote);
std::string RemoteWorkloadPath(const std::string& ns, const std::string& remote);
// Neither the Workload nor the job of `remote` exists in `cluster` (both answered 404).
bool RemoteGone(DispatchFleet& fleet, const std::string& cluster, const std::string& ns, const std::string& remote);

// The reasons of a job's events, oldest first.
std::vector<std::string> Reasons(DispatchFleet& fleet, const std::string& ns, const std::string& name);
int Count(const std::vector<std::string>& v, const std::string& x);
// Journal runs one a line, for a failure's log.
std::string Describe(const std::vector<nlohmann::json>& runs);

// Two CPU clusters. c1 admits at once and runs a job without a duration
// annotation for a minute: a zombie that outlives any partition in a test.
// c2 admits after 2 s, so a job free to go anywhere is leased by c1 first,
// and runs it in 3 s.
inline constexpr const char* kSlowThenFast = R"(clusters:
- {name: c1, jobDuration: 60s}
- {name: c2, jobDuration: 3s, admissionDelay: 2s}
)";

// A journal run was ended by gantry deleting its objects (the Workload goes
// first, which stops the run; the job's delete then finds it stopped).
bool StoppedByDelete(const nlohmann::json& run);

// How many of the namespace's jobs are in each phase (empty when the list
// failed), and the same as one line for a failure's log.
std::map<std::string, int> PhaseCounts(DispatchFleet& fleet, const std::string& ns);
std::string Histogram(const std::map<std::string, int>& counts);
// The namespace's jobs by name (empty when the list failed).
std::map<std::string, nlohmann::json> JobsByName(DispatchFleet& fleet, const std::string& ns);

// Posts a job document to the daemon at url() (asked again at each try: a
// campaign restarts the daemon) until it is acknowledged, for at most
// deadline. A submission whose answer was lost is sent again: the same
// document is answered 200 with the job already stored, or 201 if the first
// never landed. Returns the uid it was answered with ("" if the body had
// none), or nullopt; *last_status gets the last HTTP status (-1: none).
std::optional<std::string> SubmitAcked(const std::function<std::string()>& url, const std::string& ns,
                                       const std::string& yaml, std::chrono::milliseconds deadline,
                                       int* last_status);

// WaitFor with a gentler poll interval, for conditions that cost a process
// or several requests per look (the journal, remote GETs).
bool PollFor(const std::function<bool()>& cond, std::chrono::milliseconds deadline,
             std::chrono::milliseconds interval = std::chrono::milliseconds(100));

}  // namespace gantry::testing
