// Engine: running a plan's remote actions. The actions of one pass go out in
// waves: a wave holds at most one action per cluster, and every request of a
// wave is sent before any answer is read, so a nomination's creates in eight
// clusters take one round trip instead of eight, and the thread sleeps once
// per wave instead of once per call. Within a cluster the plan's order is
// kept: a later action for the same cluster goes in a later wave, which
// starts only after the earlier one's answer (a create waits for the delete
// before it, see below).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include "gantry/common/cut_text.h"
#include "gantry/common/json_path.h"
#include "gantry/dispatch/engine.h"
#include "gantry/dispatch/remote_objects.h"
#include "ladder.h"
#include "stragglers.h"

namespace gantry::dispatch {
namespace {

std::string Label(const nlohmann::json& object, const char* key) {
  const nlohmann::json* labels = nullptr;
  if (object.contains("metadata") && object["metadata"].contains("labels")) labels = &object["metadata"]["labels"];
  if (!labels || !labels->is_object() || !labels->contains(key) || !(*labels)[key].is_string()) return "";
  return (*labels)[key].get<std::string>();
}

// A 403 that passes: a ResourceQuota on the object count of the kind
// ("exceeded quota: ..."), or a namespace being deleted ("... because it is
// being terminated"), as the apiserver words them. Retried, not a refusal.
bool PassingForbidden(const std::string& message) {
  return message.find("exceeded quota") != std::string::npos ||
         message.find("is being terminated") != std::string::npos;
}

// An answer that sending the same request again will not change: the
// object refused (400, 422; 413: larger than the cluster takes), or
// forbidden for good (403, unless passing).
bool RefusedForGood(int status, const std::string& message) {
  return status == 422 || status == 400 || status == 413 || (status == 403 && !PassingForbidden(message));
}

// The key under which a kDeleteUnseen is remembered as asked (UnseenAsks).
std::string UnseenKey(const JobRecord& job, const Action& action) {
  return UnseenAsks::Key(job.uid, action.cluster, action.kind, action.epoch);
}

const char* VerbName(Verb verb) {
  switch (verb) {
    case Verb::kCreate: return "create";
    case Verb::kDelete: return "delete";
    case Verb::kOpenGate: return "open the preemption gate of";
    case Verb::kDeleteUnseen: return "look up and delete";
  }
  return "?";
}

// A cluster's answer kept in a message (a webhook's can be long).
std::string Cut(const std::string& answer) { return CutText(answer, 300); }

}  // namespace

void Engine::WarnNotSent(const Action& action, const std::string& why) {
  LogLimiter* limiter = nullptr;
  {
    std::lock_guard lock(not_sent_mu_);
    limiter = &not_sent_log_.try_emplace(action.cluster).first->second;  // never erased: stays valid
  }
  if (int64_t held = 0; limiter->Allow(clock_.MonotonicMillis(), &held)) {
    spdlog::warn("dispatch: {} {} in {} not sent: {}{}", VerbName(action.verb), action.path, action.cluster, why,
                 limiter->HeldText(held));
  }
}

void Engine::WarnStoreWriteFailed(const std::string& ns, const std::string& name, const Status& error) {
  if (int64_t held = 0; store_write_failed_log_.Allow(clock_.MonotonicMillis(), &held)) {
    spdlog::warn("dispatch: job {}/{}: store write failed: {}{}", ns, name, error.ToString(),
                 store_write_failed_log_.HeldText(held));
  }
}

std::optional<kube::ClientPool::Lease> Engine::StartAction(const JobRecord& job, const Action& action) {
  if (action.verb == Verb::kCreate && action.path.empty()) return std::nullopt;  // FinishAction says why
  auto pool = pools_->For(action.cluster);
  if (!pool) return std::nullopt;
  auto lease = pool->Acquire();
  if (!lease.ok()) {  // the action is retried by the job's next pass
    WarnNotSent(action, lease.status().message());
    return std::nullopt;
  }
  if (action.verb == Verb::kDeleteUnseen) {
    // Nothing goes out ahead: FinishAction GETs the object, then decides.
  } else if (action.verb == Verb::kOpenGate) {
    (*lease)->StartMergePatch(action.path, action.body, kube::KubeClient::Body::kOnlyOnError);
  } else if (action.verb == Verb::kDelete) {
    kube::DeleteOptions opts;
    opts.propagation_policy = action.foreground ? "Foreground" : "Background";
    opts.precondition_uid = action.precondition_uid;
    // The object as deleted is read only when how its run ended is to be told.
    (*lease)->StartDelete(action.path, opts,
                          action.tell_end_when_deleted ? kube::KubeClient::Body::kParse
                                                       : kube::KubeClient::Body::kOnlyOnError);
  } else if (action.kind == kJob) {
    {
      std::lock_guard seen(cancel_seen_mu_);
      if (cancel_seen_.count(job.uid)) {
        spdlog::info("dispatch: job {}/{}: its cancel was acknowledged; its create in {} is not sent", job.ns,
                     job.name, action.cluster);
        return std::nullopt;  // the next pass sees the cancel
      }
      // Until its answer is read (the client may send it again until then):
      // RunActions and Execute call SendingDone, whatever happens.
      sending_[job.uid];
    }
    (*lease)->StartCreate(action.path, action.body, kube::KubeClient::Body::kOnlyOnError);
  } else {
    (*lease)->StartCreate(action.path, action.body, kube::KubeClient::Body::kOnlyOnError);
  }
  return std::move(*lease);
}

namespace {

// The kind of an action's object as the cluster knows it: a real job's own
// kind (JobSet, TrainJob), not the intents' "Job".
std::string KindOf(const Action& action) {
  if (action.kind != kJob || !action.body.is_object()) return action.kind;
  auto kind = action.body.find("kind");
  return kind != action.body.end() && kind->is_string() ? kind->get<std::string>() : action.kind;
}

// Raises *at_least to the answer's Retry-After, in ms.
void NoteRetryAfter(const Result<kube::KubeReply>& reply, int64_t* at_least) {
  if (!at_least || !reply.ok() || !reply->error || reply->error->retry_after_seconds <= 0) return;
  *at_least = std::max<int64_t>(*at_least, int64_t{reply->error->retry_after_seconds} * 1000);
}

}  // namespace

bool Engine::FinishAction(const JobRecord& job, const Action& action, std::optional<kube::ClientPool::Lease>& lease,
                          Refusal* refusal, int64_t* retry_after_ms) {
  if (action.verb == Verb::kCreate && action.path.empty()) {
    *refusal = {"Refused",
                fmt::format("cannot create the job in {}: the template's kind has no REST path", action.cluster)};
    return false;
  }
  if (!lease) return false;  // no connection to the cluster now
  kube::KubeClient& client = **lease;
  if (action.verb == Verb::kDeleteUnseen) return DeleteUnseen(job, action, client);
  if (action.verb == Verb::kOpenGate) {
    auto reply = client.Finish();
    NoteRetryAfter(reply, retry_after_ms);
    if (metrics_) metrics_->RemoteCall(action.cluster, "patch", reply.ok() ? reply->status : 0);
    if (reply.ok() && reply->ok()) {
      spdlog::info("dispatch: {}/{} may preempt in {} (its Workload copy's preemption gate is open)", action.ns,
                   action.name, action.cluster);
      return true;
    }
    // RBAC without patch on workloads/status, or a Kueue that refuses the
    // field: sending it again will not help (RecordCopyRefusals keeps the
    // answer). Changed since gantry read it (409: the patch names the
    // resourceVersion it read), gone meanwhile (404), or unreachable: the
    // next pass patches the copy as it shows then; the intent keeps the
    // gate's decision.
    const std::string answer = reply.ok() && reply->error ? reply->error->message : "";
    if (reply.ok() && reply->status == 409) {
      spdlog::info("dispatch: {}/{} in {} changed before its preemption gate opened; opened from the next view: {}",
                   action.ns, action.name, action.cluster, Cut(answer));
      return false;
    }
    if (reply.ok() && RefusedForGood(reply->status, answer)) {
      *refusal = {"PreemptionGateRefused",
                  fmt::format("cluster {} refused to open the preemption gate of Workload {}/{}: HTTP {} {}",
                              action.cluster, action.ns, action.name, reply->status, Cut(answer))};
      return false;
    }
    spdlog::warn("dispatch: opening the preemption gate of {}/{} in {}: {}", action.ns, action.name, action.cluster,
                 !reply.ok() ? reply.status().ToString()
                             : fmt::format("HTTP {} {}", reply->status, reply->error ? reply->error->message : ""));
    return false;
  }
  if (action.verb == Verb::kDelete) {
    auto reply = client.Finish();
    NoteRetryAfter(reply, retry_after_ms);
    if (metrics_) metrics_->RemoteCall(action.cluster, "delete", reply.ok() ? reply->status : 0);
    if (!reply.ok()) {
      spdlog::debug("dispatch: delete {} in {}: {}", action.path, action.cluster, reply.status().ToString());
      refusal->failed = Cut(reply.status().message());  // for ActionErrors: gantry status shows it
      return false;
    }
    if (reply->ok() && action.tell_end_when_deleted && reply->body.is_object()) {
      const std::optional<ObservedJob> j = ParseJob(JsonStringAt(reply->body, {"kind"}), reply->body);
      if (j && ladder::RunEnded(*j)) {
        refusal->told = EarlierRunEndedText(job, action.cluster, *j);
      }
    }
    // Gone already, or a newer incarnation (precondition failed): fine either way.
    if (reply->ok() || reply->status == 404 || reply->status == 409) return true;
    spdlog::warn("dispatch: delete {} in {}: HTTP {} {}", action.path, action.cluster, reply->status,
                 reply->error ? reply->error->message : "");
    refusal->failed = fmt::format("HTTP {} {}", reply->status, Cut(reply->error ? reply->error->message : ""));
    return false;
  }
  auto reply = client.Finish();
  NoteRetryAfter(reply, retry_after_ms);
  if (metrics_) metrics_->RemoteCall(action.cluster, "create", reply.ok() ? reply->status : 0);
  if (!reply.ok()) {
    spdlog::debug("dispatch: create {} {} in {}: {}", action.kind, action.name, action.cluster,
                  reply.status().ToString());
    refusal->failed = Cut(reply.status().message());
    refusal->maybe_landed = client.last_sent();  // written, perhaps carried out, its answer lost
    return false;
  }
  if (reply->ok()) return true;
  if (reply->status == 409 && reply->error && reply->error->reason == "AlreadyExists") {
    auto existing = client.Get(action.path + "/" + action.name);
    if (metrics_) metrics_->RemoteCall(action.cluster, "get", existing.ok() ? existing->status : 0);
    if (!existing.ok() || !existing->ok()) {
      refusal->maybe_landed = true;  // the name is held, perhaps by an earlier create of ours
      return false;  // gone meanwhile, or unreachable: next pass
    }
    if (Label(existing->body, kOriginLabel) == options_.decide.origin &&
        Label(existing->body, kJobUidLabel) == job.uid) {
      const std::string epoch = JsonStringAt(existing->body, {"metadata", "annotations", kEpochAnnotation});
      if (epoch == std::to_string(action.epoch)) {
        spdlog::debug("dispatch: create {} {}/{} in {}: already there, and ours (an earlier attempt)", action.kind,
                      action.ns, action.name, action.cluster);
        return true;
      }
      // Another epoch's object under the name, being fenced: this create
      // is not done; it is sent again once the view shows that one gone.
      spdlog::info("dispatch: create {} {}/{} in {} at epoch {}: the job's epoch {} object still holds the name",
                   action.kind, action.ns, action.name, action.cluster, action.epoch, epoch);
      return false;
    }
    *refusal = {"NameTaken",
                fmt::format("{} {}/{} already exists in cluster {} and was not created by gantry for this job; "
                            "it is left alone",
                            KindOf(action), action.ns, action.name, action.cluster)};
    return false;
  }
  const std::string answer = reply->error ? reply->error->message : "";
  if (reply->resent) {
    // Answered when sent again (kube::KubeReply::resent): the first send may
    // have created the object, so no answer but a 409 says what is there.
    // The next pass sends it again: a landed create is then answered 409
    // and read back as the job's (above), a refusal is a refusal.
    spdlog::info("dispatch: create {} {}/{} in {}: HTTP {} to the request sent again; the first may have landed, "
                 "so it is sent once more before its answer is taken: {}",
                 KindOf(action), action.ns, action.name, action.cluster, reply->status, Cut(answer));
    refusal->failed = fmt::format("HTTP {} to a create sent again {}", reply->status, Cut(answer));
    refusal->maybe_landed = true;
    return false;
  }
  // The cluster refuses the object itself (a missing CRD or namespace, or a
  // schema it rejects), or forbids it (RBAC on that kind, or a policy
  // webhook's denial): retrying will not help, and the user must know. For
  // the real job the job fails; a candidate that refuses a Workload copy is
  // not asked again at this epoch, and the others carry on (RunActions).
  // A 403 for a passing state (a full object-count quota, a namespace being
  // deleted) is retried as any other failure.
  if (reply->status == 404 || RefusedForGood(reply->status, answer)) {
    *refusal = {"Refused",
                fmt::format("cluster {} refused {} {}/{}: HTTP {} {}", action.cluster, KindOf(action), action.ns,
                            action.name, reply->status, Cut(answer)),
                reply->status == 403 || reply->status == 404};
    return false;  // the caller logs what it does about it
  }
  spdlog::warn("dispatch: create {} {}/{} in {}: HTTP {} {}: {}", KindOf(action), action.ns, action.name, action.cluster,
               reply->status, reply->error ? reply->error->reason : "", reply->error ? reply->error->message : "");
  refusal->failed = fmt::format("HTTP {} {}", reply->status, Cut(answer));
  // A 5xx may come after the object was stored (a timeout, say); a 429 or
  // a 409 comes before.
  refusal->maybe_landed = reply->status >= 500;
  return false;
}

void Engine::NoteAnswer(const std::string& uid, const Action& action, bool done, const Refusal& refusal,
                        bool had_lease) {
  // A create or a withdrawn object's delete that failed (a 500, a 429, a
  // timeout; a delete's 403: RBAC without delete there) is sent again, and
  // shown with the job's row. Done, or refused (a create's 403, the name
  // taken: deletes have no refusal), a failing run, if any, ends.
  if (action.verb == Verb::kCreate || action.verb == Verb::kDelete) {
    if (done || !refusal.message.empty()) {
      NoteActionError(uid, action, "");
    } else if (!refusal.failed.empty()) {
      NoteActionError(uid, action, refusal.failed);
    } else if (action.verb == Verb::kCreate && !had_lease && !CancelSeen(uid)) {
      NoteActionError(uid, action, "not sent: no connection to the cluster now");
    }  // else not done for a reason of its own (another epoch's object holds the name): as it was
  }
  if (!done) return;
  if (action.verb == Verb::kCreate) {
    expected_.Created(uid, action.cluster, action.kind, action.epoch, clock_.NowMillis());
  } else if (action.verb == Verb::kDelete) {
    expected_.Deleted(action.precondition_uid, clock_.NowMillis());
  }
}

bool Engine::MayHandOver(const Action& action) {
  return (action.verb == Verb::kCreate && action.kind == kWorkload) || action.verb == Verb::kDelete ||
         action.verb == Verb::kOpenGate;
}

Engine::LateAction Engine::LateAction::Of(const std::string& uid, const Action& action) {
  return {uid, action.cluster, action.kind, action.verb, action.epoch, action.precondition_uid};
}

bool Engine::Late(const std::string& uid, const Action& action) {
  std::lock_guard lock(late_mu_);
  return !late_.empty() && late_.count(LateAction::Of(uid, action)) > 0;
}

std::optional<Engine::Refusal> Engine::TakeLateRefusal(const std::string& uid, const Action& action) {
  std::lock_guard lock(late_mu_);
  if (late_refused_.empty()) return std::nullopt;
  auto it = late_refused_.find(LateAction::Of(uid, action));
  if (it == late_refused_.end()) return std::nullopt;
  Refusal r = std::move(it->second);
  late_refused_.erase(it);
  return r;
}

std::set<Expectations::Key> Engine::LateCreates(const std::string& uid, int64_t epoch) {
  std::set<Expectations::Key> out;
  std::lock_guard lock(late_mu_);
  for (const LateAction& a : late_) {
    if (a.uid == uid && a.verb == Verb::kCreate && a.epoch == epoch) out.insert({a.cluster, a.kind});
  }
  return out;
}

bool Engine::HandOver(const JobRecord& job, const Action& action, std::optional<kube::ClientPool::Lease>& lease) {
  // What FinishAction reads of the job: who it is.
  JobRecord who;
  who.uid = job.uid;
  who.ns = job.ns;
  who.name = job.name;
  const LateAction key = LateAction::Of(job.uid, action);
  {
    std::lock_guard lock(late_mu_);
    late_.insert(key);
  }
  // std::function wants a copyable task; the lease moves into a shared box.
  lease->Late();
  auto held = std::make_shared<std::optional<kube::ClientPool::Lease>>();
  held->emplace(std::move(*lease));
  lease.reset();
  const bool handed = stragglers_->Hand(action.cluster, [this, who, action, held, key] {
    Refusal refusal;
    const bool done = FinishAction(who, action, *held, &refusal);
    held->reset();  // the connection goes back to its pool
    NoteAnswer(who.uid, action, done, refusal, /*had_lease=*/true);
    spdlog::info("dispatch: job {}/{}: {} {} in {}, read after its pass went on: {}", who.ns, who.name,
                 VerbName(action.verb), action.path, action.cluster,
                 done ? "done" : "not done; the job's next pass sees to it");
    {
      std::lock_guard lock(late_mu_);
      late_.erase(key);
      // Recorded by the job's next pass, in place of sending it again.
      if (!refusal.message.empty()) late_refused_[key] = std::move(refusal);
    }
    Wake(who.uid);
  });
  if (!handed) {  // stopping: the caller reads the answer
    lease.emplace(std::move(**held));
    held->reset();
    std::lock_guard lock(late_mu_);
    late_.erase(key);
  }
  return handed;
}

bool Engine::Execute(const JobRecord& job, const Action& action, Refusal* refusal) {
  std::optional<kube::ClientPool::Lease> lease = StartAction(job, action);
  SendingRelease released{this, job.uid};  // a no-op unless StartAction marked the job
  return FinishAction(job, action, lease, refusal);
}

Engine::ActionsOutcome Engine::RunActions(const JobRecord& job, const std::vector<Action>& actions) {
  // However this ends (an exception included), a cancel never waits on a
  // create of this job's that is done with.
  SendingRelease released{this, job.uid};
  ActionsOutcome out;
  std::set<std::string> delete_failed;  // clusters where an older object may still hold our name
  std::size_t next = 0;
  while (next < actions.size()) {
    std::vector<const Action*> wave;
    std::set<std::string> in_wave;
    while (next < actions.size() && in_wave.insert(actions[next].cluster).second) wave.push_back(&actions[next++]);
    // A wave holds each connection it takes until its answers are read. Taken
    // in cluster-name order by every worker, they cannot be held in a cycle
    // (worker 1 holding c3's last and waiting for c5's, worker 2 the other
    // way round) when the workers outnumber a cluster's connections. The
    // actions of one wave go to different clusters: their order is free.
    std::sort(wave.begin(), wave.end(), [](const Action* a, const Action* b) { return a->cluster < b->cluster; });

    std::vector<std::optional<kube::ClientPool::Lease>> leases(wave.size());
    std::vector<bool> run(wave.size(), false);
    for (std::size_t i = 0; i < wave.size(); ++i) {
      const Action& action = *wave[i];
      // Deletes come first in a plan; a create after a failed delete in the
      // same cluster could have the old epoch's job adopt the new Workload.
      if (action.verb == Verb::kCreate && delete_failed.count(action.cluster)) {
        out.all_ok = false;
        continue;
      }
      if (action.verb == Verb::kDelete &&
          expected_.RecentlyDeleted(action.precondition_uid, clock_.NowMillis())) {
        continue;  // answered already; a second delete would get 404, which counts as done
      }
      // Its earlier request's answer is still awaited (stragglers_): sent
      // again, it would wait behind that one.
      if (Late(job.uid, action)) {
        out.all_ok = false;
        if (action.verb == Verb::kDelete) delete_failed.insert(action.cluster);
        continue;
      }
      if (action.kind == kWorkload && (action.verb == Verb::kCreate || action.verb == Verb::kOpenGate)) {
        if (std::optional<Refusal> refused = TakeLateRefusal(job.uid, action)) {
          out.copy_refusals.push_back({&action, std::move(*refused)});
          continue;
        }
      }
      // Asked a moment ago: its view cannot show the answer, so it is asked
      // again later (UnseenAsks), not on every pass.
      if (action.verb == Verb::kDeleteUnseen && !unseen_.Due(UnseenKey(job, action), clock_.NowMillis())) {
        continue;
      }
      run[i] = true;
      if (auto lease = StartAction(job, action)) leases[i].emplace(std::move(*lease));
    }
    const auto late_after = std::chrono::steady_clock::now() + kStragglerGrace;
    // The answers are read in this order: a real job's create first (a
    // cancel that came meanwhile waits for its answer, SendingDone, not
    // for the other clusters' too); then the requests sent; a kDeleteUnseen
    // last, as it sends nothing ahead and its two round trips (GET, then
    // DELETE) must not keep the others' answers waiting.
    auto rank = [](const Action* a) {
      return a->verb == Verb::kCreate && a->kind == kJob ? 0 : a->verb == Verb::kDeleteUnseen ? 2 : 1;
    };
    std::vector<std::size_t> order(wave.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return rank(wave[a]) < rank(wave[b]); });
    for (std::size_t i : order) {
      if (!run[i]) continue;
      const Action& action = *wave[i];
      if (leases[i] && MayHandOver(action) && !(*leases[i])->AnswerBy(late_after) &&
          HandOver(job, action, leases[i])) {
        out.all_ok = false;  // the pass after its answer sees what it did
        if (action.verb == Verb::kDelete) delete_failed.insert(action.cluster);
        continue;
      }
      Refusal refusal;
      // A real job's create marked its job as sending (StartAction) until its answer is read.
      const bool had_lease = leases[i].has_value();
      const bool marked = had_lease && action.verb == Verb::kCreate && action.kind == kJob;
      const bool done = FinishAction(job, action, leases[i], &refusal, &out.retry_after_ms);
      if (marked) SendingDone(job.uid);
      if (refusal.maybe_landed && action.kind == kJob) {
        NoteUnanswered(job.uid, action);
        expected_.MayHaveLanded(job.uid, action.cluster, action.epoch, clock_.NowMillis());
      }
      NoteAnswer(job.uid, action, done, refusal, had_lease);
      if (!done) {
        out.all_ok = false;
        if (action.verb == Verb::kDelete || action.verb == Verb::kDeleteUnseen) delete_failed.insert(action.cluster);
      } else if (action.verb == Verb::kCreate && action.kind == kJob) {
        out.job_created = &action;
      } else if (!refusal.told.empty()) {
        out.told.emplace_back(action.cluster, std::move(refusal.told));
      }
      leases[i].reset();  // the connection goes back to its pool
      if (refusal.message.empty()) continue;
      if (action.kind == kWorkload) {  // a copy's create, or its gate's opening
        out.copy_refusals.push_back({&action, std::move(refusal)});
      } else if (out.refusal.message.empty()) {
        out.refusal = std::move(refusal);
        out.refused = &action;
      }
    }
    // Someone else's object holds the real job's name, or the owner refuses
    // it: the caller fails the job, and nothing more of this plan is sent.
    if (!out.refusal.message.empty()) return out;
  }
  return out;
}

