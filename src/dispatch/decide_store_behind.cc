// Step 0: a store behind the clusters. Every lease and every
// nomination is durable before the remote action it allows (Engine::Pass),
// so in the clusters a job's run is never of an epoch the store has not
// reached, nor leased where the store has no lease: unless the store went
// back in time. An operator restored the database from a backup (or the
// disk under it from a snapshot), and the runs of the history since are
// still going on. Fencing would take each for a stray (no lease held, or
// outside the stored owner) and delete it, and the job would be dispatched
// again: run twice, an at-most-once job too, or a succeeded one again.
//
// Instead the newest such run is adopted: the job takes, in one guarded
// write, the lease it had in that history (owner, epoch, its objects' rows),
// with a warning event, and the ladder goes on from there as for any leased
// job (a run that ended there finishes the job as it ended; the older
// epochs' objects are fenced). Only a run not being deleted: one being
// deleted was given up in that history (a cancel, a move), and the next
// nomination's epoch is past it (NominationEpoch), so the name it holds is
// not taken for the new copy's, and the earlier-run gate waits for it.
#include <fmt/format.h>

#include "ladder.h"

namespace gantry::dispatch::ladder {

// Before step 0 and every step that reads what is absent: just after the
// daemon's start, the store may be behind the clusters, and the run of a
// history it lost may be in a cluster whose objects gantry has not listed
// yet. Decided meanwhile, the job could be leased or nominated elsewhere,
// or its stored owner's run taken for vanished (an at-most-once job
// failed, another dispatched again), beside that run. So nothing is
// decided until every cluster gantry can reach and list is listed, whatever
// its probe said (a slow cluster's probe times out while its lists are on
// their way); for start_listing_ms at most: a cluster cut off is waited for
// that long after a start, and its runs are seen only once it answers.
std::optional<Plan> Ladder::AwaitFirstListing() const {
  Plan wait;
  wait.waiting_for = UnlistedAtStart(in_);
  if (wait.waiting_for.empty()) return std::nullopt;
  wait.step = "start-listing";
  wait.requeue_ms = std::min(opt_.retry_ms, opt_.start_listing_ms - in_.since_start_ms);
  return wait;
}

std::optional<Plan> Ladder::StoreBehind() const {
  const bool leased = job_.phase == JobPhase::kAdmitted || job_.phase == JobPhase::kRunning;
  const bool unleased = job_.phase == JobPhase::kQueued || job_.phase == JobPhase::kNominating ||
                        job_.phase == JobPhase::kUnschedulable;
  if (!leased && !unleased) return std::nullopt;
  const ObservedJob* run = nullptr;
  std::string where;
  for (const auto& [cluster, o] : in_.observed) {
    // Listed, whatever its probe says: taking the lease sends nothing
    // there, and an owner out of reach is waited for as any is (step 10).
    if (!in_.synced->count(cluster) || !in_.clusters->count(cluster)) continue;
    for (const ObservedJob& j : o.jobs) {
      // Newer than the store's epoch; or, while Nominating, of its own
      // epoch: a real job exists only after its lease was written. (A
      // Queued or Unschedulable job's own epoch is its last dispatch's,
      // given up: its run is a leftover.) The name last: at every pass, and
      // almost never behind.
      const bool behind =
          j.epoch > job_.epoch || (j.epoch == job_.epoch && j.epoch > 0 && job_.phase == JobPhase::kNominating);
      if (!behind || j.deleting || (run && j.epoch <= run->epoch) || !OwnRun(j)) continue;
      run = &j;
      where = cluster;
    }
  }
  if (!run) return std::nullopt;
  const std::string msg = fmt::format(
      "the store did not know of the job's run in {} at epoch {} (it had the job {} at epoch {}{}): the database was "
      "restored from an older copy (or lost what it had written), or that cluster was not listed when the job was "
      "dispatched again; that run is taken as the job's lease, and the job is not run again from here",
      where, run->epoch, JobPhaseName(job_.phase), job_.epoch,
      job_.cluster.empty() ? "" : fmt::format(", leased to {}", job_.cluster));
  Plan plan;
  plan.step = "store-behind";
  DispatchUpdate u = Guarded(job_);
  u.phase = JobPhase::kAdmitted;  // step 13 reads Running from the view, as after any lease
  u.epoch = run->epoch;
  u.cluster = where;
  u.lease_ms = in_.now_ms;
  u.message = msg;
  u.conditions_json = "[]";
  MarkAllAbsent(u, {{where, kWorkload}, {where, kJob}});
  // The rows of its two objects there (both carry the job's remote name).
  for (const char* kind : {kWorkload, kJob}) {
    RemoteIntent i;
    i.cluster = where;
    i.kind = kind;
    i.ns = run->ns;
    i.name = run->name;
    i.epoch = run->epoch;
    // The run is there: an at-most-once job's is never created again.
    if (std::string_view(kind) == kJob) i.created_ms = in_.now_ms;
    u.upsert_intents.push_back(std::move(i));
  }
  u.events.push_back(Event("StoreBehind", msg, where, "Warning"));
  plan.write = std::move(u);
  plan.requeue_ms = 0;
  return plan;
}

// The epoch of the job's next nomination: past the stored one, and past
// every epoch its objects in the clusters carry, so that a new copy never
// shares an epoch (and so a name, which holds none) with an object of a
// history the store does not know (a copy of a restored store's lost
// dispatch, an edited gantry.dev/epoch): the engine takes a create's
// AlreadyExists on an object of the job's epoch for its own create.
int64_t Ladder::NominationEpoch() const {
  int64_t epoch = job_.epoch + 1;
  for (const auto& [cluster, o] : in_.observed) {
    for (const ObservedWorkload& w : o.workloads) epoch = std::max(epoch, w.epoch + 1);
    for (const ObservedJob& j : o.jobs) epoch = std::max(epoch, j.epoch + 1);
  }
  return epoch;
}

}  // namespace gantry::dispatch::ladder

namespace gantry::dispatch {

std::vector<std::string> UnlistedAtStart(const DecideInput& in) {
  std::vector<std::string> waited;
  if (in.since_start_ms >= in.options.start_listing_ms) return waited;
  for (const auto& [name, f] : *in.clusters) {
    const bool never_listed = !f.unusable.empty() || !f.watch_refused.empty() ||
                              (!in.resource.empty() && f.kind_refused.count(in.resource));
    if (!never_listed && !in.synced->count(name)) waited.push_back(name);
  }
  return waited;
}

}  // namespace gantry::dispatch
