#include "gantry/dispatch/decide.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gantry/common/clock.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry::dispatch {
namespace {

using nlohmann::json;

constexpr const char* kWorkload = "Workload";
constexpr const char* kJob = "Job";

JobEvent Event(std::string reason, std::string message, std::string cluster = "",
               std::string type = "Normal") {
  JobEvent e;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.cluster = std::move(cluster);
  e.type = std::move(type);
  return e;
}

// A write guarded by the job's current phase, epoch and owner.
DispatchUpdate Guarded(const JobRecord& job) {
  DispatchUpdate u;
  u.uid = job.uid;
  u.expected_phase = job.phase;
  u.expected_epoch = job.epoch;
  u.expected_cluster = job.cluster;
  return u;
}

std::string Conditions(const std::string& type, const std::string& reason, const std::string& message,
                       int64_t now_ms) {
  json c = {{"type", type}, {"status", "True"}, {"reason", reason}, {"message", message},
            {"lastTransitionTime", FormatRfc3339(now_ms)}};
  return json::array({c}).dump();
}

class Ladder {
 public:
  explicit Ladder(const DecideInput& in) : in_(in), job_(*in.job), opt_(in.options) {}

  Plan Run();

 private:
  bool Reachable(const std::string& cluster) const {
    auto f = in_.clusters.find(cluster);
    auto o = in_.observed.find(cluster);
    return f != in_.clusters.end() && f->second.ready && o != in_.observed.end() && o->second.synced;
  }
  const ClusterObservation* Observed(const std::string& cluster) const {
    auto o = in_.observed.find(cluster);
    return o == in_.observed.end() ? nullptr : &o->second;
  }
  inventory::KueueApiVersion VersionOf(const std::string& cluster) const {
    auto f = in_.clusters.find(cluster);
    return f == in_.clusters.end() ? inventory::KueueApiVersion::kV1beta2 : f->second.config.kueue_api_version;
  }
  const ObservedWorkload* WorkloadIn(const std::string& cluster) const {
    const ClusterObservation* o = Observed(cluster);
    if (!o) return nullptr;
    for (const ObservedWorkload& w : o->workloads) {
      if (w.epoch == job_.epoch) return &w;
    }
    return nullptr;
  }
  const ObservedJob* JobIn(const std::string& cluster) const {
    const ClusterObservation* o = Observed(cluster);
    if (!o) return nullptr;
    for (const ObservedJob& j : o->jobs) {
      if (j.epoch == job_.epoch) return &j;
    }
    return nullptr;
  }
  Action DeleteWorkload(const std::string& cluster, const ObservedWorkload& w) const {
    Action a;
    a.verb = Verb::kDelete;
    a.cluster = cluster;
    a.kind = kWorkload;
    a.ns = w.ns;
    a.name = w.name;
    a.epoch = w.epoch;
    a.path = WorkloadPath(VersionOf(cluster), w.ns, w.name);
    a.precondition_uid = w.k8s_uid;
    return a;
  }
  Action DeleteJob(const std::string& cluster, const ObservedJob& j) const {
    Action a;
    a.verb = Verb::kDelete;
    a.cluster = cluster;
    a.kind = kJob;
    a.ns = j.ns;
    a.name = j.name;
    a.epoch = j.epoch;
    a.path = j.kind == "JobSet" ? fmt::format("/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets/{}", j.ns, j.name)
                                : fmt::format("/apis/batch/v1/namespaces/{}/jobs/{}", j.ns, j.name);
    a.precondition_uid = j.k8s_uid;
    return a;
  }
  // Deletes everything the job has in every reachable cluster.
  void WithdrawObserved(Plan& plan) const {
    for (const auto& [cluster, o] : in_.observed) {
      if (!Reachable(cluster)) continue;
      for (const ObservedWorkload& w : o.workloads) plan.actions.push_back(DeleteWorkload(cluster, w));
      for (const ObservedJob& j : o.jobs) plan.actions.push_back(DeleteJob(cluster, j));
    }
  }
  // Marks every present intent absent (in u), except those kept.
  void MarkAllAbsent(DispatchUpdate& u, const std::set<std::pair<std::string, std::string>>& keep = {}) const {
    for (RemoteIntent i : in_.intents) {
      if (!i.present || keep.count({i.cluster, i.kind})) continue;
      i.present = false;
      u.upsert_intents.push_back(std::move(i));
    }
  }
  // Intents to drop: absent ones whose cluster confirms the object gone, and
  // any in a cluster no longer in the inventory (nothing can reach it).
  std::vector<std::pair<std::string, std::string>> ConfirmedGone() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const RemoteIntent& i : in_.intents) {
      if (i.present) continue;
      if (!in_.clusters.count(i.cluster)) {
        out.emplace_back(i.cluster, i.kind);
        continue;
      }
      if (!Reachable(i.cluster)) continue;
      const ClusterObservation* o = Observed(i.cluster);
      bool seen = i.kind == kWorkload ? !o->workloads.empty() : !o->jobs.empty();
      if (!seen) out.emplace_back(i.cluster, i.kind);
    }
    return out;
  }
  std::vector<std::string> UnreachableWithIntents() const {
    std::vector<std::string> out;
    for (const RemoteIntent& i : in_.intents) {
      if (in_.clusters.count(i.cluster) && !Reachable(i.cluster) &&
          std::find(out.begin(), out.end(), i.cluster) == out.end()) {
        out.push_back(i.cluster);
      }
    }
    return out;
  }

  bool Fence(Plan& plan) const;
  void Sweep(Plan& plan, Plan& deletes) const;
  Plan Cleanup(const char* step) const;
  Plan Cancel() const;
  Plan Nominate() const;
  std::optional<Plan> Lease() const;
  std::optional<Plan> Timeout() const;
  std::optional<Plan> Widen() const;
  Plan Copies() const;
  Plan Owned() const;
  void OwnerReturned(Plan& plan) const;
  Plan Requeue(const std::string& step, const std::string& reason, const std::string& message) const;
  Plan Finish(const std::string& step, JobPhase phase, const std::string& reason, const std::string& message) const;

  const DecideInput& in_;
  const JobRecord& job_;
  const DecideOptions& opt_;
};

