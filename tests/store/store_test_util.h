// Helpers for the store tests: job records, and blocking wrappers around the
// asynchronous write methods (each waits for its callback with a deadline).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "gantry/common/clock.h"
#include "gantry/store/sqlite_store.h"

namespace gantry::testing {

JobRecord MakeJob(const std::string& ns, const std::string& name, const std::string& spec = "{}",
                  const std::string& queue = "default");

// Opens a store on dir/name with a fake clock; REQUIREs success.
std::unique_ptr<SqliteStore> OpenStore(const std::string& path, const Clock* clock = nullptr);

// Each runs one write and waits (at most 10 s) for its callback. A callback
// that never arrives is reported as Code::kDeadlineExceeded.
Result<SubmitResult> SubmitSync(SqliteStore& store, JobRecord job);
Result<JobRecord> CancelSync(SqliteStore& store, const std::string& ns, const std::string& name);
Result<std::string> PurgeSync(SqliteStore& store, const std::string& ns, const std::string& name);
Result<ExpiredJobs> ExpireSync(SqliteStore& store, int64_t finished_before_ms, int limit,
                               int64_t finished_from_ms = 0);
Result<JobRecord> TransitionSync(SqliteStore& store, const std::string& uid, JobPhase from,
                                 JobPhase to, std::optional<JobEvent> event = std::nullopt);

Result<JobRecord> ApplySync(SqliteStore& store, DispatchUpdate update);

// A remote intent in namespace team-a.
RemoteIntent MakeIntent(const std::string& cluster, const std::string& kind, int64_t epoch, bool present,
                        const std::string& name = "train-0123abcd");

// Moves a job to phase via Transition from its current phase; REQUIREs success.
void ForcePhase(SqliteStore& store, const std::string& uid, JobPhase phase);

}  // namespace gantry::testing
