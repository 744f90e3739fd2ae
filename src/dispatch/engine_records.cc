// Engine::ExpireRecords: a finished job's record (its row and events) is
// deleted once it has been finished for jobRecordRetentionSeconds and every
// object gantry made for it is seen deleted, so the database does not grow
// with every job ever run. Each batch of at most kBatch jobs is one write
// (atomic; it may share its commit with others), so a backlog (the setting
// just turned on, or lowered) never holds the store's writer for long, and
// a round takes at most kBatchesPerRound of them: a backlog of a million
// records is gone in under two hours at the default round of a minute, the
// writer free for other writes in between. Each batch goes on from the
// last one's finish time, so the jobs kept before it (their objects not yet
// seen deleted, in a cluster out of reach say) are read once a round, not
// once a batch. A purged uid is kept (purged_jobs), so an object of it
// found later is still gantry's to delete.
#include <spdlog/spdlog.h>

#include <future>

#include "gantry/dispatch/engine.h"

namespace gantry::dispatch {

void Engine::ExpireRecords() {
  constexpr int kBatch = 500;
  constexpr int kBatchesPerRound = 20;
  const int64_t retention_ms = options_.job_record_retention_ms;
  if (retention_ms <= 0) return;
  const int64_t cutoff = clock_.NowMillis() - retention_ms;
  int64_t from_ms = 0;
  int64_t total = 0;
  for (int batches = 0; batches < kBatchesPerRound && !stopping_; ++batches) {
    std::promise<Result<ExpiredJobs>> done;
    store_.ExpireFinished(cutoff, from_ms, kBatch, [&done](Result<ExpiredJobs> r) { done.set_value(std::move(r)); });
    Result<ExpiredJobs> expired = done.get_future().get();
    if (!expired.ok()) {
      spdlog::warn("dispatch: deleting the records of jobs finished more than {} s ago failed "
                   "(tried again in {} s): {}",
                   retention_ms / 1000, options_.gc_interval_ms / 1000, expired.status().message());
      break;
    }
    total += expired->count;
    if (metrics_ && expired->count > 0) metrics_->RecordsExpired(expired->count);
    if (expired->count < kBatch) break;
    from_ms = expired->last_finished_ms;
  }
  if (total > 0) {
    spdlog::info("dispatch: deleted the records of {} job(s) finished more than {} s ago (jobRecordRetentionSeconds)",
                 total, retention_ms / 1000);
  }
}

}  // namespace gantry::dispatch
