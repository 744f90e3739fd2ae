#include "observer_cache.h"

#include <algorithm>

namespace gantry::dispatch::observer_internal {

namespace {

// The same real job (object and epoch) in the same state.
bool SameRunState(const ObservedJob& a, const ObservedJob& b) {
  return a.k8s_uid == b.k8s_uid && a.epoch == b.epoch && a.state == b.state;
}

}  // namespace

bool SameForDecisions(const Entry& a, const Entry& b) {
  if (a.job_uid != b.job_uid || a.object.index() != b.object.index()) return false;
  if (const auto* wa = std::get_if<ObservedWorkload>(&a.object)) {
    const auto& wb = std::get<ObservedWorkload>(b.object);
    return wa->k8s_uid == wb.k8s_uid && wa->epoch == wb.epoch && wa->admitted == wb.admitted &&
           wa->quota_reserved == wb.quota_reserved && wa->evicted == wb.evicted &&
           wa->evicted_changed_ms == wb.evicted_changed_ms && wa->finished == wb.finished &&
           wa->active == wb.active && wa->check_failed == wb.check_failed && wa->gated == wb.gated &&
           wa->gate_open == wb.gate_open && wa->held_by_gate == wb.held_by_gate && wa->preempting == wb.preempting &&
           wa->deactivated_for == wb.deactivated_for;
  }
  const auto& ja = std::get<ObservedJob>(a.object);
  const auto& jb = std::get<ObservedJob>(b.object);
  return SameRunState(ja, jb) && ja.summary == jb.summary;
}

bool OnlyStatusDiffers(const Entry& a, const Entry& b) {
  const auto* ja = std::get_if<ObservedJob>(&a.object);
  const auto* jb = std::get_if<ObservedJob>(&b.object);
  return ja && jb && a.job_uid == b.job_uid && SameRunState(*ja, *jb) && ja->summary != jb->summary;
}

void JobIndex::Add(const std::string& job_uid, const ResourceCache* cache) {
  std::vector<const ResourceCache*>& caches = where_[job_uid];
  auto before = [](const ResourceCache* a, const ResourceCache* b) {
    return a->cluster() != b->cluster() ? a->cluster() < b->cluster() : a->resource() < b->resource();
  };
  auto at = std::lower_bound(caches.begin(), caches.end(), cache, before);
  if (at == caches.end() || *at != cache) caches.insert(at, cache);
}

void JobIndex::Remove(const std::string& job_uid, const ResourceCache* cache) {
  auto it = where_.find(job_uid);
  if (it == where_.end()) return;
  std::erase(it->second, cache);
  if (it->second.empty()) where_.erase(it);
}

std::vector<std::string> JobIndex::Uids() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [uid, caches] : where_) out.push_back(uid);
  std::sort(out.begin(), out.end());
  return out;
}

void ResourceCache::Put(const std::string& key, Entry e, std::set<std::string>* changed, bool* status_only) {
  auto it = uid_of_.find(key);
  if (it != uid_of_.end()) {
    const std::string old_uid = it->second;
    auto old = by_uid_.find({old_uid, key});
    if (old != by_uid_.end()) {
      if (old_uid == e.job_uid && old->second.resource_version == e.resource_version) return;
      if (SameForDecisions(old->second, e)) {
        old->second = std::move(e);  // newer message or reason, same decision
        return;
      }
      if (status_only) *status_only = OnlyStatusDiffers(old->second, e);
      by_uid_.erase(old);
    }
    uid_of_.erase(it);
    changed->insert(old_uid);
    Unindex(old_uid);
  }
  // by_uid_ and the index first, uid_of_ last: a throw on the way leaves
  // uid_of_ naming only entries that exist.
  const std::string uid = e.job_uid;
  changed->insert(uid);
  by_uid_[{uid, key}] = std::move(e);
  index_->Add(uid, this);
  uid_of_[key] = uid;
}

void ResourceCache::Erase(const std::string& key, std::set<std::string>* changed) {
  auto it = uid_of_.find(key);
  if (it == uid_of_.end()) return;
  const std::string uid = it->second;
  changed->insert(uid);
  by_uid_.erase({uid, key});
  uid_of_.erase(it);
  Unindex(uid);
}

void ResourceCache::Replace(std::map<std::string, Entry> fresh, std::set<std::string>* changed) {
  std::vector<std::string> gone;
  for (const auto& [key, uid] : uid_of_) {
    if (!fresh.count(key)) gone.push_back(key);
  }
  for (const std::string& key : gone) Erase(key, changed);
  for (auto& [key, e] : fresh) Put(key, std::move(e), changed);
}

void ResourceCache::Detach() {
  for (const auto& [key, e] : by_uid_) index_->Remove(key.first, this);
}

void ResourceCache::Unindex(const std::string& job_uid) {
  auto next = by_uid_.lower_bound({job_uid, ""});
  if (next == by_uid_.end() || next->first.first != job_uid) index_->Remove(job_uid, this);
}

void FinishedGone::Remember(const std::string& cluster, ObservedWorkload w, int64_t now_ms) {
  if (!w.finished || (w.reason != "Succeeded" && w.reason != "Failed")) return;
  DropUpTo(now_ms - kKeepMs);
  while (order_.size() >= kMaxKept) DropUpTo(order_.front().at_ms);
  w.other_gate_states = nullptr;  // what a finish reads: epoch, reason, message
  if (w.message.size() > 1024) w.message.resize(1024);
  const uint64_t seq = next_seq_++;
  order_.push_back({now_ms, seq, w.job_uid});
  by_job_[w.job_uid].push_back({seq, cluster, std::move(w)});
}

void FinishedGone::ForJob(const std::string& job_uid,
                          std::map<std::string, std::vector<ObservedWorkload>>* out) const {
  auto it = by_job_.find(job_uid);
  if (it == by_job_.end()) return;
  for (const Kept& k : it->second) (*out)[k.cluster].push_back(k.workload);
}

void FinishedGone::DropUpTo(int64_t cutoff_ms) {
  while (!order_.empty() && order_.front().at_ms <= cutoff_ms) {
    const Added& a = order_.front();
    auto it = by_job_.find(a.job_uid);
    if (it != by_job_.end()) {
      std::erase_if(it->second, [&](const Kept& k) { return k.seq == a.seq; });
      if (it->second.empty()) by_job_.erase(it);
    }
    order_.pop_front();
  }
}

}  // namespace gantry::dispatch::observer_internal
