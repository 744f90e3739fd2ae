// Scans over the whole store, a page at a time. Each page is one short read
// (the reader's lock is held for one page, not the scan), and every matching
// row is handed out however many there are: the scans that wake jobs after a
// restart or a cluster's return must not leave any behind.
//
// Rows that change while a scan runs may be seen or missed, as with any
// read in pages; the callers look again when such a job next changes.
//
// Thread-safety: as the JobStore's reads.
#pragma once

#include <functional>
#include <string>

#include "gantry/common/status.h"
#include "gantry/store/job_store.h"

namespace gantry {

// Rows per page: about 0.5 MB of uids, a few milliseconds of reading.
inline constexpr int kScanPage = 10'000;

// Every job in phase, by seq. Returns the first read error.
Status ForEachJobInPhase(JobStore& store, JobPhase phase, const std::function<void(const JobKey&)>& fn,
                         int page = kScanPage);

// Every job with intents (in cluster, when cluster is set), by uid.
Status ForEachUidWithIntents(JobStore& store, const std::string* cluster,
                             const std::function<void(const std::string&)>& fn, int page = kScanPage);

}  // namespace gantry
