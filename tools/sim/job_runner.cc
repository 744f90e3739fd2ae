// The job side of KueueController: adopting jobs into their prebuilt
// Workloads, running them for their duration, finishing them, and stopping
// them on eviction or deletion. Every start and stop goes to the journal.
#include <algorithm>

#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "gantry/common/json_path.h"
#include "kueue_controller.h"
#include "resources.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

const std::string& KindFor(const std::string& resource) { return ResourceByPlural(resource).kind; }

bool JobFinished(const json& job) {
  return HasCondition(job, "Complete") || HasCondition(job, "Failed") || HasCondition(job, "Completed");
}

// Counts and spec.suspend are read leniently: ValidateRunnable has refused
// wrong types, but null (unset) may still be there.

// spec.suspend, false when unset.
bool Suspended(const json& job) {
  const json* suspend = JsonAt(job, {"spec", "suspend"});
  return suspend && suspend->is_boolean() && suspend->get<bool>();
}

int64_t PodCount(const std::string& resource, const json& job) {
  if (resource == "jobs") return JsonIntAt(job, {"spec", "parallelism"}, 1);
  if (resource == "trainjobs") return JsonIntAt(job, {"spec", "trainer", "numNodes"}, 1);
  int64_t n = 0;
  const json* rjs = JsonAt(job, {"spec", "replicatedJobs"});
  if (rjs == nullptr || !rjs->is_array()) return n;
  for (const json& rj : *rjs) {
    n += JsonIntAt(rj, {"replicas"}, 1) * JsonIntAt(rj, {"template", "spec", "parallelism"}, 1);
  }
  return n;
}

std::string RunKey(const std::string& resource, const std::string& ns, const std::string& name) {
  return resource + "/" + ns + "/" + name;
}

}  // namespace

std::string KueueController::RunKeyForWorkload(const std::string& wl_key) const {
  auto it = run_of_workload_.find(wl_key);
  return it == run_of_workload_.end() ? "" : it->second;
}

KueueController::RunningJob KueueController::EraseRun(std::map<std::string, RunningJob>::iterator it) {
  RunningJob run = std::move(it->second);
  deadlines_.erase({run.finish_ms, it->first});
  auto owner = run_of_workload_.find(run.workload_key);
  if (owner != run_of_workload_.end() && owner->second == it->first) run_of_workload_.erase(owner);
  running_.erase(it);
  return run;
}

bool KueueController::TryAdopt(const std::string& resource, const json& job, int64_t now_ms) {
  std::string prebuilt = LabelOrAnnotation(job, kPrebuiltWorkloadKey);
  if (prebuilt.empty()) return false;
  if (JsonAt(job, {"metadata", "deletionTimestamp"})) return false;  // being deleted: it starts nothing
  // Its last run's pods still stopping (terminationGrace): once they are
  // gone (EndTerminatingRuns looks at its Workload again).
  if (Stopping(JsonStringAt(job, {"metadata", "uid"}))) return false;
  std::string ns = NamespaceOf(job);
  const json* wl = store_->Get("workloads", ns, prebuilt);
  if (!wl || !HasCondition(*wl, "Admitted") || HasCondition(*wl, "Finished") || HasCondition(*wl, "Evicted")) {
    return false;
  }
  std::string job_uid = job["metadata"].value("uid", "");
  for (const json& ref : (*wl)["metadata"].value("ownerReferences", json::array())) {
    if (ref.value("controller", false) && ref.value("uid", "") != job_uid) return false;  // another job's
  }
  std::string wl_key = ns + "/" + prebuilt;
  if (!RunKeyForWorkload(wl_key).empty()) return false;
  json owner = json::array({{{"apiVersion", job.value("apiVersion", "")}, {"kind", KindFor(resource)},
                              {"name", NameOf(job)}, {"uid", job_uid}, {"controller", true},
                              {"blockOwnerDeletion", true}}});
  (void)store_->Mutate("workloads", ns, prebuilt,
                       [&](json& owned) { owned["metadata"]["ownerReferences"] = std::move(owner); });
  StartRun(resource, job, wl_key, now_ms);
  return true;
}