// Step 1: an object of an older epoch, a job while nobody holds the lease,
// or a job outside the owner is deleted on sight. Never the owner's current one.
bool Ladder::Fence(Plan& plan) const {
  const bool has_owner = !job_.cluster.empty() &&
                         (job_.phase == JobPhase::kAdmitted || job_.phase == JobPhase::kRunning);
  for (const auto& [cluster, o] : in_.observed) {
    if (!Reachable(cluster)) continue;
    for (const ObservedWorkload& w : o.workloads) {
      if (w.epoch < job_.epoch || job_.phase == JobPhase::kQueued) {
        plan.actions.push_back(DeleteWorkload(cluster, w));
      }
    }
    for (const ObservedJob& j : o.jobs) {
      if (j.epoch < job_.epoch || !has_owner || cluster != job_.cluster) {
        plan.actions.push_back(DeleteJob(cluster, j));
      }
    }
  }
  return !plan.actions.empty();
}

// Withdrawn copies (intents marked absent, e.g. the losers of a lease whose
// cluster did not answer then) are deleted once reachable, and their rows
// dropped once the cluster shows them gone.
void Ladder::Sweep(Plan& plan, Plan& deletes) const {
  auto touched = [&](const std::string& cluster, const std::string& kind) {
    if (!plan.write) return false;
    return std::any_of(plan.write->upsert_intents.begin(), plan.write->upsert_intents.end(),
                       [&](const RemoteIntent& i) { return i.cluster == cluster && i.kind == kind; });
  };
  auto queued = [&](const Action& a) {
    return std::any_of(deletes.actions.begin(), deletes.actions.end(), [&](const Action& d) {
      return d.cluster == a.cluster && d.kind == a.kind && d.name == a.name;
    });
  };
  std::vector<std::pair<std::string, std::string>> drops;
  for (const RemoteIntent& i : in_.intents) {
    if (i.present || touched(i.cluster, i.kind)) continue;
    if (!in_.clusters.count(i.cluster)) {
      drops.emplace_back(i.cluster, i.kind);
      continue;
    }
    if (!Reachable(i.cluster)) continue;
    const ClusterObservation* o = Observed(i.cluster);
    bool seen = false;
    if (i.kind == kWorkload) {
      for (const ObservedWorkload& w : o->workloads) {
        seen = true;
        Action a = DeleteWorkload(i.cluster, w);
        if (!queued(a)) deletes.actions.push_back(std::move(a));
      }
    } else {
      for (const ObservedJob& j : o->jobs) {
        seen = true;
        Action a = DeleteJob(i.cluster, j);
        if (!queued(a)) deletes.actions.push_back(std::move(a));
      }
    }
    if (!seen) drops.emplace_back(i.cluster, i.kind);
  }
  if (drops.empty()) return;
  if (!plan.write) plan.write = Guarded(job_);
  for (auto& d : drops) plan.write->drop_intents.push_back(std::move(d));
}

