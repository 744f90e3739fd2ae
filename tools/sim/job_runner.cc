// The job side of KueueController: adopting jobs into their prebuilt
// Workloads, running them for their duration, finishing them, and stopping
// them on eviction or deletion. Every start and stop goes to the journal.
#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "kueue_controller.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

const char* KindFor(const std::string& resource) { return resource == "jobsets" ? "JobSet" : "Job"; }

bool JobFinished(const json& job) {
  return HasCondition(job, "Complete") || HasCondition(job, "Failed") || HasCondition(job, "Completed");
}

int64_t PodCount(const std::string& resource, const json& job) {
  const json& spec = job.value("spec", json::object());
  if (resource == "jobs") return spec.value("parallelism", int64_t{1});
  int64_t n = 0;
  for (const json& rj : spec.value("replicatedJobs", json::array())) {
    int64_t par = rj.value("template", json::object()).value("spec", json::object()).value("parallelism", int64_t{1});
    n += rj.value("replicas", int64_t{1}) * par;
  }
  return n;
}

std::string RunKey(const std::string& resource, const std::string& ns, const std::string& name) {
  return resource + "/" + ns + "/" + name;
}

}  // namespace

std::string KueueController::RunKeyForWorkload(const std::string& wl_key) const {
  for (const auto& [key, run] : running_) {
    if (run.workload_key == wl_key) return key;
  }
  return "";
}

bool KueueController::TryAdopt(const std::string& resource, const json& job, int64_t now_ms) {
  std::string prebuilt = LabelOrAnnotation(job, kPrebuiltWorkloadKey);
  if (prebuilt.empty()) return false;
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
  json owned = *wl;
  owned["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", job.value("apiVersion", "")}, {"kind", KindFor(resource)}, {"name", NameOf(job)},
        {"uid", job_uid}, {"controller", true}, {"blockOwnerDeletion", true}}});
  (void)store_->Update("workloads", owned);
  StartRun(resource, job, wl_key, now_ms);
  return true;
}

void KueueController::StartRun(const std::string& resource, json job, const std::string& wl_key, int64_t now_ms) {
  int64_t duration = config_.job_duration_ms;
  if (std::string d = Annotation(job, kDurationAnnotation); !d.empty()) {
    if (auto ms = ParseDurationMs(d); ms.ok()) duration = *ms;
  }
  RunningJob run{resource, NamespaceOf(job), NameOf(job), wl_key, now_ms + duration,
                 Annotation(job, kOutcomeAnnotation) == "Failed", 0};
  Run entry{config_.name, KindFor(resource), run.ns, run.name, Label(job, kJobUidLabel),
            Annotation(job, kEpochAnnotation), Annotation(job, kAtMostOnceAnnotation) == "true", now_ms, 0, ""};
  run.journal_id = journal_->Start(std::move(entry));
  job["spec"]["suspend"] = false;
  int64_t pods = PodCount(resource, job);
  if (resource == "jobs") {
    job["status"]["active"] = pods;
    job["status"]["ready"] = pods;
    job["status"]["startTime"] = FormatRfc3339(now_ms);
  } else {
    job["status"]["replicatedJobsStatus"] = json::array({{{"name", "all"}, {"active", pods}, {"ready", pods}}});
  }
  SetCondition(&job, "Suspended", false, "JobResumed", "Job resumed", now_ms);
  (void)store_->Update(resource, job);
  running_[RunKey(resource, run.ns, run.name)] = std::move(run);
}

