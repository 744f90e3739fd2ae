// ParseWorkload and ParseJob (see observer.h): what the observer keeps of a
// Workload or a job object from a watch event or a list, field by field.
// The observer's watches keep only the spec and status members read here
// (StatusFieldsRead in observer_watch.cc): a member read here must be added there.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "gantry/common/cut_text.h"
#include "gantry/common/json_path.h"
#include "gantry/dispatch/observer.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry::dispatch {
namespace {

using nlohmann::json;

// The status condition of that type, or null.
const json* Condition(const json& o, std::string_view type) {
  const json* conditions = JsonAt(o, {"status", "conditions"});
  if (!conditions || !conditions->is_array()) return nullptr;
  for (const json& c : *conditions) {
    if (JsonStringAt(c, {"type"}) == type) return &c;
  }
  return nullptr;
}

const json* TrueCondition(const json& o, std::string_view type) {
  const json* c = Condition(o, type);
  return c && JsonStringAt(*c, {"status"}) == "True" ? c : nullptr;
}

// Epochs start at 1; anything else reads as 0 ("unknown"), and so does one
// past 2^53 (an edited annotation: no job is dispatched that often, and the
// next nomination's epoch, one past the highest seen, must not overflow).
int64_t ParseEpoch(const std::string& text) {
  constexpr int64_t kMaxEpoch = int64_t{1} << 53;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() && v > 0 && v <= kMaxEpoch ? v : 0;
}

// Fills the fields ObservedWorkload and ObservedJob share; false when the
// object has no name or no job-uid label (not gantry's to track).
template <class Observed>
bool ParseMeta(const json& o, Observed* out) {
  out->name = JsonStringAt(o, {"metadata", "name"});
  out->ns = JsonStringAt(o, {"metadata", "namespace"});
  out->k8s_uid = JsonStringAt(o, {"metadata", "uid"});
  out->job_uid = JsonStringAt(o, {"metadata", "labels", kJobUidLabel});
  out->epoch = ParseEpoch(JsonStringAt(o, {"metadata", "annotations", kEpochAnnotation}));
  return !out->name.empty() && !out->job_uid.empty();
}

// Kueue names the preemptor of an evicted Workload by its uids ("Preempted
// to accommodate a workload (UID: ..., JobUID: ...) due to ..."): ids of
// another tenant's job, in a message that becomes the evicted job's event.
// They are left out (to the end of a message cut short).
void DropPreemptorIds(std::string& message) {
  static constexpr std::string_view kOpen = " (UID: ";
  for (std::size_t at = message.find(kOpen); at != std::string::npos; at = message.find(kOpen, at)) {
    const std::size_t close = message.find(')', at);
    message.erase(at, close == std::string::npos ? std::string::npos : close + 1 - at);
  }
}

void CopyReason(const json* condition, std::string* reason, std::string* message) {
  if (!condition) return;
  *reason = CleanText(JsonStringAt(*condition, {"reason"}));
  *message = CleanText(JsonStringAt(*condition, {"message"}));
  DropPreemptorIds(*message);
}

// Kueue's own causes of a deactivation that is its last word on the run
// (ObservedWorkload::deactivated_for). Kueue marks the Workload with
// DeactivationTarget (reason: the cause), sets spec.active false, then
// evicts it with reason DeactivatedDueTo<cause> (releases before v0.11
// wrote InactiveWorkload, with the cause in the message only).
std::string DeactivatedFor(const json& object, const json* evicted) {
  static constexpr std::string_view kCauses[] = {"MaximumExecutionTimeExceeded", "RequeuingLimitExceeded"};
  static constexpr std::string_view kPrefix = "DeactivatedDueTo";
  std::string reason;
  if (evicted) {
    reason = JsonStringAt(*evicted, {"reason"});
    if (reason.starts_with(kPrefix)) reason.erase(0, kPrefix.size());
  }
  if (const json* target = TrueCondition(object, "DeactivationTarget");
      target && std::find(std::begin(kCauses), std::end(kCauses), reason) == std::end(kCauses)) {
    reason = JsonStringAt(*target, {"reason"});
  }
  if (evicted && reason == "InactiveWorkload" &&
      JsonStringAt(*evicted, {"message"}).find("maximum execution time") != std::string::npos) {
    reason = "MaximumExecutionTimeExceeded";
  }
  return std::find(std::begin(kCauses), std::end(kCauses), reason) != std::end(kCauses) ? reason : "";
}

}  // namespace