Plan Ladder::Run() {
  // Final and cancelling jobs withdraw everything; no fencing step needed.
  if (IsFinal(job_.phase)) return Cleanup("finished");
  if (job_.phase == JobPhase::kCancelling) return Cancel();
  Plan fence;
  Fence(fence);
  Plan plan;
  switch (job_.phase) {
    case JobPhase::kQueued:
      plan = Nominate();
      break;
    case JobPhase::kNominating: {
      if (auto p = Lease()) { plan = std::move(*p); break; }
      if (auto p = Timeout()) { plan = std::move(*p); break; }
      if (auto p = Widen()) { plan = std::move(*p); break; }
      plan = Copies();
      break;
    }
    default:
      plan = Owned();
      OwnerReturned(plan);
      break;
  }
  Sweep(plan, fence);
  if (!fence.actions.empty()) {
    if (plan.step.empty()) plan.step = "fence";
    // Deletes first: a new copy in the same cluster needs the old name free.
    fence.actions.insert(fence.actions.end(), plan.actions.begin(), plan.actions.end());
    plan.actions = std::move(fence.actions);
    if (plan.requeue_ms < 0 || plan.requeue_ms > opt_.retry_ms) plan.requeue_ms = opt_.retry_ms;
  }
  // One action per object: fencing and a step may name the same copy.
  std::set<std::tuple<Verb, std::string, std::string>> seen;
  std::erase_if(plan.actions, [&](const Action& a) { return !seen.emplace(a.verb, a.cluster, a.kind).second; });
  return plan;
}

// Step 2.
Plan Ladder::Cleanup(const char* step) const {
  Plan plan;
  plan.step = step;
  WithdrawObserved(plan);
  DispatchUpdate u = Guarded(job_);
  MarkAllAbsent(u);
  u.drop_intents = ConfirmedGone();
  // A row marked absent in this write is confirmed only by a later look.
  for (auto it = u.drop_intents.begin(); it != u.drop_intents.end();) {
    bool remarked = std::any_of(u.upsert_intents.begin(), u.upsert_intents.end(), [&](const RemoteIntent& i) {
      return i.cluster == it->first && i.kind == it->second;
    });
    it = remarked ? u.drop_intents.erase(it) : it + 1;
  }
  if (!u.upsert_intents.empty() || !u.drop_intents.empty()) plan.write = std::move(u);
  size_t remaining = in_.intents.size() - (plan.write ? plan.write->drop_intents.size() : 0);
  if (remaining > 0 || !plan.actions.empty()) plan.requeue_ms = opt_.retry_ms;
  return plan;
}

