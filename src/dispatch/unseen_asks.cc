#include "gantry/dispatch/unseen_asks.h"

#include <algorithm>

#include <fmt/format.h>

namespace gantry::dispatch {

std::string UnseenAsks::Key(const std::string& job_uid, const std::string& cluster, const std::string& kind,
                            int64_t epoch) {
  return fmt::format("unseen:{}/{}/{}@{}", job_uid, cluster, kind, epoch);
}

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
    // (An entry Found made a moment ago, not asked yet, has no time: kept.)
    std::erase_if(rows_, [&](const auto& r) { return r.second.next_ms > 0 && now_ms - r.second.next_ms >= 2 * max_ms_; });
    pruned_ms_ = now_ms;
  }
  Entry& e = rows_[key];
  e.wait_ms = e.wait_ms == 0 ? first_ms_ : std::min(e.wait_ms * 2, max_ms_);
  e.next_ms = now_ms + e.wait_ms;
}

void UnseenAsks::Found(const std::string& key, int64_t gone_at_ms) {
  std::lock_guard lock(mu_);
  auto it = rows_.find(key);
  if (it != rows_.end()) {
    it->second.gone_ms = gone_at_ms;
  } else if (gone_at_ms > 0) {
    rows_[key].gone_ms = gone_at_ms;  // Asked() follows, and sets its wait
  }
}

int64_t UnseenAsks::GoneAt(const std::string& key) const {
  std::lock_guard lock(mu_);
  if (rows_.empty()) return 0;
  auto it = rows_.find(key);
  return it == rows_.end() ? 0 : it->second.gone_ms;
}

size_t UnseenAsks::size() const {
  std::lock_guard lock(mu_);
  return rows_.size();
}

}  // namespace gantry::dispatch
