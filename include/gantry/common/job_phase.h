// JobPhase: where a job is in its lifecycle (see DESIGN.md, "Job lifecycle").
//
//   Queued -> Nominating -> Admitted -> Running -> Succeeded | Failed
//   any non-final phase -> Cancelling -> Cancelled
//   Unschedulable (no cluster can ever fit it), Lost (owner gone, no re-run)
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace gantry {

enum class JobPhase {
  kQueued,
  kNominating,
  kAdmitted,
  kRunning,
  kSucceeded,
  kFailed,
  kCancelling,
  kCancelled,
  kUnschedulable,
  kLost,
};

inline constexpr std::array<JobPhase, 10> kAllJobPhases = {
    JobPhase::kQueued,     JobPhase::kNominating, JobPhase::kAdmitted,      JobPhase::kRunning,
    JobPhase::kSucceeded,  JobPhase::kFailed,     JobPhase::kCancelling,    JobPhase::kCancelled,
    JobPhase::kUnschedulable, JobPhase::kLost};

// "Queued", "Running", ... as shown to users and stored in the database.
std::string_view JobPhaseName(JobPhase phase);
std::optional<JobPhase> ParseJobPhase(std::string_view name);

// Finished for good: Succeeded, Failed, Cancelled, Lost. Only these may be purged.
bool IsFinal(JobPhase phase);

}  // namespace gantry