// Step 3.
Plan Ladder::Cancel() const {
  Plan plan = Cleanup("cancel");
  size_t remaining = in_.intents.size() - (plan.write ? plan.write->drop_intents.size() : 0);
  bool remote_left = remaining > 0 || !plan.actions.empty();
  if (remote_left) {
    std::vector<std::string> waiting = UnreachableWithIntents();
    if (!waiting.empty()) {
      std::string msg = fmt::format("waiting for cluster(s) {} to confirm deletion", fmt::join(waiting, ", "));
      if (job_.message != msg) {
        if (!plan.write) plan.write = Guarded(job_);
        plan.write->message = msg;
        plan.write->conditions_json = Conditions("WaitingForClusters", "ClusterUnreachable", msg, in_.now_ms);
      }
    }
    plan.requeue_ms = opt_.retry_ms;
    return plan;
  }
  if (!plan.write) plan.write = Guarded(job_);
  plan.write->phase = JobPhase::kCancelled;
  plan.write->message = "cancelled by request";
  plan.write->conditions_json = "[]";
  plan.write->events.push_back(Event("Cancelled", job_.epoch > 0
                                                      ? "remote objects withdrawn from every cluster; job cancelled"
                                                      : "nothing was dispatched; job cancelled"));
  plan.requeue_ms = -1;
  return plan;
}

// Step 4.
Plan Ladder::Nominate() const {
  Plan plan;
  plan.step = "nominate";
  if (!in_.placement) {
    plan.requeue_ms = opt_.retry_ms;
    return plan;
  }
  const placement::Decision& d = *in_.placement;
  if (d.unschedulable) {
    std::vector<std::string> why;
    for (const auto& x : d.excluded) why.push_back(fmt::format("{}: {}", x.cluster, x.exclusion.message));
    DispatchUpdate u = Guarded(job_);
    u.phase = JobPhase::kUnschedulable;
    u.message = fmt::format("no cluster can ever run this job: {}", fmt::join(why, "; "));
    u.events.push_back(Event("Unschedulable", *u.message, "", "Warning"));
    plan.write = std::move(u);
    return plan;
  }
  // Copies of an older epoch still being withdrawn are fine: the new copy in
  // the same cluster is created once the old name is free.
  if (d.candidates.empty()) {
    std::string msg = d.excluded.empty() ? "no clusters known yet"
                                         : "no cluster can take it now; waiting (see gantry explain)";
    if (job_.message != msg) {
      DispatchUpdate u = Guarded(job_);
      u.message = msg;
      plan.write = std::move(u);
    }
    // Candidates appear when a cluster becomes Ready, is uncordoned or is
    // added, and each of those wakes every queued job: a slow resync is
    // only a backstop.
    plan.requeue_ms = opt_.resync_ms;
    return plan;
  }
  const int64_t epoch = job_.epoch + 1;
  DispatchUpdate u = Guarded(job_);
  u.phase = JobPhase::kNominating;
  u.epoch = epoch;
  u.nominated_ms = in_.now_ms;
  u.message = fmt::format("nominated to {}", fmt::join(d.candidates, ", "));
  u.conditions_json = "[]";
  MarkAllAbsent(u);
  for (const std::string& c : d.candidates) {
    Action a = CreateWorkloadAction(in_, c, epoch);
    RemoteIntent i;
    i.cluster = c;
    i.kind = kWorkload;
    i.ns = a.ns;
    i.name = a.name;
    i.epoch = epoch;
    i.present = true;
    // Replaces an absent row of an older epoch for the same cluster.
    std::erase_if(u.upsert_intents, [&](const RemoteIntent& r) { return r.cluster == c && r.kind == kWorkload; });
    u.upsert_intents.push_back(std::move(i));
    plan.actions.push_back(std::move(a));
  }
  u.events.push_back(Event("Nominated", fmt::format("epoch {}: Workload copies to {}", epoch,
                                                    fmt::join(d.candidates, ", "))));
  plan.write = std::move(u);
  plan.requeue_ms = opt_.resync_ms;
  return plan;
}

