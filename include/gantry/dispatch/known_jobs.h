// KnownJobs: for each job in flight, the record and remote intents as the
// engine's last pass left them in the store, so that the next pass over the
// job starts from them instead of reading both back (two reads per pass on
// the one reader connection were a tenth of the engine's CPU per job).
//
// Why a held entry cannot mislead a pass: the job's row and intents change
// only through engine passes (one at a time per job, and each pass takes
// the entry and puts back what it left), except for a cancel or a purge
// through the API. A cancel wakes the job, and the engine Invalidate()s the
// entry on every such wake before it queues the job: a pass already in hand
// cannot put back the record it read before the cancel, and the next pass
// reads the store. A purged job's next write finds no row and the engine
// forgets it (a pass without a write may put it back once more, harmlessly:
// a purged job is finished). Every write is a compare-and-set on phase,
// epoch and owner as well, and a refused one leaves no entry.
//
// Bounded: beyond capacity, Put keeps nothing and those jobs are read from
// the store.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gantry/dispatch/held_entries.h"

#include "gantry/store/job_store.h"

namespace gantry::dispatch {

class KnownJobs {
 public:
  struct Entry {
    JobRecord record;
    std::vector<RemoteIntent> intents;  // ordered by (cluster, kind), as the store lists them
  };

  explicit KnownJobs(size_t capacity) : capacity_(capacity) {}

  // Keeps (or replaces) the job's entry; false (nothing kept) when full.
  bool Put(Entry entry) {
    std::string uid = entry.record.uid;
    return held_.Put(uid, std::move(entry), capacity_);
  }
  // The job's entry, removed; nullopt when none is held.
  std::optional<Entry> Take(const std::string& uid) { return held_.Take(uid); }
  void Drop(const std::string& uid) { held_.Drop(uid); }
  // The job changed outside the passes (see HeldEntries::Invalidate).
  void Invalidate(const std::string& uid) { held_.Invalidate(uid); }
  size_t size() const { return held_.size(); }

 private:
  const size_t capacity_;
  HeldEntries<Entry> held_;
};

// The intents a successful ApplyDispatch of u leaves, given the intents
// before it: u's upserts replace or add rows (stamped updated_ms), its drops
// remove them.
std::vector<RemoteIntent> IntentsAfter(std::vector<RemoteIntent> before, const DispatchUpdate& u,
                                       int64_t updated_ms);

}  // namespace gantry::dispatch
