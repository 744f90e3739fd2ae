// Mapping between the jobs/job_events tables and JobRecord/JobEvent, shared by
// the store's read and write paths. Private to the store.
//
// Reading never trusts stored data: an unknown phase is Code::kCorruption
// naming the job, and NULLs read as empty values.
#pragma once

#include <string>

#include "gantry/common/status.h"
#include "gantry/store/job_store.h"
#include "gantry/store/sqlite_connection.h"

namespace gantry {

// The job columns every job SELECT returns, in the order ReadJob expects.
inline constexpr const char kJobColumns[] =
    "seq, uid, namespace, name, queue, priority, spec_json, labels_json, phase, cluster, epoch, "
    "conditions_json, message, created_ms, updated_ms, nominated_ms, lease_ms, remote_status, finished_ms";

// Reads the current row of a statement that selected kJobColumns first.
Result<JobRecord> ReadJob(const Statement& stmt);
Result<JobEvent> ReadEvent(const Statement& stmt);

// Single-row lookups. NotFound names the job.
Result<JobRecord> SelectJobByName(SqliteConnection& conn, const std::string& ns,
                                  const std::string& name);
Result<JobRecord> SelectJobByUid(SqliteConnection& conn, const std::string& uid);

// jobs.finished_ms for a write that moves a job to new_phase at now_ms:
// the write that makes the phase final sets it, and a job that is not
// finished has none (schema 006). Every write that changes a phase uses it.
inline int64_t FinishedMsFor(JobPhase new_phase, int64_t now_ms) { return IsFinal(new_phase) ? now_ms : 0; }

Status InsertJob(SqliteConnection& conn, const JobRecord& job, int64_t* seq);
// A job keeps at most this many events: its first ones (how it began) and
// its latest ones; those between are deleted. A job whose story repeats
// without end (resubmitted in a loop while Unschedulable, requeued again and
// again) must not grow the database without bound.
inline constexpr int kEventsKeptFirst = 20;
inline constexpr int kEventsKeptLast = 480;

// job_seq is the job's jobs.seq (callers hold the row already). Trims the
// job's events to the cap above, so a job holds at most kEventsKeptFirst +
// kEventsKeptLast.
Status InsertEvent(SqliteConnection& conn, const JobEvent& event, int64_t job_seq);
// Deletes the job's events between its first kEventsKeptFirst and its latest
// kEventsKeptLast.
Status TrimEvents(SqliteConnection& conn, int64_t job_seq);

}  // namespace gantry