// Step 5.
std::optional<Plan> Ladder::Lease() const {
  std::string winner;
  for (const RemoteIntent& i : in_.intents) {  // by cluster name: deterministic
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch || !Reachable(i.cluster)) continue;
    const ObservedWorkload* w = WorkloadIn(i.cluster);
    if (!w || w->evicted || w->finished) continue;
    if (w->admitted || (opt_.lease_on_quota_reserved && w->quota_reserved)) {
      winner = i.cluster;
      break;
    }
  }
  if (winner.empty()) return std::nullopt;
  Plan plan;
  plan.step = "lease";
  DispatchUpdate u = Guarded(job_);
  u.phase = JobPhase::kAdmitted;
  u.cluster = winner;
  u.lease_ms = in_.now_ms;
  u.message = fmt::format("admitted by {} at epoch {}", winner, job_.epoch);
  MarkAllAbsent(u, {{winner, kWorkload}});
  Action create = CreateJobAction(in_, winner, job_.epoch);
  RemoteIntent ji;
  ji.cluster = winner;
  ji.kind = kJob;
  ji.ns = create.ns;
  ji.name = create.name;
  ji.epoch = job_.epoch;
  u.upsert_intents.push_back(ji);
  u.events.push_back(Event("LeaseTaken", fmt::format("{} admitted the whole job first; epoch {}", winner, job_.epoch),
                           winner));
  // Withdraw the other copies first, then create the real job.
  for (const RemoteIntent& i : in_.intents) {
    if (i.kind != kWorkload || i.cluster == winner || !Reachable(i.cluster)) continue;
    const ClusterObservation* o = Observed(i.cluster);
    for (const ObservedWorkload& w : o->workloads) plan.actions.push_back(DeleteWorkload(i.cluster, w));
  }
  plan.actions.push_back(std::move(create));
  plan.write = std::move(u);
  plan.requeue_ms = opt_.resync_ms;
  return plan;
}

// Step 6.
std::optional<Plan> Ladder::Timeout() const {
  if (!in_.spec->dispatch.timeout_seconds) return std::nullopt;
  int64_t deadline = job_.nominated_ms + int64_t{*in_.spec->dispatch.timeout_seconds} * 1000;
  if (in_.now_ms < deadline) return std::nullopt;
  std::vector<std::string> why;
  for (const RemoteIntent& i : in_.intents) {
    if (!i.present || i.kind != kWorkload) continue;
    const ObservedWorkload* w = WorkloadIn(i.cluster);
    why.push_back(fmt::format("{}: {}", i.cluster,
                              !Reachable(i.cluster) ? "unreachable"
                              : !w                  ? "no Workload copy"
                              : w->message.empty()  ? "not admitted"
                                                    : w->message));
  }
  return Finish("timeout", JobPhase::kFailed, "DispatchTimeout",
                fmt::format("not admitted within {} s: {}", *in_.spec->dispatch.timeout_seconds, fmt::join(why, "; ")));
}