void Engine::RecordTold(const JobRecord& stored, const std::vector<std::pair<std::string, std::string>>& told) {
  DispatchUpdate u = ladder::Guarded(stored);
  for (const auto& [cluster, message] : told) {
    u.events.push_back(ladder::Event("EarlierRunEnded", message, cluster, "Warning"));
  }
  auto written = WriteSync(std::move(u));
  if (written.ok()) {
    spdlog::warn("job {}/{}: {}", stored.ns, stored.name, told.front().second);
  } else if (written.status().code() != Code::kConflict && written.status().code() != Code::kNotFound) {
    WarnStoreWriteFailed(stored.ns, stored.name, written.status());
  }
}

bool Engine::CancelSeen(const std::string& uid) {
  std::lock_guard seen(cancel_seen_mu_);
  return cancel_seen_.count(uid) > 0;
}

void Engine::SendingDone(const std::string& uid) {
  std::vector<std::function<void()>> waiting;  // the cancels that came meanwhile
  {
    std::lock_guard seen(cancel_seen_mu_);
    auto it = sending_.find(uid);
    if (it == sending_.end()) return;
    waiting = std::move(it->second);
    sending_.erase(it);
  }
  for (auto& acknowledge : waiting) acknowledge();
}

void Engine::NoteActionError(const std::string& uid, const Action& action, const std::string& error) {
  std::lock_guard lock(action_errors_mu_);
  if (error.empty()) {
    auto it = action_errors_.find(uid);
    if (it == action_errors_.end()) return;
    it->second.erase({action.cluster, action.kind, std::string(VerbName(action.verb))});
    if (it->second.empty()) action_errors_.erase(it);
    return;
  }
  ActionError& e = action_errors_[uid][{action.cluster, action.kind, std::string(VerbName(action.verb))}];
  e.cluster = action.cluster;
  e.kind = action.kind;
  e.verb = VerbName(action.verb);
  e.error = error;
  NoteFailedTry(e, action.epoch, clock_.NowMillis());
}

