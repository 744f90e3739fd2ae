// KubeProber: probes a worker cluster over HTTPS: GET /readyz, then lists
// Kueue ClusterQueues to read nominal quota, reservation and pending
// workloads, then LocalQueues (of every namespace) to know which
// ClusterQueue a job's Workload lands in, then WorkloadPriorityClasses
// (placement/cluster_queues.h).
// Trusts the cluster's CA only, sends the bearer token, and has a deadline
// on every step.
//
// It does not retry: a failed probe is itself the signal, and the Fleet backs
// off between probes. The API server's own 401 or 403, or no token to send
// while the cluster answers, comes back as kUnauthenticated or
// kPermissionDenied: the cluster is up and refuses us, an outage the Fleet
// gives a longer timeout (fleet.h). Never so for a cluster whose TLS is not
// verified (allowInsecure).
//
// Thread-safety: Probe from any thread (the Fleet's probe workers share one
// prober). A probe takes its cluster's kept client out of the cache for its
// duration, so two probes of one cluster never share a connection: the
// second opens its own.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gantry/common/stop_signal.h"
#include "gantry/inventory/fleet.h"
#include "gantry/kube/kube_client.h"

namespace gantry::kube {

class KubeProber final : public inventory::ClusterProber {
 public:
  explicit KubeProber(std::chrono::milliseconds timeout = std::chrono::seconds(5)) : timeout_(timeout) {}
  Result<inventory::CapacityReading> Probe(const inventory::ClusterConfig& config,
                                           const inventory::ClusterCredentials& creds) override;
  void Stop() override { stop_.Set(); }

 private:
  struct Conn {
    inventory::ClusterCredentials made_from;  // a change (SameConnection) makes a new client
    std::unique_ptr<KubeClient> client;
  };
  Status WithoutToken(const inventory::ClusterCredentials& creds, const Status& no_token);

  std::chrono::milliseconds timeout_;
  StopSignal stop_;  // every client's requests watch it (KubeClientOptions::stop_fd)
  std::mutex mu_;
  std::map<std::string, Conn> conns_;  // idle clients by cluster name; guarded by mu_
  // The classes each cluster's last good list gave, and the connection
  // that read them: an entry of the same name that leads elsewhere (another
  // server, after a reload) does not borrow them; guarded by mu_.
  struct Classes {
    inventory::ClusterCredentials made_from;
    std::map<std::string, int32_t> values;
  };
  std::map<std::string, Classes> classes_;
};

// How far a server's clock is ahead of ours (negative: behind), in ms, from
// the Date header of its answer to a request sent at sent_ms and answered
// at received_ms (our wall clock): the header's second plus half a second,
// less the midpoint of the two. Unset when the header is missing or not an
// IMF-fixdate, or the round trip took over a second (the reading would be
// worse than the header's own resolution). Exposed for tests.
std::optional<int64_t> ClockOffsetMs(std::string_view date, int64_t sent_ms, int64_t received_ms);

// A probe's answer other than 200, as its error: the API server's own 401
// or 403 (a Kubernetes Status object) over verified TLS is a refusal
// (kUnauthenticated, kPermissionDenied: up, refusing us); anything else is
// an outage (kUnavailable). Exposed for tests.
Status RefusalOrOutage(const KubeReply& reply, bool verified, std::string what);

// The uid of the kube-system Namespace an answer to its GET holds ("" for
// any other answer, or a failure).
std::string ClusterIdOf(const Result<KubeReply>& kube_system);
// With no token to send, what /readyz asked without one tells: a 200 or the
// API server's own refusal over verified TLS shows the cluster up
// (kUnauthenticated); no answer, or any other, is an outage. Exposed for tests.
Status WithoutTokenOutcome(const Result<KubeReply>& anonymous_readyz, bool verified, const Status& no_token);

// What the ClusterQueue list and the LocalQueue list answered, as the
// probe's result (/readyz having answered 200). The API server's own 401 is
// a refusal (RefusalOrOutage). Any other failure of the ClusterQueue list
// (403, 404: Kueue not served at `version`, 5xx) is a reading marked
// unreadable, never an outage: the cluster is up. A failed LocalQueue list
// (`local_queues`' error or answer, e.g. a 403) only leaves the LocalQueues
// unknown (ClusterQueues::local_queues_known). Exposed for tests.
Result<inventory::CapacityReading> ReadCapacity(const KubeReply& cluster_queues,
                                                const Result<KubeReply>& local_queues, bool verified,
                                                std::string_view version);

// Reads a ClusterQueueList: the sums over all ClusterQueues (saturating at
// kMaxQuantityMilli, as does a quota too large for int64 milli-units, an
// "unlimited" 1000Pi) and each ClusterQueue described (`queues`), with the
// LocalQueueList `local_queues` mapped to them; null: the LocalQueues are
// unknown, for the reason `lq_error`. A ClusterQueue list that cannot be
// read (not a list, a quantity that is not one) gives a reading with
// `unreadable` set, never an error: the cluster answered, and a capacity
// problem is no outage (CapacityReading). A LocalQueue list that cannot be
// read leaves the LocalQueues unknown. Exposed for tests.
inventory::CapacityReading ParseClusterQueues(const nlohmann::json& list, const nlohmann::json* local_queues = nullptr,
                                              std::string lq_error = "the LocalQueues were not listed");

// Why a list of Kueue's `what` ("LocalQueues") failed, for the operator:
// no answer, a 403 (naming the grant `resource` needs: "localqueues"), or
// another status; "" when it answered 200. Exposed for tests.
std::string ListFailure(const Result<KubeReply>& answer, std::string_view what, std::string_view resource);

// Adds what the WorkloadPriorityClass list answered to a reading that
// describes its queues (ClusterQueues::priority_classes). A list that fails
// for good (a 403: RBAC without list on workloadpriorityclasses, a 404, an
// item without a name or an int32 value) leaves them unknown, with why. One
// that fails in passing (no answer, 429, 5xx) gives `last_good` when there
// is one: a moment's failure must not leave a job's cluster out and wake
// every waiting job twice. A reading without queues is left as it is.
// Returns the classes read (nullopt when none were). Exposed for tests.
std::optional<std::map<std::string, int32_t>> AddPriorityClasses(
    inventory::CapacityReading& reading, const Result<KubeReply>& priority_classes,
    const std::map<std::string, int32_t>* last_good = nullptr);

}  // namespace gantry::kube
