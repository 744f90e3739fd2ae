// JudgeJobRefusal (decide.h): a real job refused by its owner alone.
#include <algorithm>

#include "gantry/dispatch/decide.h"

namespace gantry::dispatch {

JobRefusalJudgement JudgeJobRefusal(const JobRefusalFacts& f, const DecideOptions& opt) {
  if (f.phase != JobPhase::kAdmitted && f.phase != JobPhase::kRunning) return {JobRefusalVerdict::kFail};
  if (!f.at_most_once) return {JobRefusalVerdict::kMove};
  // Seen running, or its create confirmed: it may have started there.
  if (f.phase != JobPhase::kAdmitted || f.created_ms > 0) return {JobRefusalVerdict::kFail};
  if (f.unanswered_since_ms <= 0) return {JobRefusalVerdict::kMove};
  // A create may have landed without gantry seeing it yet. The refusal now
  // says nothing of it (RBAC is judged before the object's existence):
  // moved now, the job could run in two clusters.
  if (!f.kind_watched) return {JobRefusalVerdict::kFail};
  const int64_t due = f.unanswered_since_ms + opt.AbsenceConfirmedAfterMs();
  if (f.view_confirms_absence && f.now_ms >= due) return {JobRefusalVerdict::kMove};
  return {JobRefusalVerdict::kWait, std::max(opt.retry_ms, due - f.now_ms)};
}

}  // namespace gantry::dispatch
