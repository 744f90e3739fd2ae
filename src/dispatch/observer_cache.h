// The observer's view of one resource in one cluster (ResourceCache) and
// its index of which views hold each job's objects (JobIndex). Internal to
// the observer (observer.cc), which guards both with its one mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "gantry/dispatch/observer.h"

namespace gantry::dispatch::observer_internal {

// One object of a view: what Decide() reads of it, and its version.
struct Entry {
  std::string job_uid;
  std::string resource_version;  // tells a relisted, unchanged object from a changed one
  std::variant<ObservedWorkload, ObservedJob> object;
};

// Whether a new version of an object changes anything Decide() acts on.
// Status churn that does not (a condition's message, a counter the worker
// bumps) updates the cache without waking the job: under load most watch
// events are such, and each wake-up is a whole pass.
bool SameForDecisions(const Entry& a, const Entry& b);
// Whether b differs from a in a real job's status summary alone (the pod
// counts `gantry status` shows): a change to record, but none to act on.
bool OnlyStatusDiffers(const Entry& a, const Entry& b);

class ResourceCache;

// Which caches hold objects of each job, so that reading a job's objects
// asks only those, not every resource of every cluster (at 100 clusters
// that walk was a pass's largest part). Guarded by the observer's mutex.
class JobIndex {
 public:
  // Keeps each job's caches in (cluster, resource) order, the order in
  // which ForJob reports them.
  void Add(const std::string& job_uid, const ResourceCache* cache);
  void Remove(const std::string& job_uid, const ResourceCache* cache);
  const std::vector<const ResourceCache*>& Of(const std::string& job_uid) const {
    static const std::vector<const ResourceCache*> kNone;
    auto it = where_.find(job_uid);
    return it == where_.end() ? kNone : it->second;
  }
  // Every job uid with an object in some view, sorted.
  std::vector<std::string> Uids() const;

 private:
  std::unordered_map<std::string, std::vector<const ResourceCache*>> where_;
};

// One resource's objects in one cluster, by job uid and by ns/name. Every
// mutation that matters to a decision adds the job uids it touched to
// *changed. The JobIndex is kept in step: it lists this cache for a job
// while the cache holds any object of it.
class ResourceCache {
 public:
  bool listed = false;
  // A watch or relist failed since the last list: the view may miss what
  // changed meanwhile (an object created then shows as absent). Set through
  // SetBehind, which keeps behind_since_ms.
  bool behind = false;
  int64_t behind_since_ms = 0;  // ObserverOptions::clock; 0 while not behind
  int64_t listed_ms = 0;        // when its latest list succeeded (Clock::MonotonicMillis)
  // Its kind is not served there (404: counted as empty) or gantry may not
  // list it (403: refused); asked again now and then (observer_watch.cc).
  bool unserved = false;
  // Why the last (re)list failed, when the cluster refused it (403), or
  // why the lists keep failing (see ClusterObserver::WatchRefusals, KindRefusals):
  // gantry may not see this resource there. "" once a list succeeds.
  std::string refused;

  // Marks the view behind (since now_ms, unless it was already) or current.
  void SetBehind(bool b, int64_t now_ms) {
    if (b && !behind) behind_since_ms = now_ms;
    if (!b) behind_since_ms = 0;
    behind = b;
  }

  void Attach(JobIndex* index, const std::string* cluster, std::size_t resource) {
    index_ = index;
    cluster_ = cluster;
    resource_ = resource;
  }
  const std::string& cluster() const { return *cluster_; }
  std::size_t resource() const { return resource_; }

  // *status_only (when given) is set true when e replaced an object of the
  // same job that differs from it in its status summary alone.
  void Put(const std::string& key, Entry e, std::set<std::string>* changed, bool* status_only = nullptr);

  void Erase(const std::string& key, std::set<std::string>* changed);

  void Replace(std::map<std::string, Entry> fresh, std::set<std::string>* changed);

  // Takes every job of this cache out of the index (the cluster is retired).
  void Detach();
  std::size_t size() const { return uid_of_.size(); }

  // fn(uid) once for each job with an object here, in order.
  template <class Fn>
  void ForEachUid(Fn&& fn) const {
    for (auto it = by_uid_.begin(); it != by_uid_.end();) {
      fn(it->first.first);
      it = by_uid_.lower_bound({it->first.first + '\0', ""});  // past this job's objects
    }
  }

  template <class Fn>
  void ForJob(const std::string& job_uid, Fn&& fn) const {
    for (auto it = by_uid_.lower_bound({job_uid, ""});
         it != by_uid_.end() && it->first.first == job_uid; ++it) {
      fn(it->second);
    }
  }

 private:
  // Drops this cache from job_uid's index entry when it holds no more of it.
  void Unindex(const std::string& job_uid);

  JobIndex* index_ = nullptr;
  const std::string* cluster_ = nullptr;
  std::size_t resource_ = 0;  // its position among the observer's watched resources
  std::map<std::pair<std::string, std::string>, Entry> by_uid_;  // (job uid, ns/name)
  std::map<std::string, std::string> uid_of_;                    // ns/name -> job uid
};

// The last state of the finished Workload copies that their clusters
// deleted (a DELETED watch event's object), by job: Kueue's
// objectRetentionPolicies, or a job kind's own ttlSecondsAfterFinished
// taking its Workload along, may delete both the Workload and the job
// before a pass reads them, and for a kind gantry has no adapter for only
// the Workload told the result. Memory only, bounded by age and count: after a
// restart, or a relist that missed the event, the job is judged without it,
// as before. Only a Workload that Kueue finished as its job ended
// (Succeeded or Failed) is kept: any other reason (OwnerNotFound: its job
// deleted) tells nothing of how the job ran. A pass reads it within
// moments of the event; the time kept covers a backlog. Every finished job
// gantry withdraws passes through too, hence the count bound.
// Guarded by the observer's mutex.
class FinishedGone {
 public:
  static constexpr int64_t kKeepMs = 5 * 60 * 1000;
  static constexpr std::size_t kMaxKept = 50'000;

  // Keeps w if it tells a result (see above); what it keeps is trimmed.
  void Remember(const std::string& cluster, ObservedWorkload w, int64_t now_ms);
  // cluster -> the job's finished Workloads deleted there (the latest last).
  void ForJob(const std::string& job_uid, std::map<std::string, std::vector<ObservedWorkload>>* out) const;
  std::size_t size() const { return order_.size(); }

 private:
  struct Kept {
    uint64_t seq = 0;
    std::string cluster;
    ObservedWorkload workload;
  };
  struct Added {
    int64_t at_ms = 0;
    uint64_t seq = 0;
    std::string job_uid;
  };
  // Drops what was added at or before cutoff_ms.
  void DropUpTo(int64_t cutoff_ms);

  uint64_t next_seq_ = 1;
  std::unordered_map<std::string, std::vector<Kept>> by_job_;
  std::deque<Added> order_;  // oldest first
};

}  // namespace gantry::dispatch::observer_internal