void KueueController::StartRun(const std::string& resource, json job, const std::string& wl_key, int64_t now_ms) {
  int64_t duration = config_.job_duration_ms;
  if (std::string d = Annotation(job, kDurationAnnotation); !d.empty()) {
    if (auto ms = ParseDurationMs(d); ms.ok()) duration = *ms;
  }
  RunningJob run{resource, NamespaceOf(job), NameOf(job), wl_key, now_ms + duration,
                 Annotation(job, kOutcomeAnnotation) == "Failed", 0, JsonStringAt(job, {"metadata", "uid"})};
  Run entry{config_.name, KindFor(resource), run.ns, run.name, Label(job, kJobUidLabel),
            Annotation(job, kEpochAnnotation), Annotation(job, kAtMostOnceAnnotation) == "true", now_ms, 0, ""};
  run.journal_id = journal_->Start(std::move(entry));
  job["spec"]["suspend"] = false;
  int64_t pods = PodCount(resource, job);
  if (resource == "jobs") {
    job["status"]["active"] = pods;
    job["status"]["ready"] = pods;
    job["status"]["startTime"] = FormatRfc3339(now_ms);
  } else if (resource == "jobsets") {
    job["status"]["replicatedJobsStatus"] = json::array({{{"name", "all"}, {"active", pods}, {"ready", pods}}});
  }
  SetCondition(&job, "Suspended", false, "JobResumed", "Job resumed", now_ms);
  (void)store_->Update(resource, std::move(job));
  std::string key = RunKey(resource, run.ns, run.name);
  if (auto old = running_.find(key); old != running_.end()) EraseRun(old);
  deadlines_.emplace(run.finish_ms, key);
  if (!wl_key.empty()) run_of_workload_[wl_key] = key;
  running_.emplace(key, std::move(run));
}

void KueueController::FinishDueRuns(int64_t now_ms) {
  if (deadlines_.empty() || deadlines_.begin()->first > now_ms) return;
  std::vector<std::string> due;
  for (auto it = deadlines_.begin(); it != deadlines_.end() && it->first <= now_ms; ++it) due.push_back(it->second);
  // Run key order, the order in which a walk over running_ finishes them.
  std::sort(due.begin(), due.end());
  for (const std::string& key : due) FinishRun(key, now_ms);
}

void KueueController::FinishRun(const std::string& run_key, int64_t now_ms) {
  auto it = running_.find(run_key);
  if (it == running_.end()) return;
  RunningJob run = EraseRun(it);
  std::string reason = run.fail ? "Failed" : "Succeeded";
  journal_->Stop(run.journal_id, now_ms, reason);
  auto finish_job = [&](json& job) {
    int64_t pods = PodCount(run.resource, job);
    if (run.resource == "jobs") {
      job["status"]["active"] = 0;
      job["status"]["ready"] = 0;
      job["status"][run.fail ? "failed" : "succeeded"] = run.fail ? 1 : JsonIntAt(job, {"spec", "completions"}, pods);
      if (!run.fail) job["status"]["completionTime"] = FormatRfc3339(now_ms);
      SetCondition(&job, run.fail ? "Failed" : "Complete", true, run.fail ? "BackoffLimitExceeded" : "CompletionsReached",
                   run.fail ? "Job has reached the specified backoff limit" : "Reached expected number of succeeded pods",
                   now_ms);
    } else if (run.resource == "jobsets") {
      job["status"]["replicatedJobsStatus"] =
          json::array({{{"name", "all"}, {run.fail ? "failed" : "succeeded", pods}, {"active", 0}}});
      job["status"]["terminalState"] = run.fail ? "Failed" : "Completed";
      SetCondition(&job, run.fail ? "Failed" : "Completed", true, run.fail ? "FailedJobs" : "AllJobsCompleted",
                   run.fail ? "jobset failed" : "jobset completed successfully", now_ms);
    } else {  // trainjobs
      SetCondition(&job, run.fail ? "Failed" : "Complete", true, run.fail ? "JobsFailed" : "JobsCompleted",
                   run.fail ? "TrainJob failed" : "TrainJob completed", now_ms);
    }
  };
  // Status only: edited in place (NotFound when the job is gone: nothing to do).
  (void)store_->Mutate(run.resource, run.ns, run.name, finish_job);
  if (!run.workload_key.empty()) {
    auto slash = run.workload_key.find('/');
    (void)store_->Mutate("workloads", run.ns, run.workload_key.substr(slash + 1), [&](json& wl) {
      SetCondition(&wl, "Finished", true, reason,
                   run.fail ? "Job failed (simulated)" : "Job finished successfully (simulated)", now_ms);
    });
    Release(run.workload_key);
  }
}

