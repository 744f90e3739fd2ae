#include "gantry/dispatch/known_jobs.h"

#include <algorithm>
#include <tuple>

namespace gantry::dispatch {

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
      // As the store keeps it (UpsertIntent): a confirmed create stays
      // confirmed for its epoch.
      if (it->epoch == row.epoch) row.created_ms = std::max(row.created_ms, it->created_ms);
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
