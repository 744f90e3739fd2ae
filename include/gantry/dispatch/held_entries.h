// HeldEntries: a map of per-job entries, each held until one pass takes it.
// The shared part of FreshJobs and KnownJobs.
//
// Invalidate is for a job that changed outside the passes: a pass already in
// hand read it before, and whatever it puts back is refused until the next
// pass's Take, which then finds nothing and reads the store.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace gantry::dispatch {

template <typename Entry>
class HeldEntries {
 public:
  // Keeps (or replaces) uid's entry; false (nothing kept) when a new uid
  // would make more than limit entries.
  bool Put(const std::string& uid, Entry entry, size_t limit) {
    std::lock_guard lock(mu_);
    if (invalid_.count(uid)) return false;
    auto it = entries_.find(uid);
    if (it != entries_.end()) {
      it->second = std::move(entry);
      return true;
    }
    if (entries_.size() >= limit) return false;
    entries_.emplace(uid, std::move(entry));
    return true;
  }
  // uid's entry, removed; nullopt when none is held.
  std::optional<Entry> Take(const std::string& uid) {
    std::lock_guard lock(mu_);
    if (invalid_.erase(uid)) return std::nullopt;
    auto it = entries_.find(uid);
    if (it == entries_.end()) return std::nullopt;
    std::optional<Entry> entry(std::move(it->second));
    entries_.erase(it);
    return entry;
  }
  // Forgets uid: its entry, and an Invalidate not yet answered by a Take.
  void Drop(const std::string& uid) {
    std::lock_guard lock(mu_);
    entries_.erase(uid);
    invalid_.erase(uid);
  }
  // Drops uid's entry and refuses Puts for it until the next Take.
  void Invalidate(const std::string& uid) {
    std::lock_guard lock(mu_);
    entries_.erase(uid);
    invalid_.insert(uid);
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_set<std::string> invalid_;  // Invalidate()d, not yet Take()n
};

}  // namespace gantry::dispatch