void KueueController::StopRun(const std::string& run_key, const std::string& reason, bool suspend_job,
                              int64_t now_ms) {
  auto it = running_.find(run_key);
  if (it == running_.end()) return;
  RunningJob run = EraseRun(it);
  if (config_.termination_grace_ms > 0) {
    // Its pods stop over their grace period: the run ends then.
    terminating_[run.journal_id] = {now_ms + config_.termination_grace_ms, reason, run_key, run.uid,
                                    run.workload_key, false};
  } else {
    journal_->Stop(run.journal_id, now_ms, reason);
  }
  // The Workload is free again: a job waiting on it may adopt it now.
  if (!run.workload_key.empty()) touched_.insert(run.workload_key);
  if (!suspend_job) return;
  if (!run.workload_key.empty()) AddWaitingJob(run.resource, run.ns, run.name, run.workload_key);
  if (const json* cur = store_->Get(run.resource, run.ns, run.name)) {
    json job = *cur;
    job["spec"]["suspend"] = true;
    if (run.resource == "jobs") {
      job["status"]["active"] = 0;
      job["status"]["ready"] = 0;
      job["status"].erase("startTime");
    } else if (run.resource == "jobsets") {
      job["status"]["replicatedJobsStatus"] = json::array({{{"name", "all"}, {"active", 0}, {"suspended", 1}}});
    }
    SetCondition(&job, "Suspended", true, "JobSuspended", "Job suspended: " + reason, now_ms);
    (void)store_->Update(run.resource, std::move(job));
  }
}

void KueueController::OnJobCreated(const std::string& resource, const json& job, int64_t now_ms) {
  if (TryAdopt(resource, job, now_ms)) return;
  bool suspended = Suspended(job);
  if (std::string prebuilt = LabelOrAnnotation(job, kPrebuiltWorkloadKey); !prebuilt.empty()) {
    if (!suspended) {  // Kueue suspends a queued job until its Workload is admitted
      json updated = job;
      updated["spec"]["suspend"] = true;
      (void)store_->Update(resource, std::move(updated));
    }
    AddWaitingJob(resource, NamespaceOf(job), NameOf(job), NamespaceOf(job) + "/" + prebuilt);
    return;
  }
  if (!suspended) StartRun(resource, job, "", now_ms);  // not Kueue-managed: runs at once
}

void KueueController::OnJobDeleted(const std::string& resource, const json& job, int64_t now_ms) {
  std::string ns = NamespaceOf(job);
  const std::string run_key = RunKey(resource, ns, NameOf(job));
  RemoveWaitingJob(run_key);
  StopRun(run_key, "Deleted", false, now_ms);  // its pods may outlive it (terminationGrace)
  std::string prebuilt = LabelOrAnnotation(job, kPrebuiltWorkloadKey);
  if (prebuilt.empty()) return;
  const json* wl = store_->Get("workloads", ns, prebuilt);
  if (!wl) return;
  std::string job_uid = job["metadata"].value("uid", "");
  for (const json& ref : (*wl)["metadata"].value("ownerReferences", json::array())) {
    if (ref.value("uid", "") == job_uid) {  // garbage-collected with its owner
      auto deleted = store_->Delete("workloads", ns, prebuilt);
      if (deleted.ok()) OnWorkloadDeleted(*deleted, now_ms);
      return;
    }
  }
}

bool KueueController::OnJobDeletingForeground(const std::string& resource, const json& job, int64_t now_ms) {
  if (config_.termination_grace_ms <= 0) return false;
  const std::string run_key = RunKey(resource, NamespaceOf(job), NameOf(job));
  RemoveWaitingJob(run_key);
  StopRun(run_key, "Deleted", false, now_ms);  // its pods start stopping now, if they had not
  const std::string uid = JsonStringAt(job, {"metadata", "uid"});
  bool stopping = false;
  for (auto& [id, t] : terminating_) {
    if (t.uid != uid) continue;
    t.remove_object = true;
    stopping = true;
  }
  return stopping;
}

bool KueueController::Stopping(const std::string& uid) const {
  return std::any_of(terminating_.begin(), terminating_.end(), [&](const auto& t) { return t.second.uid == uid; });
}