// Step 7.
std::optional<Plan> Ladder::Widen() const {
  if (in_.spec->dispatch.mode != DispatchMode::kIncremental || !in_.placement) return std::nullopt;
  std::set<std::string> have;
  for (const RemoteIntent& i : in_.intents) {
    if (i.present && i.kind == kWorkload && i.epoch == job_.epoch) have.insert(i.cluster);
  }
  // Placement's candidates are the best step x (rounds + 1); their ranking
  // moves with capacity, so only the count tells whether a round is due:
  // top up to it with the best clusters that have no copy yet.
  const size_t target = in_.placement->candidates.size();
  if (have.size() >= target) return std::nullopt;
  std::vector<std::string> add;
  for (const std::string& c : in_.placement->candidates) {
    if (have.size() + add.size() >= target) break;
    if (!have.count(c)) add.push_back(c);
  }
  for (const placement::RankedCluster& r : in_.placement->feasible) {
    if (have.size() + add.size() >= target) break;
    if (!have.count(r.cluster) && std::find(add.begin(), add.end(), r.cluster) == add.end()) add.push_back(r.cluster);
  }
  if (add.empty()) return std::nullopt;
  Plan plan;
  plan.step = "widen";
  DispatchUpdate u = Guarded(job_);
  for (const std::string& c : add) {
    Action a = CreateWorkloadAction(in_, c, job_.epoch);
    RemoteIntent i;
    i.cluster = c;
    i.kind = kWorkload;
    i.ns = a.ns;
    i.name = a.name;
    i.epoch = job_.epoch;
    u.upsert_intents.push_back(std::move(i));
    plan.actions.push_back(std::move(a));
  }
  u.events.push_back(Event("Widened", fmt::format("Incremental round: Workload copies added to {}", fmt::join(add, ", "))));
  plan.write = std::move(u);
  plan.requeue_ms = opt_.retry_ms;
  return plan;
}

// Step 8.
Plan Ladder::Copies() const {
  Plan plan;
  plan.step = "copies";
  for (const RemoteIntent& i : in_.intents) {
    if (!i.present || i.kind != kWorkload || i.epoch != job_.epoch || !Reachable(i.cluster)) continue;
    if (!WorkloadIn(i.cluster)) plan.actions.push_back(CreateWorkloadAction(in_, i.cluster, job_.epoch));
  }
  plan.requeue_ms = plan.actions.empty() ? opt_.resync_ms : opt_.retry_ms;
  if (in_.spec->dispatch.mode == DispatchMode::kIncremental) {
    int64_t round = int64_t{in_.spec->dispatch.round_seconds} * 1000;
    int64_t next = round - (in_.now_ms - job_.nominated_ms) % round;
    plan.requeue_ms = std::min(plan.requeue_ms, std::max<int64_t>(next, 1));
  }
  if (in_.spec->dispatch.timeout_seconds) {
    int64_t left = job_.nominated_ms + int64_t{*in_.spec->dispatch.timeout_seconds} * 1000 - in_.now_ms;
    plan.requeue_ms = std::min(plan.requeue_ms, std::max<int64_t>(left, 1));
  }
  return plan;
}

Plan Ladder::Requeue(const std::string& step, const std::string& reason, const std::string& message) const {
  Plan plan;
  plan.step = step;
  DispatchUpdate u = Guarded(job_);
  u.phase = JobPhase::kQueued;
  u.cluster = "";
  u.lease_ms = 0;
  u.remote_status = "";
  u.message = message;
  MarkAllAbsent(u);
  u.events.push_back(Event(reason, message + "; requeued, the next dispatch uses epoch " + std::to_string(job_.epoch + 1),
                           job_.cluster, "Warning"));
  plan.write = std::move(u);
  plan.requeue_ms = 0;
  return plan;
}

Plan Ladder::Finish(const std::string& step, JobPhase phase, const std::string& reason,
                    const std::string& message) const {
  Plan plan;
  plan.step = step;
  DispatchUpdate u = Guarded(job_);
  u.phase = phase;
  u.message = message;
  MarkAllAbsent(u);
  u.events.push_back(Event(reason, message, job_.cluster, phase == JobPhase::kSucceeded ? "Normal" : "Warning"));
  plan.write = std::move(u);
  plan.requeue_ms = 0;  // cleanup follows at once
  return plan;
}