void Engine::NoteUnanswered(const std::string& uid, const Action& create) {
  // The latest counts: it may be the one that landed.
  std::lock_guard lock(unanswered_mu_);
  unanswered_[uid] = {create.cluster, create.epoch, clock_.NowMillis()};
}

int64_t Engine::CreateFailingMs(const std::string& uid, const std::string& cluster, int64_t epoch, bool seen,
                                std::string* error) {
  std::lock_guard lock(action_errors_mu_);
  auto it = action_errors_.find(uid);
  if (it == action_errors_.end()) return 0;
  auto e = it->second.find({cluster, std::string(kJob), std::string(VerbName(Verb::kCreate))});
  if (e == it->second.end()) return 0;
  if (seen) {
    // There after all (a create that failed landed): no run of failures
    // left to count, should it vanish and be created again later.
    it->second.erase(e);
    if (it->second.empty()) action_errors_.erase(it);
    return 0;
  }
  const int64_t failing = FailingRunMs(e->second, epoch, clock_.NowMillis());
  if (failing > 0) *error = e->second.error;
  return failing;
}

std::vector<ActionError> Engine::ActionErrors(const std::string& job_uid) const {
  std::vector<ActionError> out;
  std::lock_guard lock(action_errors_mu_);
  auto it = action_errors_.find(job_uid);
  if (it == action_errors_.end()) return out;
  for (const auto& [key, e] : it->second) out.push_back(e);
  return out;
}

