// Expectations: what this engine has done to a cluster and not yet seen
// come back through its watches (the "expectations" of Kubernetes
// controllers). A pass that runs between a call's answer and its watch
// event would otherwise act again on what it sees:
//   - a create whose object is not seen yet would be sent again, a 409
//     AlreadyExists and a GET to check the object is ours: Decide() skips
//     the create of an expected object (DecideInput::expected), and the
//     watch event of its appearing wakes nobody (Engine::Observed);
//   - a delete whose object is still seen would be sent again and answered
//     404, which the engine takes as success anyway: the engine skips a
//     delete of an incarnation (k8s uid) it deleted a moment ago.
// An expectation lapses after ttl_ms, so an object that vanished, or stayed,
// without the watch telling is acted on again.
//
// A real job's create (kind kJob) not seen yet is also remembered apart,
// for run_ttl_ms and whatever the job's epoch becomes (UnseenRuns): its
// cluster's view not showing it may come from a watch gone silent, which
// is found dead only after ObserverOptions::SilentWatchFoundAfter, so until
// then the job's withdrawn row there is not confirmed gone by that view
// (Ladder::ConfirmedGone), and no run of the job starts elsewhere. A
// Workload copy's create is remembered so too (UnseenCreates): a loser's
// copy that such a view hides holds its row, and is deleted by name.
//
// Memory only: after a restart nothing is expected, and the worst case is
// the wasted calls.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gantry::dispatch {

class Expectations {
 public:
  using Key = std::pair<std::string, std::string>;  // cluster, kind

  // run_ttl_ms: how long a real job's create not seen yet is remembered
  // for UnseenRuns (0: not apart from the other expectations).
  explicit Expectations(int64_t ttl_ms, int64_t run_ttl_ms = 0) : ttl_ms_(ttl_ms), run_ttl_ms_(run_ttl_ms) {}

  // job_uid's object of kind in cluster at epoch was created at now_ms.
  void Created(const std::string& job_uid, const std::string& cluster, const std::string& kind, int64_t epoch,
               int64_t now_ms);
  // What is still expected for job_uid at epoch: not yet observed (observed
  // lists the keys seen at that epoch, which stop being expected) and younger
  // than ttl. Entries of other epochs and lapsed ones are dropped.
  std::set<Key> Pending(const std::string& job_uid, int64_t epoch, const std::set<Key>& observed, int64_t now_ms);
  // The same, dropping nothing: for a reader that may hold an older epoch
  // than the engine's (gantry explain).
  std::set<Key> Peek(const std::string& job_uid, int64_t epoch, const std::set<Key>& observed, int64_t now_ms) const;
  // The watch showed job_uid's object of kind in cluster at epoch: its
  // expectation is fulfilled and dropped. True when there was one (created
  // less than ttl ago). Dropped here, not at the next pass: should the object
  // vanish before that pass, the pass creates it again at once.
  bool Seen(const std::string& job_uid, const std::string& cluster, const std::string& kind, int64_t epoch,
            int64_t now_ms);
  void Forget(const std::string& job_uid);
  size_t jobs() const;

  // A real job's create that may have landed though its answer does not
  // say so (none came, a 5xx, a refusal of the request sent again): an
  // unseen run (UnseenRuns) for run_ttl from now_ms, not an expectation
  // (Pending): the create is sent again as any failed one.
  void MayHaveLanded(const std::string& job_uid, const std::string& cluster, int64_t epoch, int64_t now_ms);

  // A real job's create, as (cluster, epoch).
  using Run = std::pair<std::string, int64_t>;
  // The real jobs of job_uid created less than run_ttl ago, at any epoch,
  // and not seen since: neither by Seen nor in seen (every (cluster, epoch)
  // of the job's real jobs its view shows now). With settle, those in seen
  // are dropped (as Pending drops; Peek's reader passes false).
  std::set<Run> UnseenRuns(const std::string& job_uid, const std::set<Run>& seen, int64_t now_ms, bool settle);
  // The same for creates of kind (kJob: UnseenRuns; kWorkload: copies).
  std::set<Run> UnseenCreates(const std::string& job_uid, const std::string& kind, const std::set<Run>& seen,
                              int64_t now_ms, bool settle);

  // (cluster, kind) of job_uid's creates answered less than ttl ago, at any
  // epoch (the watch may just not have shown them yet), each with when it
  // stops being so. Drops nothing.
  std::map<Key, int64_t> Young(const std::string& job_uid, int64_t now_ms) const;

  // The object incarnation k8s_uid was deleted (the cluster answered) at now_ms.
  void Deleted(const std::string& k8s_uid, int64_t now_ms);
  // Whether k8s_uid was deleted less than ttl ago.
  bool RecentlyDeleted(const std::string& k8s_uid, int64_t now_ms) const;
  // Deletes remembered (lapsed ones go as new deletes come).
  size_t deletes() const;

 private:
  struct Entry {
    Key key;
    int64_t epoch = 0;
    int64_t at_ms = 0;
    bool run_only = false;  // MayHaveLanded: an unseen run, never expected
  };
  // Whether something noted at at_ms still counts at now_ms (a clock that
  // stepped back makes it lapse).
  static bool Within(int64_t at_ms, int64_t now_ms, int64_t ttl_ms) {
    return now_ms >= at_ms && now_ms - at_ms < ttl_ms;
  }
  bool Live(int64_t at_ms, int64_t now_ms) const { return Within(at_ms, now_ms, ttl_ms_); }
  // Whether e is a create remembered for UnseenCreates (a real job's or a copy's).
  bool RunEntry(const Entry& e) const;
  // Whether e is kept at all at now_ms: Live, or a run entry within run_ttl.
  bool Kept(const Entry& e, int64_t now_ms) const;
  // job_uid's entry for key, added (epoch 0) when it has none. REQUIRES: mu_ held.
  Entry& EntryFor(const std::string& job_uid, const Key& key);
  const int64_t ttl_ms_;
  const int64_t run_ttl_ms_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Entry>> by_job_;
  std::unordered_map<std::string, int64_t> deleted_;  // k8s uid -> when
  std::deque<std::pair<int64_t, std::string>> deleted_order_;  // the same, oldest first: pruned from the front
};

}  // namespace gantry::dispatch
