// SimCluster: one simulated worker cluster on the network: its TLS
// apiserver (the project's http::Server) on a loopback port, its CA and
// bearer token, and the faults an operator can inject between the daemon
// and it (latency, error fraction, partition, apiserver stop/start).
//
// Partition modes: 1 = the apiserver is down (new connections refused, open
// ones closed); 2 = the apiserver stays up but stalls every request until
// heal (then 503) and ends watches, as when only the daemon's network path
// is cut.
//
// Thread-safety: Handle runs on the server's thread; the admin methods and
// Tick from other threads; all state is under mutexes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "certs.h"
#include "cluster_state.h"
#include "rbac.h"
#include "gantry/http/server.h"
#include "kube_api.h"

namespace gantry::sim {

struct FaultSettings {
  int64_t latency_ms = 0;
  // The verbs (as forbid names them: create, delete, update, get, list)
  // the latency above delays; empty: every request. Writes alone stalling
  // while reads answer is an apiserver whose etcd lost its quorum: its
  // health checks and watches look fine.
  std::set<std::string> latency_verbs;
  double error_fraction = 0;
  std::vector<int> error_codes = {500, 503, 429};
  // The verbs (as RBAC names them: create, delete, list, ...) the errors
  // above hit; empty: every request, the health probe's and watches' too.
  std::set<std::string> error_verbs;
  int partition_mode = 0;  // 0 none, 1 apiserver down, 2 stalls requests
  // Resources (plural names, e.g. clusterqueues; or jobs:create for one
  // verb: create, delete, update, list) gantry's token may not touch: 403
  // Forbidden, as RBAC answers.
  std::set<std::string> forbidden;
  // Resources every request for which answers this error (jobsets -> 500:
  // a CRD whose conversion webhook is broken, say); or RESOURCE:VERB, only
  // that verb's (jobs:create -> 500: an admission webhook that fails).
  std::map<std::string, int> failing;
  bool apiserver_stopped = false;
  // One request, RESOURCE:VERB (jobs:create): the next one is carried out
  // by an apiserver that stalls as it does so: its answer is held back
  // until heal (then a 503), and the watch streams go silent, their events
  // held until hold-watches off. Its sender cannot know that it landed, and
  // a view fed by those watches does not show it.
  std::string lose_answer;
  // Set: only what these rules grant is allowed (rbac.h), on top of the above.
  std::shared_ptr<const Rbac> rbac;
};

class SimCluster {
 public:
  // journal and clock must outlive this.
  SimCluster(ClusterConfig config, Journal* journal, const Clock* clock);
  ~SimCluster();

  // Makes the certificates and starts the apiserver.
  Status Start();
  void Shutdown();

  const std::string& name() const { return state_.config().name; }
  const ClusterConfig& config() const { return state_.config(); }
  uint16_t port() const { return port_; }
  const std::string& token() const { return token_; }
  const ClusterCerts& certs() const { return certs_; }
  std::string server_url() const;
  ClusterState& state() { return state_; }

  // Time passes: the Kueue model, watch deadlines, delayed responses.
  void Tick();

  // Faults (admin API).
  Status StopApiserver();
  Status StartApiserver();
  Status Partition(int mode);
  Status Heal();
  Status SetLatency(int64_t ms, std::set<std::string> verbs = {});
  Status SetErrors(double fraction, std::vector<int> codes, std::set<std::string> verbs = {});
  // Each entry: RESOURCE or RESOURCE:VERB (403), or RESOURCE=CODE (that
  // error, 400..599, for every verb). Replaces what was set before.
  Status SetForbidden(std::set<std::string> resources);
  // FaultSettings::lose_answer; "" clears it.
  Status SetLoseAnswer(std::string request);
  // The ClusterRole(s) in this YAML become the token's only grants; "" grants
  // everything again.
  Status SetRbac(const std::string& yaml_text);
  FaultSettings faults();
  // Answers held back (partition mode 2, lose-answer) until the next heal.
  std::size_t answers_held();

 private:
  struct Deferred {
    int64_t due_ms;
    http::Responder respond;
    http::Response response;
  };
  void Handle(http::Request req, http::Responder respond);
  Status StartServerLocked();
  void StopServerLocked();

  ClusterState state_;
  KubeApi api_;
  const Clock* clock_;
  ClusterCerts certs_;
  std::string token_;
  uint16_t port_ = 0;

  std::mutex server_mu_;  // guards server_ (start/stop from admin threads)
  std::unique_ptr<http::Server> server_;

  std::mutex fault_mu_;   // guards the rest
  FaultSettings faults_;
  std::mt19937_64 rng_;
  std::deque<Deferred> deferred_;
  std::vector<http::Responder> stalled_;
};

}  // namespace gantry::sim