std::optional<ObservedWorkload> ParseWorkload(const json& object) {
  ObservedWorkload w;
  if (!ParseMeta(object, &w)) return std::nullopt;
  const json* quota = Condition(object, "QuotaReserved");
  const json* evicted = TrueCondition(object, "Evicted");
  const json* finished = TrueCondition(object, "Finished");
  w.quota_reserved = quota && JsonStringAt(*quota, {"status"}) == "True";
  if (const json* admitted = TrueCondition(object, "Admitted")) {
    w.admitted = true;
    w.admitted_ms = ParseRfc3339(JsonStringAt(*admitted, {"lastTransitionTime"})).value_or(0);
  }
  w.evicted = evicted != nullptr;
  if (const json* any_evicted = Condition(object, "Evicted")) {
    w.evicted_changed_ms = ParseRfc3339(JsonStringAt(*any_evicted, {"lastTransitionTime"})).value_or(0);
  }
  w.finished = finished != nullptr;
  w.deactivated_for = DeactivatedFor(object, evicted);
  const json* active = JsonAt(object, {"spec", "active"});
  w.active = !active || !active->is_boolean() || active->get<bool>();
  // Kueue evicts or deactivates a Workload whose check turned Retry or
  // Rejected in a write of its own, after the check's: in between, the
  // copy still shows its quota.
  const json* checks = JsonAt(object, {"status", "admissionChecks"});
  if (checks && checks->is_array()) {
    w.check_failed = std::any_of(checks->begin(), checks->end(), [](const json& c) {
      const std::string state = JsonStringAt(c, {"state"});
      return state == "Retry" || state == "Rejected";
    });
  }
  const json* gates = JsonAt(object, {"spec", "preemptionGates"});
  w.gated = gates && gates->is_array() && std::any_of(gates->begin(), gates->end(), [](const json& g) {
              return JsonStringAt(g, {"name"}) == kPreemptionGate;
            });
  const json* states = JsonAt(object, {"status", "preemptionGates"});
  if (states && states->is_array()) {
    for (const json& g : *states) {
      if (JsonStringAt(g, {"name"}) != kPreemptionGate) {
        w.other_gate_states.push_back(g);
      } else if (JsonStringAt(g, {"position"}) == "Open") {
        w.gate_open = true;
      }
    }
  }
  w.resource_version = JsonStringAt(object, {"metadata", "resourceVersion"});
  CopyReason(evicted ? evicted : finished ? finished : quota, &w.reason, &w.message);
  if (quota && !w.quota_reserved) {
    const std::string reason = JsonStringAt(*quota, {"reason"});
    w.held_by_gate = reason == "PreemptionGated";
    w.preempting = reason == "WaitingForPreemptedWorkloads" ||
                   JsonStringAt(*quota, {"message"}).find("Pending the preemption of") != std::string::npos;
  }
  return w;
}

std::optional<ObservedJob> ParseJob(const std::string& kind, const json& object) {
  ObservedJob j;
  j.kind = kind;
  if (!ParseMeta(object, &j)) return std::nullopt;
  j.deleting = JsonAt(object, {"metadata", "deletionTimestamp"}) != nullptr;
  j.created_ms = ParseRfc3339(JsonStringAt(object, {"metadata", "creationTimestamp"})).value_or(0);
  const json* complete = TrueCondition(object, "Complete");
  if (!complete) complete = TrueCondition(object, "Completed");
  const json* failed = TrueCondition(object, "Failed");
  const json* suspend = JsonAt(object, {"spec", "suspend"});
  if (complete || failed) {
    j.state = complete ? RemoteJobState::kSucceeded : RemoteJobState::kFailed;
    CopyReason(complete ? complete : failed, &j.reason, &j.message);
    j.ended_ms = ParseRfc3339(JsonStringAt(complete ? *complete : *failed, {"lastTransitionTime"})).value_or(0);
  } else if (!suspend || !suspend->is_boolean() || !suspend->get<bool>()) {
    j.state = RemoteJobState::kRunning;
  } else {
    j.state = RemoteJobState::kSuspended;
    CopyReason(TrueCondition(object, "Suspended"), &j.reason, &j.message);
  }
  if (kind != "Job" && kind != "JobSet") return j;  // a generic kind: no counts gantry knows
  if (kind == "Job") {
    j.summary =
        fmt::format("active {}, succeeded {}, failed {}", JsonIntAt(object, {"status", "active"}, 0),
                    JsonIntAt(object, {"status", "succeeded"}, 0), JsonIntAt(object, {"status", "failed"}, 0));
    return j;
  }
  int64_t active = 0, succeeded = 0, failed_jobs = 0;  // child Jobs, summed over replicatedJobs
  const json* replicated = JsonAt(object, {"status", "replicatedJobsStatus"});
  for (const json& r : replicated && replicated->is_array() ? *replicated : json::array()) {
    active += JsonIntAt(r, {"active"}, 0);
    succeeded += JsonIntAt(r, {"succeeded"}, 0);
    failed_jobs += JsonIntAt(r, {"failed"}, 0);
  }
  j.summary = fmt::format("active {}, succeeded {}, failed {}, restarts {}", active, succeeded,
                          failed_jobs, JsonIntAt(object, {"status", "restarts"}, 0));
  return j;
}

}  // namespace gantry::dispatch