void KueueController::FinishRun(const std::string& run_key, int64_t now_ms) {
  RunningJob run = running_.at(run_key);
  running_.erase(run_key);
  std::string reason = run.fail ? "Failed" : "Succeeded";
  journal_->Stop(run.journal_id, now_ms, reason);
  if (const json* cur = store_->Get(run.resource, run.ns, run.name)) {
    json job = *cur;
    int64_t pods = PodCount(run.resource, job);
    if (run.resource == "jobs") {
      job["status"]["active"] = 0;
      job["status"]["ready"] = 0;
      job["status"][run.fail ? "failed" : "succeeded"] = run.fail ? 1 : job["spec"].value("completions", pods);
      if (!run.fail) job["status"]["completionTime"] = FormatRfc3339(now_ms);
      SetCondition(&job, run.fail ? "Failed" : "Complete", true, run.fail ? "BackoffLimitExceeded" : "CompletionsReached",
                   run.fail ? "Job has reached the specified backoff limit" : "Reached expected number of succeeded pods",
                   now_ms);
    } else {
      job["status"]["replicatedJobsStatus"] =
          json::array({{{"name", "all"}, {run.fail ? "failed" : "succeeded", pods}, {"active", 0}}});
      job["status"]["terminalState"] = run.fail ? "Failed" : "Completed";
      SetCondition(&job, run.fail ? "Failed" : "Completed", true, run.fail ? "FailedJobs" : "AllJobsCompleted",
                   run.fail ? "jobset failed" : "jobset completed successfully", now_ms);
    }
    (void)store_->Update(run.resource, job);
  }
  if (!run.workload_key.empty()) {
    auto slash = run.workload_key.find('/');
    if (const json* wl = store_->Get("workloads", run.ns, run.workload_key.substr(slash + 1))) {
      json updated = *wl;
      SetCondition(&updated, "Finished", true, reason,
                   run.fail ? "Job failed (simulated)" : "Job finished successfully (simulated)", now_ms);
      (void)store_->Update("workloads", updated);
    }
    Release(run.workload_key);
  }
}

void KueueController::StopRun(const std::string& run_key, const std::string& reason, bool suspend_job,
                              int64_t now_ms) {
  auto it = running_.find(run_key);
  if (it == running_.end()) return;
  RunningJob run = it->second;
  running_.erase(it);
  journal_->Stop(run.journal_id, now_ms, reason);
  if (!suspend_job) return;
  if (const json* cur = store_->Get(run.resource, run.ns, run.name)) {
    json job = *cur;
    job["spec"]["suspend"] = true;
    if (run.resource == "jobs") {
      job["status"]["active"] = 0;
      job["status"]["ready"] = 0;
      job["status"].erase("startTime");
    } else {
      job["status"]["replicatedJobsStatus"] = json::array({{{"name", "all"}, {"active", 0}, {"suspended", 1}}});
    }
    SetCondition(&job, "Suspended", true, "JobSuspended", "Job suspended: " + reason, now_ms);
    (void)store_->Update(run.resource, job);
  }
}

void KueueController::OnJobCreated(const std::string& resource, const json& job, int64_t now_ms) {
  if (TryAdopt(resource, job, now_ms)) return;
  bool suspended = job["spec"].value("suspend", false);
  if (!LabelOrAnnotation(job, kPrebuiltWorkloadKey).empty()) {
    if (!suspended) {  // Kueue suspends a queued job until its Workload is admitted
      json updated = job;
      updated["spec"]["suspend"] = true;
      (void)store_->Update(resource, updated);
    }
    return;
  }
  if (!suspended) StartRun(resource, job, "", now_ms);  // not Kueue-managed: runs at once
}

void KueueController::OnJobDeleted(const std::string& resource, const json& job, int64_t now_ms) {
  std::string ns = NamespaceOf(job);
  StopRun(RunKey(resource, ns, NameOf(job)), "Deleted", false, now_ms);
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

void KueueController::AdoptWaitingJobs(int64_t now_ms) {
  for (const char* resource : {"jobs", "jobsets"}) {
    for (const json* job : store_->All(resource)) {
      if (!(*job)["spec"].value("suspend", false) || JobFinished(*job)) continue;
      if (running_.count(RunKey(resource, NamespaceOf(*job), NameOf(*job)))) continue;
      json copy = *job;
      TryAdopt(resource, copy, now_ms);
    }
  }
}

}  // namespace gantry::sim
