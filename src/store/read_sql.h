// The SQL text of the store's paged reads (List and the scans), apart from
// the code that binds and runs it, so that tests can EXPLAIN the very
// statements the store prepares. Private to the store.
//
// tests/store/query_plan_test.cc pins the index each one goes by: a change
// of schema or SQL that makes a page read more than its own rows fails there.
#pragma once

#include <string>
#include <vector>

#include "gantry/store/job_store.h"

namespace gantry {

// List's SELECT of kJobColumns: ?1 is after_seq, ?2 the row limit, and the
// text filters take ?3 onwards, in the order appended to *params. The text
// depends only on which filters are set (and the IN list's length), so the
// connection's statement cache keeps it.
std::string ListSql(const ListQuery& query, std::vector<std::string>* params);

// ?1 phase, ?2 after_seq, ?3 limit.
inline constexpr char kJobsInPhaseSql[] =
    "SELECT uid, priority, seq FROM jobs WHERE phase = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3";

// Both intent scans go by job_uid from after_uid, so the pages of one scan
// read each row they need once between them. ?1 after_uid, ?2 limit.
inline constexpr char kUidsWithIntentsSql[] =
    "SELECT DISTINCT job_uid FROM remote_intents WHERE job_uid > ?1 ORDER BY job_uid LIMIT ?2";

// ?1 after_uid, ?2 cluster, ?3 limit.
inline constexpr char kUidsWithIntentsInSql[] =
    "SELECT DISTINCT job_uid FROM remote_intents WHERE job_uid > ?1 AND cluster = ?2 "
    "ORDER BY job_uid LIMIT ?3";

// ExpireFinished's batch: finished jobs oldest first by jobs_by_finished
// (015), none with an intent left. finished_ms is set only by the write
// that makes a phase final (006); the phase is checked as well, and the +
// keeps SQLite from reading every finished job by jobs_by_phase and sorting
// them instead. ?1 finished before, ?2 limit, ?3 finished at or after (the
// last batch's last: the jobs kept before it, their objects not yet seen
// deleted, are not read again by every batch).
inline constexpr char kExpireFinishedSql[] =
    "SELECT seq, uid, finished_ms FROM jobs WHERE finished_ms > 0 AND finished_ms >= ?3 AND finished_ms < ?1 "
    "AND +phase IN ('Succeeded', 'Failed', 'Cancelled', 'Lost') "
    "AND NOT EXISTS (SELECT 1 FROM remote_intents WHERE job_uid = jobs.uid) ORDER BY finished_ms LIMIT ?2";

}  // namespace gantry
