// ClientPool: a bounded set of KubeClients (keep-alive connections) for one
// cluster. At most `size` requests run against the cluster at once; a caller
// that finds every connection busy waits up to `acquire_timeout`, then gets
// kUnavailable instead of queueing without bound. That is what keeps one
// slow cluster from tying up every thread that talks to clusters.
//
// A cluster whose requests go unanswered (an API server that answers its
// probes and watches but whose writes hang: etcd without quorum, a webhook
// that times out) would still hold every caller that sends it one until the
// request's deadline, and one pass after another would wait there while
// every other cluster answers in a millisecond. So a caller may stop
// waiting for an answer and have it read later (Lease::Late); while such a
// request is out, a caller finding every connection busy is refused at
// once rather than waiting for one. Once a late request has been out
// stall_after, or one got no answer within its deadline, the pool is
// stalling (stalled_for_ms): Acquire hands out one connection at a time.
// It stalls while such a late request is out; after a request that got no
// answer, until a write of the same method is answered neither 5xx nor 429
// (a webhook may hang creates while patches answer; an answer to a read
// does not count: reads may answer from a cache while writes hang; nor
// does a 5xx, which is how etcd without quorum answers at last; a read
// that got none is ended by any write answered), or
// stall_retry passes with nothing out and no new sign of the stall: a
// cluster nobody sends to must not stay shunned for ever.
//
// A pool lives in a shared_ptr (Create), and each Lease holds one: the
// engine drops a cluster's pool when a reload changes its connection
// (ClientPools::Retain) while passes may still hold leases, and a lease must
// not return its client to a destroyed pool.
//
// Thread-safety: Acquire from any thread; a Lease is used by one thread and
// returns its client to the pool when destroyed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "gantry/kube/concurrency_limit.h"
#include "gantry/kube/kube_client.h"

namespace gantry::kube {

struct ClientPoolOptions {
  int size = 8;  // connections (and concurrent requests) per cluster, at most
  // At least this many may be in flight; between min_size and size, the
  // pool follows the cluster's round trips (ConcurrencyLimit). 0 (or size):
  // always size.
  int min_size = 0;
  std::chrono::milliseconds acquire_timeout{2'000};
  // Twice the API server's own latency target for a write (p99 1 s): a
  // healthy cluster under load is not taken for a stalled one.
  std::chrono::milliseconds stall_after{2'000};
  std::chrono::milliseconds stall_retry{30'000};
  // An idle connection unused this long is closed (as Go's HTTP transport,
  // kubectl's, closes one after 90 s): the pool keeps a stack and takes
  // from its top, so those at its bottom would stay open for good, most
  // of them closed long since by the server (CLOSE-WAIT).
  std::chrono::milliseconds idle_close{90'000};
  KubeClientOptions client;

  // Whether the limit follows the round trips (min_size below size).
  bool adaptive() const { return min_size > 0 && min_size < size; }
};

class ClientPool : public std::enable_shared_from_this<ClientPool> {
  struct Passkey {};  // Create only

 public:
  class Lease {
   public:
    Lease(std::shared_ptr<ClientPool> pool, std::unique_ptr<KubeClient> client, int in_flight = 0)
        : pool_(std::move(pool)), client_(std::move(client)), in_flight_(in_flight) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    // Its caller has waited long for the answer, and reads it later.
    void Late() {
      if (pool_ && late_at_ms_ < 0) late_at_ms_ = pool_->NoteLate();
    }
    KubeClient& operator*() { return *client_; }
    KubeClient* operator->() { return client_.get(); }

   private:
    std::shared_ptr<ClientPool> pool_;  // kept alive until the client is back
    std::unique_ptr<KubeClient> client_;
    int in_flight_;  // the pool's requests out when this one was taken, itself included
    int64_t late_at_ms_ = -1;  // when Late was called (-1: it was not)
  };

  static std::shared_ptr<ClientPool> Create(inventory::ClusterCredentials creds, ClientPoolOptions options) {
    return std::make_shared<ClientPool>(Passkey{}, std::move(creds), options);
  }
  ClientPool(Passkey, inventory::ClusterCredentials creds, ClientPoolOptions options);

  // A client for one caller. kUnavailable when all are busy past the timeout.
  Result<Lease> Acquire();
  int in_use() const;
  // How many may be in flight now (size, or the adapted limit).
  int limit() const;
  // What its clients are made from (ClientPools compares it after a reload).
  const inventory::ClusterCredentials& credentials() const { return creds_; }
  // For the engine's count of passes at work (Engine::SetPassAllowance);
  // both false for a pool that does not adapt.
  struct Load {
    bool answered = false;   // an answer was timed within the limit's window before now
    bool congested = false;  // its recent round trips are beyond twice its base
  };
  Load load() const;
  // For how long its requests have gone unanswered: -1 while they are
  // answered.
  int64_t stalled_for_ms() const;
  // Closes the idle connections unused for options.idle_close (Acquire
  // and Return do too, as they go); returns how many.
  int CloseIdle();

 private:
  void Return(std::unique_ptr<KubeClient> client, int in_flight, int64_t late_at_ms);
  int64_t NoteLate();  // returns the time it noted
  int LimitLocked() const { return adaptive_ ? adaptive_->limit() : options_.size; }

  inventory::ClusterCredentials creds_;
  ClientPoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Idle {
    std::unique_ptr<KubeClient> client;
    int64_t since_ms = 0;  // SteadyMillis when it came back
  };
  // The idle connections, the last returned at the back (taken first).
  std::deque<Idle> idle_;
  // Moves the connections idle since before now - idle_close out of idle_
  // into *out (closed by the caller, outside mu_). REQUIRES: mu_ held.
  void TakeExpiredLocked(int64_t now, std::vector<std::unique_ptr<KubeClient>>* out);
  int in_use_ = 0;
  std::optional<ConcurrencyLimit> adaptive_;  // set when options_.adaptive()
  // Since when requests of each method went unanswered (a timeout; none
  // since a write of that method was answered; any write answered ends a
  // GET's), and the last such sign. By method, so that a cluster whose
  // creates hang while its patches answer (a webhook on create) stalls for
  // as long as they hang, not from the last patch answered. Mutable: a
  // look at the stall (stalled_for_ms) may find it expired.
  mutable std::map<std::string, int64_t> unanswered_since_ms_;
  int64_t stall_seen_ms_ = -1;
  std::multiset<int64_t> late_out_;  // when each late request still out was given up on
  // Since when the pool stalls (-1: it does not), ending an expired one.
  int64_t StalledSinceLocked(int64_t now_ms) const;
};

}  // namespace gantry::kube