void KueueController::EndTerminatingRuns(int64_t now_ms) {
  for (auto it = terminating_.begin(); it != terminating_.end();) {
    if (it->second.end_ms > now_ms) {
      ++it;
      continue;
    }
    const std::size_t journal_id = it->first;
    const Terminating t = std::move(it->second);
    it = terminating_.erase(it);
    journal_->Stop(journal_id, now_ms, t.reason);
    if (!t.workload_key.empty()) {
      touched_.insert(t.workload_key);  // a job waiting on it may be adopted now
      dirty_ = true;
    }
    if (!t.remove_object || Stopping(t.uid)) continue;  // the object goes with its last run
    // Its dependents gone, the foreground deletion completes: the object
    // goes, and what it owns with it. Only that object: deleted otherwise
    // meanwhile, its name may hold another by now.
    const std::size_t first = t.run_key.find('/'), second = t.run_key.find('/', first + 1);
    const std::string resource = t.run_key.substr(0, first);
    const std::string ns = t.run_key.substr(first + 1, second - first - 1), name = t.run_key.substr(second + 1);
    const json* cur = store_->Get(resource, ns, name);
    if (!cur || JsonStringAt(*cur, {"metadata", "uid"}) != t.uid) continue;
    auto deleted = store_->Delete(resource, ns, name);
    if (deleted.ok()) OnJobDeleted(resource, *deleted, now_ms);
  }
}

void KueueController::OnJobUpdated(const std::string& resource, const json& job) {
  std::string prebuilt = LabelOrAnnotation(job, kPrebuiltWorkloadKey);
  if (prebuilt.empty()) return;
  std::string wl_key = NamespaceOf(job) + "/" + prebuilt;
  AddWaitingJob(resource, NamespaceOf(job), NameOf(job), wl_key);
  touched_.insert(wl_key);
  // A suspended job may be adoptable now (patched to name an admitted
  // Workload): the next tick must run its pass to retry it.
  if (Suspended(job)) dirty_ = true;
}

void KueueController::AddWaitingJob(const std::string& resource, const std::string& ns, const std::string& name,
                                    const std::string& workload_key) {
  std::string run_key = RunKey(resource, ns, name);
  RemoveWaitingJob(run_key);
  waiting_jobs_[run_key] = {resource, ns, name, workload_key};
  jobs_waiting_on_[workload_key].insert(run_key);
}

void KueueController::RemoveWaitingJob(const std::string& run_key) {
  auto it = waiting_jobs_.find(run_key);
  if (it == waiting_jobs_.end()) return;
  auto on = jobs_waiting_on_.find(it->second.workload_key);
  if (on != jobs_waiting_on_.end() && on->second.erase(run_key) && on->second.empty()) jobs_waiting_on_.erase(on);
  waiting_jobs_.erase(it);
}

// Retries the jobs waiting on Workloads that changed since the last pass.
// A job leaves the waiting set when adopted, gone, finished, running or no
// longer suspended; whatever could make it adoptable again (a stop, an API
// patch) files it again.
void KueueController::AdoptWaitingJobs(int64_t now_ms) {
  // Run keys sort jobs before jobsets, then by namespace/name: the order a
  // walk over the stored jobs and then jobsets tries them in.
  std::set<std::string> candidates;
  for (const std::string& wl_key : touched_) {
    auto on = jobs_waiting_on_.find(wl_key);
    if (on != jobs_waiting_on_.end()) candidates.insert(on->second.begin(), on->second.end());
  }
  touched_.clear();
  for (const std::string& run_key : candidates) {
    auto w = waiting_jobs_.find(run_key);
    if (w == waiting_jobs_.end()) continue;
    const WaitingJob waiting = w->second;
    const json* job = store_->Get(waiting.resource, waiting.ns, waiting.name);
    if (!job || !Suspended(*job) || JobFinished(*job) || running_.count(run_key)) {
      RemoveWaitingJob(run_key);
      continue;
    }
    std::string prebuilt = LabelOrAnnotation(*job, kPrebuiltWorkloadKey);
    if (prebuilt.empty()) {
      RemoveWaitingJob(run_key);
      continue;
    }
    json copy = *job;  // the store's object changes under TryAdopt
    if (TryAdopt(waiting.resource, copy, now_ms)) {
      RemoveWaitingJob(run_key);
    } else if (waiting.workload_key != waiting.ns + "/" + prebuilt) {
      AddWaitingJob(waiting.resource, waiting.ns, waiting.name, waiting.ns + "/" + prebuilt);
    }
  }
}

}  // namespace gantry::sim
