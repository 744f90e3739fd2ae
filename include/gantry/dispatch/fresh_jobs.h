// FreshJobs: jobs the API has just created, each held until the engine's
// first pass over it takes it. That pass then starts from the record as
// committed and the spec as parsed, instead of reading the row back and
// parsing its JSON again; under a burst of submissions those two were most
// of the engine's CPU per new job.
//
// Why a held record cannot mislead a pass: it is stale only if the job
// changed in the store after it was created, outside the engine's own
// passes. The only such change is a cancel through the API, and the API
// wakes the job after every cancel; the engine Drop()s the entry on every
// wake before it queues the job, so the pass reads the store instead. (A
// pass's own write is a compare-and-set on phase and epoch as well.)
//
// Bounded: once capacity entries are held the map is full() and the API
// stops handing specs over (their first pass reads the store like any
// other). Specs already on their way when it filled are still kept, up to
// twice the capacity: refused, each would be freed on the store's writer
// thread.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "gantry/dispatch/held_entries.h"

#include "gantry/job/job_document.h"
#include "gantry/store/job_store.h"

namespace gantry::dispatch {

class FreshJobs {
 public:
  struct Entry {
    JobRecord record;
    std::shared_ptr<JobSpec> spec;
  };

  explicit FreshJobs(size_t capacity) : capacity_(capacity) {}

  // Keeps the job until Take or Drop; false (nothing kept) beyond twice the
  // capacity.
  bool Put(JobRecord record, std::shared_ptr<JobSpec> spec);
  // The job's entry, removed; nullopt when none is held.
  std::optional<Entry> Take(const std::string& uid) { return held_.Take(uid); }
  void Drop(const std::string& uid) { held_.Drop(uid); }
  size_t size() const { return held_.size(); }
  bool full() const { return held_.size() >= capacity_; }

 private:
  const size_t capacity_;
  HeldEntries<Entry> held_;
};

}  // namespace gantry::dispatch
