// SpecCache: the parsed spec and placement demand of recently seen jobs, so a
// job's every dispatch pass does not parse its stored JSON again.
//
// Keyed by uid alone: a job's spec never changes once stored (a resubmission
// with another spec is refused; a purged name comes back with a new uid).
// Least recently used entries go first; Forget drops a finished job's entry.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "gantry/common/status.h"
#include "gantry/dispatch/observer.h"
#include "gantry/job/job_document.h"
#include "gantry/placement/job_demand.h"
#include "gantry/store/job_store.h"

namespace gantry::dispatch {

struct ParsedSpec {
  JobSpec spec;
  placement::JobDemand demand;  // rounds_elapsed left at 0
  JobKind kind;                 // the template's apiVersion and kind (ClusterObserver::ForJob)
};

class SpecCache {
 public:
  explicit SpecCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The job's parsed spec, from the cache or parsed now (and kept).
  // Errors: those of SpecOfRecord, not cached.
  Result<std::shared_ptr<const ParsedSpec>> Get(const JobRecord& job);
  // Keeps a spec parsed elsewhere (a new job's, as the API parsed it; it
  // must be what SpecOfRecord gives for the stored record) and returns it,
  // or the one already kept for uid.
  std::shared_ptr<const ParsedSpec> Put(const std::string& uid, JobSpec spec);
  void Forget(const std::string& uid);

  size_t size() const;
  int64_t hits() const;
  int64_t misses() const;

 private:
  using Order = std::list<std::string>;  // most recent first
  struct Entry {
    std::shared_ptr<const ParsedSpec> parsed;
    Order::iterator at;
  };

  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  Order order_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace gantry::dispatch
