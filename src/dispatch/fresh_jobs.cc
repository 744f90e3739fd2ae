#include "gantry/dispatch/fresh_jobs.h"

namespace gantry::dispatch {

bool FreshJobs::Put(JobRecord record, std::shared_ptr<JobSpec> spec) {
  if (!spec) return false;
  std::lock_guard lock(mu_);
  if (entries_.size() >= 2 * capacity_) return false;
  std::string uid = record.uid;
  entries_.insert_or_assign(std::move(uid), Entry{std::move(record), std::move(spec)});
  return true;
}

std::optional<FreshJobs::Entry> FreshJobs::Take(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(uid);
  if (it == entries_.end()) return std::nullopt;
  std::optional<Entry> entry(std::move(it->second));
  entries_.erase(it);
  return entry;
}

void FreshJobs::Drop(const std::string& uid) {
  std::lock_guard lock(mu_);
  entries_.erase(uid);
}

bool FreshJobs::full() const {
  std::lock_guard lock(mu_);
  return entries_.size() >= capacity_;
}

size_t FreshJobs::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace gantry::dispatch
