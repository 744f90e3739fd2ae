#include "gantry/dispatch/unseen_asks.h"

#include <algorithm>

namespace gantry::dispatch {

bool UnseenAsks::Due(const std::string& key, int64_t now_ms) const {
  std::lock_guard lock(mu_);
  auto it = rows_.find(key);
  return it == rows_.end() || now_ms >= it->second.next_ms || now_ms < it->second.next_ms - it->second.wait_ms;
}

void UnseenAsks::Asked(const std::string& key, int64_t now_ms) {
  std::lock_guard lock(mu_);
  // A row not asked for twice the longest wait is done with (its cluster
  // lists again, or the row is gone): forgotten, at most once a minute.
  if (now_ms - pruned_ms_ >= 60'000 || now_ms < pruned_ms_) {
    std::erase_if(rows_, [&](const auto& r) { return now_ms - r.second.next_ms >= 2 * max_ms_; });
    pruned_ms_ = now_ms;
  }
  Entry& e = rows_[key];
  e.wait_ms = e.wait_ms == 0 ? first_ms_ : std::min(e.wait_ms * 2, max_ms_);
  e.next_ms = now_ms + e.wait_ms;
}

size_t UnseenAsks::size() const {
  std::lock_guard lock(mu_);
  return rows_.size();
}

}  // namespace gantry::dispatch
