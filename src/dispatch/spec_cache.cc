#include "gantry/dispatch/spec_cache.h"

#include "gantry/common/json_path.h"
#include "gantry/dispatch/demand.h"

namespace gantry::dispatch {

Result<std::shared_ptr<const ParsedSpec>> SpecCache::Get(const JobRecord& job) {
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(job.uid); it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.at);
      ++hits_;
      return it->second.parsed;
    }
    ++misses_;
  }
  // Parsed outside the lock: two passes of different jobs must not wait on
  // each other's parsing (two of one job never run at once).
  Result<JobSpec> spec = SpecOfRecord(job);
  if (!spec.ok()) return spec.status();
  return Put(job.uid, std::move(*spec));
}

std::shared_ptr<const ParsedSpec> SpecCache::Put(const std::string& uid, JobSpec spec) {
  auto parsed = std::make_shared<ParsedSpec>();
  parsed->demand = DemandFromSpec(spec);
  parsed->kind = {JsonStringAt(spec.template_object, {"apiVersion"}), JsonStringAt(spec.template_object, {"kind"})};
  parsed->spec = std::move(spec);
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(uid); it != entries_.end()) return it->second.parsed;
  order_.push_front(uid);
  entries_.emplace(uid, Entry{parsed, order_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(order_.back());
    order_.pop_back();
  }
  return parsed;
}

void SpecCache::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(uid);
  if (it == entries_.end()) return;
  order_.erase(it->second.at);
  entries_.erase(it);
}

size_t SpecCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

int64_t SpecCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

int64_t SpecCache::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

}  // namespace gantry::dispatch
