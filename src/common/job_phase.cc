#include "gantry/common/job_phase.h"

namespace gantry {

std::string_view JobPhaseName(JobPhase phase) {
  switch (phase) {
    case JobPhase::kQueued: return "Queued";
    case JobPhase::kNominating: return "Nominating";
    case JobPhase::kAdmitted: return "Admitted";
    case JobPhase::kRunning: return "Running";
    case JobPhase::kSucceeded: return "Succeeded";
    case JobPhase::kFailed: return "Failed";
    case JobPhase::kCancelling: return "Cancelling";
    case JobPhase::kCancelled: return "Cancelled";
    case JobPhase::kUnschedulable: return "Unschedulable";
    case JobPhase::kLost: return "Lost";
  }
  return "Unknown";
}

std::optional<JobPhase> ParseJobPhase(std::string_view name) {
  for (JobPhase p : kAllJobPhases) {
    if (JobPhaseName(p) == name) return p;
  }
  return std::nullopt;
}

bool IsFinal(JobPhase phase) {
  return phase == JobPhase::kSucceeded || phase == JobPhase::kFailed ||
         phase == JobPhase::kCancelled || phase == JobPhase::kLost;
}

}  // namespace gantry
