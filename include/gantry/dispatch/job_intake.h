// JobIntake: how the API tells the dispatch engine about jobs. Wake (from
// JobWaker) is the level-triggered hint "look at this job again"; Created
// also hands over a job the store has just created, so that the engine's
// first pass over it reads nothing back and parses nothing again.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "gantry/common/job_waker.h"
#include "gantry/job/job_document.h"
#include "gantry/store/job_store.h"

namespace gantry::dispatch {

class JobIntake : public JobWaker {
 public:
  // Called once per new job, right after the store committed it, on the
  // store's writer thread: it must be cheap and must not block. record is
  // the job as stored; spec is the parsed document it was stored from
  // (record.spec_json == SpecToJsonText(*spec)); the callee may move
  // from *spec. The default only wakes the job.
  // spec may be null (see WantsSpec).
  virtual void Created(JobRecord record, std::shared_ptr<JobSpec> spec) {
    (void)spec;
    Wake(record.uid);
  }
  // Whether Created would keep a spec now. When not, the caller keeps it and
  // destroys it on its own thread: a spec destroyed in Created is freed on
  // the store's writer thread, whose time is every submitter's latency.
  virtual bool WantsSpec() const { return false; }
  // A cancel was recorded for the job: a Wake that goes ahead of the jobs
  // waiting for their first pass, so that a cancel is not served after a
  // burst of submissions. The default is a plain Wake.
  virtual void CancelRequested(const std::string& job_uid) { Wake(job_uid); }
  // The status message a job submitted now starts with, when the engine
  // already knows what its first pass would say (no cluster is configured):
  // the caller stores it with the job, and Created then has no pass to run.
  // Empty when the job needs its first pass.
  virtual std::string FirstMessage() const { return {}; }
  // Why the engine cannot run this job as users expect (the API refuses it,
  // 422, with this field and message); nullopt when it can. The default
  // takes every job.
  virtual std::optional<FieldError> Refuse(const JobSpec& spec) const {
    (void)spec;
    return std::nullopt;
  }
};

}  // namespace gantry::dispatch
