#include "gantry/dispatch/known_jobs.h"

#include <algorithm>
#include <tuple>

namespace gantry::dispatch {

bool KnownJobs::Put(Entry entry) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(entry.record.uid);
  if (it != entries_.end()) {
    it->second = std::move(entry);
    return true;
  }
  if (entries_.size() >= capacity_) return false;
  std::string uid = entry.record.uid;
  entries_.emplace(std::move(uid), std::move(entry));
  return true;
}

std::optional<KnownJobs::Entry> KnownJobs::Take(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(uid);
  if (it == entries_.end()) return std::nullopt;
  std::optional<Entry> entry(std::move(it->second));
  entries_.erase(it);
  return entry;
}

void KnownJobs::Drop(const std::string& uid) {
  std::lock_guard lock(mu_);
  entries_.erase(uid);
}

size_t KnownJobs::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::vector<RemoteIntent> IntentsAfter(std::vector<RemoteIntent> before, const DispatchUpdate& u,
                                       int64_t updated_ms) {
  auto same_key = [](const RemoteIntent& a, const std::string& cluster, const std::string& kind) {
    return a.cluster == cluster && a.kind == kind;
  };
  for (const RemoteIntent& up : u.upsert_intents) {
    RemoteIntent row = up;
    row.job_uid = u.uid;
    row.updated_ms = updated_ms;
    auto it = std::find_if(before.begin(), before.end(),
                           [&](const RemoteIntent& r) { return same_key(r, up.cluster, up.kind); });
    if (it != before.end()) {
      *it = std::move(row);
    } else {
      before.push_back(std::move(row));
    }
  }
  for (const auto& [cluster, kind] : u.drop_intents) {
    std::erase_if(before, [&](const RemoteIntent& r) { return same_key(r, cluster, kind); });
  }
  std::sort(before.begin(), before.end(), [](const RemoteIntent& a, const RemoteIntent& b) {
    return std::tie(a.cluster, a.kind) < std::tie(b.cluster, b.kind);
  });
  return before;
}

}  // namespace gantry::dispatch
