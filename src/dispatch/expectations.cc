#include "gantry/dispatch/expectations.h"

#include <algorithm>

#include "gantry/dispatch/remote_objects.h"

namespace gantry::dispatch {

bool Expectations::RunEntry(const Entry& e) const {
  return run_ttl_ms_ > ttl_ms_ && (e.key.second == kJob || e.key.second == kWorkload);
}

bool Expectations::Kept(const Entry& e, int64_t now_ms) const {
  return Within(e.at_ms, now_ms, RunEntry(e) ? run_ttl_ms_ : ttl_ms_);
}

Expectations::Entry& Expectations::EntryFor(const std::string& job_uid, const Key& key) {
  std::vector<Entry>& entries = by_job_[job_uid];
  auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.key == key; });
  if (it != entries.end()) return *it;
  return entries.emplace_back(Entry{key});
}

void Expectations::Created(const std::string& job_uid, const std::string& cluster, const std::string& kind,
                                 int64_t epoch, int64_t now_ms) {
  std::lock_guard lock(mu_);
  Entry& e = EntryFor(job_uid, {cluster, kind});
  e.epoch = epoch;
  e.at_ms = now_ms;
  e.run_only = false;
}

void Expectations::MayHaveLanded(const std::string& job_uid, const std::string& cluster, int64_t epoch,
                                 int64_t now_ms) {
  if (run_ttl_ms_ <= ttl_ms_) return;
  std::lock_guard lock(mu_);
  Entry& e = EntryFor(job_uid, {cluster, kJob});
  if (!e.run_only && e.epoch == epoch) return;  // an answered create of this epoch stays expected
  e.epoch = epoch;
  e.at_ms = now_ms;
  e.run_only = true;
}

std::set<Expectations::Key> Expectations::Pending(const std::string& job_uid, int64_t epoch,
                                                              const std::set<Key>& observed, int64_t now_ms) {
  std::set<Key> out;
  std::lock_guard lock(mu_);
  auto it = by_job_.find(job_uid);
  if (it == by_job_.end()) return out;
  std::vector<Entry>& entries = it->second;
  std::erase_if(entries, [&](const Entry& e) {
    if (e.epoch == epoch && observed.count(e.key) > 0) return true;
    if (RunEntry(e)) return !Kept(e, now_ms);  // another epoch's, or past ttl: UnseenRuns still counts it
    return e.epoch != epoch || !Live(e.at_ms, now_ms);
  });
  for (const Entry& e : entries) {
    if (e.epoch == epoch && Live(e.at_ms, now_ms) && !e.run_only) out.insert(e.key);
  }
  if (entries.empty()) by_job_.erase(it);
  return out;
}

std::set<Expectations::Run> Expectations::UnseenRuns(const std::string& job_uid, const std::set<Run>& seen,
                                                     int64_t now_ms, bool settle) {
  return UnseenCreates(job_uid, kJob, seen, now_ms, settle);
}

std::set<Expectations::Run> Expectations::UnseenCreates(const std::string& job_uid, const std::string& kind,
                                                        const std::set<Run>& seen, int64_t now_ms, bool settle) {
  std::set<Run> out;
  if (run_ttl_ms_ <= ttl_ms_) return out;
  std::lock_guard lock(mu_);
  auto it = by_job_.find(job_uid);
  if (it == by_job_.end()) return out;
  std::vector<Entry>& entries = it->second;
  if (settle) {
    std::erase_if(entries, [&](const Entry& e) {
      return !Kept(e, now_ms) || (RunEntry(e) && e.key.second == kind && seen.count({e.key.first, e.epoch}) > 0);
    });
  }
  for (const Entry& e : entries) {
    if (RunEntry(e) && e.key.second == kind && Kept(e, now_ms) && !seen.count({e.key.first, e.epoch})) {
      out.emplace(e.key.first, e.epoch);
    }
  }
  if (entries.empty()) by_job_.erase(it);
  return out;
}

std::set<Expectations::Key> Expectations::Peek(const std::string& job_uid, int64_t epoch,
                                           const std::set<Key>& observed, int64_t now_ms) const {
  std::set<Key> out;
  std::lock_guard lock(mu_);
  auto it = by_job_.find(job_uid);
  if (it == by_job_.end()) return out;
  for (const Entry& e : it->second) {
    if (e.epoch == epoch && Live(e.at_ms, now_ms) && !e.run_only && !observed.count(e.key)) out.insert(e.key);
  }
  return out;
}

std::map<Expectations::Key, int64_t> Expectations::Young(const std::string& job_uid, int64_t now_ms) const {
  std::map<Key, int64_t> out;
  std::lock_guard lock(mu_);
  auto it = by_job_.find(job_uid);
  if (it == by_job_.end()) return out;
  for (const Entry& e : it->second) {
    if (Live(e.at_ms, now_ms) && !e.run_only) out.emplace(e.key, e.at_ms + ttl_ms_);
  }
  return out;
}

bool Expectations::Seen(const std::string& job_uid, const std::string& cluster, const std::string& kind,
                        int64_t epoch, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = by_job_.find(job_uid);
  if (it == by_job_.end()) return false;
  bool was_expected = false;
  std::erase_if(it->second, [&](const Entry& e) {
    if (e.key.first != cluster || e.key.second != kind || e.epoch != epoch || !Kept(e, now_ms)) return false;
    was_expected = Live(e.at_ms, now_ms) && !e.run_only;
    return true;
  });
  if (it->second.empty()) by_job_.erase(it);
  return was_expected;
}

void Expectations::Forget(const std::string& job_uid) {
  std::lock_guard lock(mu_);
  by_job_.erase(job_uid);
}

void Expectations::Deleted(const std::string& k8s_uid, int64_t now_ms) {
  if (k8s_uid.empty()) return;
  std::lock_guard lock(mu_);
  // Lapsed entries go from the front, so each is looked at once.
  while (!deleted_order_.empty() && now_ms - deleted_order_.front().first >= ttl_ms_) {
    auto it = deleted_.find(deleted_order_.front().second);
    if (it != deleted_.end() && it->second == deleted_order_.front().first) deleted_.erase(it);
    deleted_order_.pop_front();
  }
  deleted_[k8s_uid] = now_ms;
  deleted_order_.emplace_back(now_ms, k8s_uid);
}

bool Expectations::RecentlyDeleted(const std::string& k8s_uid, int64_t now_ms) const {
  if (k8s_uid.empty()) return false;
  std::lock_guard lock(mu_);
  auto it = deleted_.find(k8s_uid);
  return it != deleted_.end() && Live(it->second, now_ms);
}

size_t Expectations::deletes() const {
  std::lock_guard lock(mu_);
  return deleted_.size();
}

size_t Expectations::jobs() const {
  std::lock_guard lock(mu_);
  return by_job_.size();
}

}  // namespace gantry::dispatch
