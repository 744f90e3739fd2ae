// Withdrawals: the lease losers' Workload copies, withdrawn in batches. With
// AllAtOnce each job leaves a copy in every other candidate when one cluster
// takes its lease; one DELETE per copy made most of the engine's requests
// (7 of 18 per job with 8 candidates), in gantry and in every worker's API
// server alike. Here the copies of one cluster, namespace and epoch, from
// any number of jobs, go in one deletecollection by label:
//
//   DELETE .../namespaces/NS/workloads?labelSelector=
//       kueue.x-k8s.io/multikueue-origin=ORIGIN,gantry.dev/epoch=E,
//       gantry.dev/job-uid in (UID1,UID2,...)
//
// Why this is safe where a DELETE by name carries the object's uid as a
// precondition: only a copy of a job's current epoch, in a cluster that lost
// that epoch's lease, is batched (Action::batch_job_uid), and nothing of the
// job at that epoch is made there again; its next epoch's copies carry
// another epoch label, so a batch sent late (its cluster slow, the job
// requeued meanwhile) cannot match them.
//
// A batch of one copy goes by name instead (with its uid as precondition):
// the API server finds a deletecollection's objects by looking through the
// namespace's Workloads (resourceVersion=0 lets it use its watch cache),
// worth it only for several.
//
// Its intent is recorded first (the copy's row marked absent, as for a
// single DELETE): a batch lost to a crash, or to a cluster that does not
// answer, is made good by the job's later passes, which delete what the
// cluster still shows, one by one. A cluster that refuses the
// deletecollection (RBAC without the verb: 403; 404, 405) gets each copy's
// DELETE by name instead, from here, and no batch for an hour.
//
// Thread-safety: Add from any thread; one thread of its own sends.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gantry/common/clock.h"
#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/engine_metrics.h"
#include "gantry/kube/client_pools.h"

namespace gantry::dispatch {

struct WithdrawalOptions {
  int64_t flush_ms = 10;       // a copy waits at most this long for others of its batch
  std::size_t max_batch = 64;  // job uids in one selector (its URL stays a few KiB)
  int64_t refused_for_ms = 3600'000;  // no batch to a cluster that refused one, for this long
};

class Withdrawals {
 public:
  Withdrawals(kube::ClientPools& pools, const Clock& clock, std::string origin, EngineMetrics* metrics,
              WithdrawalOptions options = {});
  ~Withdrawals();  // Stop()s: what is still queued is dropped (the passes make it good)

  void Start();
  void Stop();

  // Queues a batchable kDelete (Action::batch_job_uid set). False when it
  // cannot go in a batch now (stopped, the cluster refused one lately): the
  // caller sends it alone.
  bool Add(const Action& action);

  // The selector of a batch, and the collection path of an object path
  // (".../workloads/NAME" -> ".../workloads"). Exposed for tests.
  static std::string Selector(const std::string& origin, int64_t epoch, const std::vector<std::string>& job_uids);
  static std::string CollectionOf(const std::string& object_path);

 private:
  // cluster, collection path, epoch
  using Key = std::tuple<std::string, std::string, int64_t>;
  void Run();
  void Send(const Key& key, const std::vector<Action>& batch);
  void SendAlone(const Action& action);

  kube::ClientPools& pools_;
  const Clock& clock_;
  const std::string origin_;
  EngineMetrics* metrics_;
  const WithdrawalOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, std::vector<Action>> pending_;  // guarded by mu_
  int64_t oldest_ms_ = 0;                       // when the oldest pending copy came; guarded by mu_
  std::map<std::string, int64_t> refused_until_;  // by cluster; guarded by mu_
  bool stopping_ = false;                       // guarded by mu_
  bool started_ = false;                        // guarded by mu_
  std::thread thread_;
};

}  // namespace gantry::dispatch