// Steps 9-12: Admitted or Running with owner C at epoch E.
Plan Ladder::Owned() const {
  const std::string& owner = job_.cluster;
  auto facts = in_.clusters.find(owner);
  // Step 9.
  if (facts == in_.clusters.end() || !Reachable(owner)) {
    const bool removed = facts == in_.clusters.end();
    int64_t lost = removed ? opt_.cluster_lost_timeout_ms : facts->second.lost_for_ms;
    if (lost >= opt_.cluster_lost_timeout_ms) {
      std::string why = removed ? fmt::format("owner cluster {} was removed from the inventory", owner)
                                : fmt::format("owner cluster {} unreachable for {} s", owner, lost / 1000);
      switch (in_.spec->on_cluster_loss) {
        case OnClusterLoss::kRequeue:
          return Requeue("owner-lost", "ClusterLost", why);
        case OnClusterLoss::kFail:
          return Finish("owner-lost", JobPhase::kFailed, "ClusterLost", why + "; onClusterLoss is Fail");
        case OnClusterLoss::kWait: {
          Plan plan;
          plan.step = "owner-lost";
          std::string msg = why + "; onClusterLoss is Wait: waiting for it to return";
          if (job_.conditions_json.find("OwnerLost") == std::string::npos) {
            DispatchUpdate u = Guarded(job_);
            u.message = msg;
            u.conditions_json = Conditions("OwnerUnreachable", "OwnerLost", msg, in_.now_ms);
            u.events.push_back(Event("ClusterLost", msg, owner, "Warning"));
            plan.write = std::move(u);
          }
          plan.requeue_ms = opt_.retry_ms;
          return plan;
        }
      }
    }
    Plan plan;
    plan.step = "owner-lost";
    plan.requeue_ms = std::clamp<int64_t>(opt_.cluster_lost_timeout_ms - lost, 200, opt_.retry_ms);
    return plan;
  }
  Plan plan;
  const ObservedWorkload* w = WorkloadIn(owner);
  const ObservedJob* j = JobIn(owner);
  const bool job_done = j && (j->state == RemoteJobState::kSucceeded || j->state == RemoteJobState::kFailed);
  // Step 10. An at-most-once job (onClusterLoss Fail or Wait; its real job
  // carries gantry.dev/at-most-once) is never dispatched again once leased:
  // its job may have started at any moment since, and nothing a worker shows
  // after an eviction proves that it did not. It fails instead.
  if (!job_done) {
    const bool at_most_once = in_.spec->on_cluster_loss != OnClusterLoss::kRequeue;
    std::string reason, message;
    if (w && w->evicted) {
      reason = "Evicted";
      message = fmt::format("{} evicted the job's Workload ({}: {})", owner, w->reason, w->message);
    } else if (!w && !j) {
      reason = "WorkloadGone";
      message = fmt::format("the admitted Workload vanished from {}", owner);
    }
    if (!reason.empty()) {
      if (!at_most_once) return Requeue("evicted", reason, message);
      return Finish("evicted", JobPhase::kFailed, reason,
                    fmt::format("{}; onClusterLoss is {}: an at-most-once job is not dispatched again once leased",
                                message, OnClusterLossName(in_.spec->on_cluster_loss)));
    }
  }
  // Step 11.
  if (job_done) {
    bool ok = j->state == RemoteJobState::kSucceeded;
    std::string msg = fmt::format("{} in {}: {}{}", ok ? "succeeded" : "failed", owner,
                                  j->reason.empty() ? (ok ? "Complete" : "Failed") : j->reason,
                                  j->message.empty() ? "" : " (" + j->message + ")");
    Plan p = Finish("finish", ok ? JobPhase::kSucceeded : JobPhase::kFailed, ok ? "Succeeded" : "Failed", msg);
    p.write->remote_status = j->summary;
    return p;
  }
  if (!j && w && w->finished) {  // kinds without a job watch: the Workload tells
    bool ok = w->reason != "Failed";
    return Finish("finish", ok ? JobPhase::kSucceeded : JobPhase::kFailed, ok ? "Succeeded" : "Failed",
                  fmt::format("finished in {}: {} {}", owner, w->reason, w->message));
  }
  // Step 12.
  plan.step = "run";
  if (!j) {
    plan.actions.push_back(CreateJobAction(in_, owner, job_.epoch));
    plan.requeue_ms = opt_.retry_ms;
    return plan;
  }
  if (j->state == RemoteJobState::kRunning && job_.phase == JobPhase::kAdmitted) {
    DispatchUpdate u = Guarded(job_);
    u.phase = JobPhase::kRunning;
    u.message = fmt::format("running in {}", owner);
    u.remote_status = j->summary;
    u.events.push_back(Event("Started", fmt::format("the job runs in {} at epoch {}", owner, job_.epoch), owner));
    plan.write = std::move(u);
  } else if (j->summary != job_.remote_status) {
    DispatchUpdate u = Guarded(job_);
    u.remote_status = j->summary;
    plan.write = std::move(u);
  }
  plan.requeue_ms = opt_.resync_ms;
  return plan;
}