bool Engine::RecordCopyRefusals(const std::string& uid, const std::vector<CopyRefusal>& refusals) {
  known_.Drop(uid);  // written below, outside the entry's bookkeeping
  auto current = store_.GetByUid(uid);
  if (!current.ok()) return current.status().code() == Code::kNotFound;
  if (current->phase != JobPhase::kNominating) return true;
  DispatchUpdate u = ladder::Guarded(*current);
  std::optional<std::vector<RemoteIntent>> rows;  // read for a gate's refusal only
  for (const CopyRefusal& r : refusals) {
    const Action& a = *r.action;
    if (a.epoch != current->epoch) continue;  // that epoch is over: its rows go anyway
    RemoteIntent i = ladder::IntentFor(a);
    if (a.verb == Verb::kOpenGate) {
      // The row as stored (its gate's time), with the answer.
      if (!rows) {
        auto read = store_.Intents(uid);
        if (!read.ok()) return false;
        rows = std::move(*read);
      }
      auto row = std::find_if(rows->begin(), rows->end(), [&](const RemoteIntent& x) {
        return x.cluster == a.cluster && x.kind == kWorkload && x.epoch == a.epoch && x.present;
      });
      if (row == rows->end()) continue;  // withdrawn meanwhile
      i = *row;
      i.gate_refusal = r.refusal.message;
    } else {
      i.present = false;
      i.refusal = r.refusal.message;
    }
    u.upsert_intents.push_back(std::move(i));
    JobEvent e;
    e.reason = r.refusal.reason;
    e.type = "Warning";
    e.message = fmt::format("{}; not asked again at epoch {}", r.refusal.message, a.epoch);
    e.cluster = a.cluster;
    u.events.push_back(std::move(e));
    spdlog::warn("job {}/{}: {}; {} at epoch {}", current->ns, current->name, r.refusal.message,
                 a.verb == Verb::kOpenGate ? "its copy there stays gated" : "that candidate is left out", a.epoch);
  }
  if (u.upsert_intents.empty()) return true;
  auto written = WriteSync(std::move(u));
  if (!Settled(written)) {
    WarnStoreWriteFailed(current->ns, current->name, written.status());
    return false;
  }
  return true;
}

bool Engine::RecordJobCreated(const JobRecord& job, const std::vector<RemoteIntent>& intents,
                              const Action& create) {
  const RemoteIntent* row = ladder::JobRowIn(intents, create.cluster, create.epoch);
  if (row == nullptr || row->created_ms > 0) return true;  // withdrawn meanwhile, or known already
  DispatchUpdate u = ladder::Guarded(job);
  RemoteIntent confirmed = *row;
  confirmed.created_ms = clock_.NowMillis();
  u.upsert_intents.push_back(std::move(confirmed));
  u.durable = true;
  known_.Drop(job.uid);  // written outside the entry's bookkeeping
  auto written = WriteSync(std::move(u));
  // The job moved on meanwhile (a watch event's pass): its next pass sees
  // the job there, or writes nothing that needs this.
  if (Settled(written)) return true;
  spdlog::warn("dispatch: job {}/{}: could not record that its job was created in {}: {}", job.ns, job.name,
               create.cluster, written.status().ToString());
  return false;
}

bool Engine::Settled(const Result<JobRecord>& written) {
  return written.ok() || written.status().code() == Code::kConflict || written.status().code() == Code::kNotFound;
}

}  // namespace gantry::dispatch
