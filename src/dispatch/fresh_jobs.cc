#include "gantry/dispatch/fresh_jobs.h"

namespace gantry::dispatch {

bool FreshJobs::Put(JobRecord record, std::shared_ptr<JobSpec> spec) {
  if (!spec) return false;
  std::string uid = record.uid;
  return held_.Put(uid, Entry{std::move(record), std::move(spec)}, 2 * capacity_);
}

}  // namespace gantry::dispatch
