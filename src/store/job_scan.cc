#include "gantry/store/job_scan.h"

namespace gantry {

// A scan ends at the first empty page, not the first short one: a store may
// return fewer rows than asked (SqliteStore caps a page).

Status ForEachJobInPhase(JobStore& store, JobPhase phase, const std::function<void(const JobKey&)>& fn, int page) {
  int64_t after = 0;
  while (true) {
    Result<std::vector<JobKey>> keys = store.JobsInPhase(phase, after, page);
    if (!keys.ok()) return keys.status();
    if (keys->empty()) return Status::Ok();
    for (const JobKey& key : *keys) fn(key);
    after = keys->back().seq;
  }
}

Status ForEachUidWithIntents(JobStore& store, const std::string* cluster,
                             const std::function<void(const std::string&)>& fn, int page) {
  std::string after;
  while (true) {
    Result<std::vector<std::string>> uids =
        cluster ? store.UidsWithIntentsIn(*cluster, after, page) : store.UidsWithIntents(after, page);
    if (!uids.ok()) return uids.status();
    if (uids->empty()) return Status::Ok();
    for (const std::string& uid : *uids) fn(uid);
    after = uids->back();
  }
}

}  // namespace gantry
