// Engine::ExpireRecords: a finished job's record (its row and events) is
// deleted once it has been finished for jobRecordRetentionSeconds and every
// object gantry made for it is seen deleted, so the database does not grow
// with every job ever run. Each batch is one commit of at most kBatch jobs,
// so a backlog (the setting just turned on) never holds the store's writer
// for long; the round goes on while whole batches come back. A purged uid
// is kept (purged_jobs), so an object of it found later is still gantry's
// to delete.
#include <spdlog/spdlog.h>

#include <future>

#include "gantry/dispatch/engine.h"

namespace gantry::dispatch {

void Engine::ExpireRecords() {
  constexpr int kBatch = 500;
  const int64_t retention_ms = options_.job_record_retention_ms;
  if (retention_ms <= 0) return;
  const int64_t cutoff = clock_.NowMillis() - retention_ms;
  int64_t total = 0;
  while (!stopping_) {
    std::promise<Result<int>> done;
    store_.ExpireFinished(cutoff, kBatch, [&done](Result<int> r) { done.set_value(std::move(r)); });
    Result<int> expired = done.get_future().get();
    if (!expired.ok()) {
      spdlog::warn("dispatch: deleting the records of jobs finished more than {} s ago failed "
                   "(tried again in {} s): {}",
                   retention_ms / 1000, options_.gc_interval_ms / 1000, expired.status().message());
      break;
    }
    total += *expired;
    if (metrics_ && *expired > 0) metrics_->RecordsExpired(*expired);
    if (*expired < kBatch) break;
  }
  if (total > 0) {
    spdlog::info("dispatch: deleted the records of {} job(s) finished more than {} s ago (jobRecordRetentionSeconds)",
                 total, retention_ms / 1000);
  }
}

}  // namespace gantry::dispatch
