#include "admission.h"

#include <algorithm>

#include <fmt/format.h>

namespace gantry::sim {

namespace {

bool Fits(const ResourceList& nominal, const ResourceList& used, const ResourceList& demand) {
  return FirstShortfall(nominal, used, demand, nullptr).empty();
}

bool Stopping(const QuotaHolder* h) { return !h->preempted_for.empty(); }

// Whether h may be one of c's victims: a holder of lower priority, or a
// victim already stopping for c (never one stopping for another preemptor).
bool IsTarget(const QuotaHolder& h, const AdmissionCandidate& c) {
  return Stopping(&h) ? h.preempted_for == c.key : h.priority < c.priority;
}

// Kueue's classic preemption within a ClusterQueue (see admission.h): the
// victims among `holders` that make room for c. On success sets *used to the
// usage once they are gone; returns none (and leaves *used) when even all
// candidate victims would not make room.
std::vector<const QuotaHolder*> ChooseVictims(const ResourceList& nominal, const AdmissionCandidate& c,
                                              const std::vector<const QuotaHolder*>& holders, ResourceList* used) {
  std::vector<const QuotaHolder*> targets;
  for (const QuotaHolder* h : holders) {
    if (IsTarget(*h, c)) targets.push_back(h);
  }
  std::sort(targets.begin(), targets.end(), [](const QuotaHolder* a, const QuotaHolder* b) {
    if (Stopping(a) != Stopping(b)) return Stopping(a);  // already evicted: Kueue's candidate order
    if (a->priority != b->priority) return a->priority < b->priority;
    if (a->reserved_seq != b->reserved_seq) return a->reserved_seq > b->reserved_seq;
    return a->key < b->key;
  });
  ResourceList after = *used;
  std::vector<const QuotaHolder*> victims;
  for (const QuotaHolder* t : targets) {
    if (Fits(nominal, after, c.demand)) break;
    SubtractFrom(&after, t->usage);
    victims.push_back(t);
  }
  if (victims.empty() || !Fits(nominal, after, c.demand)) return {};
  // The last victim is needed (without it c did not fit); of the others,
  // give back each that c fits without (Kueue's fillBackWorkloads).
  for (std::size_t i = victims.size() - 1; i-- > 0;) {
    AddTo(&after, victims[i]->usage);
    if (Fits(nominal, after, c.demand)) {
      victims.erase(victims.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      SubtractFrom(&after, victims[i]->usage);
    }
  }
  *used = std::move(after);
  return victims;
}

// While c waits for its victims, their quota is still held (in *used); the
// room c will take once they are gone (after, with c's demand) is kept from
// the Workloads after it in the pass: *used becomes at least after + demand.
void KeepRoom(ResourceList after, const ResourceList& demand, ResourceList* used) {
  AddTo(&after, demand);
  for (const auto& [name, v] : after) {
    int64_t& u = (*used)[name];
    u = std::max(u, v);
  }
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

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

std::vector<AdmissionVerdict> DecideAdmissions(const ClusterQueueSnapshot& cq,
                                               std::vector<AdmissionCandidate> pending) {
  std::stable_sort(pending.begin(), pending.end(), [](const AdmissionCandidate& a, const AdmissionCandidate& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.created_ms != b.created_ms) return a.created_ms < b.created_ms;
    return a.seq < b.seq;
  });
  ResourceList used = cq.reserved;
  // Holders not yet chosen as victims. A Workload admitted in this pass is
  // not among them: every candidate after it has no higher priority.
  std::vector<const QuotaHolder*> holders;
  if (cq.policy == PreemptionPolicy::kLowerPriority) {
    for (const QuotaHolder& h : cq.holders) holders.push_back(&h);
  }
  std::vector<AdmissionVerdict> out;
  out.reserve(pending.size());
  for (const AdmissionCandidate& c : pending) {
    AdmissionVerdict& v = out.emplace_back();
    v.key = c.key;
    int64_t missing = 0;
    std::string short_of = FirstShortfall(cq.nominal, used, c.demand, &missing);
    if (short_of.empty()) {
      v.admitted = true;
      AddTo(&used, c.demand);
      continue;
    }
    if (cq.nominal.count(short_of) == 0) {  // no preemption makes room there
      v.message = fmt::format("couldn't assign flavors to pod set: resource {} unavailable in ClusterQueue",
                              short_of);
      continue;
    }
    v.message = fmt::format("couldn't assign flavors to pod set: insufficient unused quota for {} in flavor {}, {} more needed",
                            short_of, cq.flavor, FormatQuantity(short_of, missing));
    ResourceList after = used;
    std::vector<const QuotaHolder*> victims = ChooseVictims(cq.nominal, c, holders, &after);
    if (victims.empty()) continue;
    const auto stopping = static_cast<std::size_t>(std::count_if(victims.begin(), victims.end(), Stopping));
    // Its gates hold back new evictions only: victims already evicted for
    // it are stopping whatever its gates say now.
    if (stopping < victims.size() && !c.closed_gates.empty()) {
      v.message += fmt::format("; preemption is gated (closed: {})", Joined(c.closed_gates));
      v.reason = PendingReason::kPreemptionGated;
      continue;
    }
    for (const QuotaHolder* victim : victims) {
      if (!Stopping(victim)) v.victims.push_back(victim->key);
      holders.erase(std::find(holders.begin(), holders.end(), victim));
    }
    if (cq.victims_stop_at_once && stopping == 0) {
      v.admitted = true;
      v.message.clear();
      used = std::move(after);
      AddTo(&used, c.demand);
      continue;
    }
    // Kueue appends this to the flavors message when it issues preemptions.
    v.message += fmt::format(". Pending the preemption of {} workload(s)", victims.size());
    v.reason = PendingReason::kWaitingForPreemptedWorkloads;
    KeepRoom(std::move(after), c.demand, &used);
  }
  return out;
}

const char* PendingReasonName(PendingReason reason) {
  switch (reason) {
    case PendingReason::kPending: return "Pending";
    case PendingReason::kPreemptionGated: return "PreemptionGated";
    case PendingReason::kWaitingForPreemptedWorkloads: return "WaitingForPreemptedWorkloads";
  }
  return "Pending";
}

std::vector<AdmissionVerdict> DecideAdmissions(const ResourceList& nominal, const ResourceList& reserved,
                                               std::vector<AdmissionCandidate> pending,
                                               const std::string& flavor) {
  return DecideAdmissions(ClusterQueueSnapshot{nominal, reserved, {}, PreemptionPolicy::kNever, flavor},
                          std::move(pending));
}

}  // namespace gantry::sim
