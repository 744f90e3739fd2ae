#include "admission.h"

#include <algorithm>

#include <fmt/format.h>

namespace gantry::sim {

std::string FirstShortfall(const ResourceList& nominal, const ResourceList& reserved,
                           const ResourceList& demand, int64_t* missing) {
  for (const auto& [name, need] : demand) {
    if (need <= 0) continue;
    auto n = nominal.find(name);
    int64_t quota = n == nominal.end() ? 0 : n->second;
    auto r = reserved.find(name);
    int64_t used = r == reserved.end() ? 0 : r->second;
    int64_t free = quota > used ? quota - used : 0;
    if (need > free) {
      if (missing) *missing = need - free;
      return name;
    }
  }
  return "";
}

std::vector<AdmissionVerdict> DecideAdmissions(const ResourceList& nominal, const ResourceList& reserved,
                                               std::vector<AdmissionCandidate> pending,
                                               const std::string& flavor) {
  std::stable_sort(pending.begin(), pending.end(), [](const AdmissionCandidate& a, const AdmissionCandidate& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.created_ms != b.created_ms) return a.created_ms < b.created_ms;
    return a.seq < b.seq;
  });
  ResourceList used = reserved;
  std::vector<AdmissionVerdict> out;
  out.reserve(pending.size());
  for (const AdmissionCandidate& c : pending) {
    AdmissionVerdict v{c.key, false, ""};
    int64_t missing = 0;
    std::string short_of = FirstShortfall(nominal, used, c.demand, &missing);
    if (short_of.empty()) {
      v.admitted = true;
      AddTo(&used, c.demand);
    } else if (nominal.count(short_of) == 0) {
      v.message = fmt::format("couldn't assign flavors to pod set: resource {} unavailable in ClusterQueue",
                              short_of);
    } else {
      v.message = fmt::format("couldn't assign flavors to pod set: insufficient unused quota for {} in flavor {}, {} more needed",
                              short_of, flavor, FormatQuantity(short_of, missing));
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace gantry::sim