// Step 9's Wait flag (condition OwnerUnreachable, reason OwnerLost) is
// lifted once the owner answers again, whichever step decided meanwhile: the
// job runs on there, or has finished or been evicted while out of reach.
void Ladder::OwnerReturned(Plan& plan) const {
  const std::string& owner = job_.cluster;
  if (!Reachable(owner) || job_.conditions_json.find("OwnerLost") == std::string::npos) return;
  if (!plan.write) plan.write = Guarded(job_);
  DispatchUpdate& u = *plan.write;
  if (!u.conditions_json) u.conditions_json = "[]";
  if (!u.message) {
    u.message = job_.phase == JobPhase::kRunning ? fmt::format("running in {}", owner)
                                                 : fmt::format("admitted by {} at epoch {}", owner, job_.epoch);
  }
  u.events.insert(u.events.begin(),
                  Event("ClusterReturned", fmt::format("owner cluster {} answers again", owner), owner));
}

}  // namespace

Action CreateWorkloadAction(const DecideInput& in, const std::string& cluster, int64_t epoch) {
  auto f = in.clusters.find(cluster);
  WorkloadParams p;
  p.spec = in.spec;
  p.job_uid = in.job->uid;
  p.epoch = epoch;
  p.origin = in.options.origin;
  if (f != in.clusters.end()) {
    p.local_queue = inventory::LocalQueueFor(f->second.config, in.spec->ns, in.spec->queue);
    p.version = f->second.config.kueue_api_version;
  } else {
    p.local_queue = in.spec->queue;
  }
  Action a;
  a.verb = Verb::kCreate;
  a.cluster = cluster;
  a.kind = kWorkload;
  a.ns = in.job->ns;
  a.name = RemoteName(in.job->name, in.job->uid);
  a.epoch = epoch;
  a.path = WorkloadPath(p.version, a.ns);
  a.body = BuildWorkload(p);
  return a;
}

Action CreateJobAction(const DecideInput& in, const std::string& cluster, int64_t epoch) {
  auto f = in.clusters.find(cluster);
  RemoteJobParams p;
  p.spec = in.spec;
  p.job_uid = in.job->uid;
  p.epoch = epoch;
  p.origin = in.options.origin;
  p.local_queue = f != in.clusters.end() ? inventory::LocalQueueFor(f->second.config, in.spec->ns, in.spec->queue)
                                         : in.spec->queue;
  p.workload_name = RemoteName(in.job->name, in.job->uid);
  Action a;
  a.verb = Verb::kCreate;
  a.cluster = cluster;
  a.kind = kJob;
  a.ns = in.job->ns;
  a.name = p.workload_name;
  a.epoch = epoch;
  auto path = JobPath(in.spec->template_object, a.ns);
  a.path = path.ok() ? *path : "";
  a.body = BuildRemoteJob(p);
  return a;
}

Plan Decide(const DecideInput& in) { return Ladder(in).Run(); }

}  // namespace gantry::dispatch
