// The run journal: every start and stop of a job's pods in any simulated
// cluster, and the checker that is the dispatch engine's oracle: a job uid
// must never have two runs overlapping in time, and a job marked
// at-most-once must never run twice.
//
// Thread-safety: Journal is safe from any thread; CheckRuns is pure.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::sim {

inline constexpr const char* kJobUidLabel = "gantry.dev/job-uid";
inline constexpr const char* kEpochAnnotation = "gantry.dev/epoch";
inline constexpr const char* kAtMostOnceAnnotation = "gantry.dev/at-most-once";

struct Run {
  std::string cluster;
  std::string kind;  // "Job", "JobSet"
  std::string ns;
  std::string name;
  std::string job_uid;  // gantry.dev/job-uid label ("" = not a gantry job)
  std::string epoch;    // gantry.dev/epoch annotation
  bool at_most_once = false;
  int64_t start_ms = 0;
  int64_t end_ms = 0;   // 0 = still running
  std::string end_reason;  // "Succeeded", "Failed", "Deleted", "Evicted", ...
};

nlohmann::json RunToJson(const Run& run);
// The run a journal line (RunToJson's) tells; nullopt when it is no object.
std::optional<Run> RunFromJson(const nlohmann::json& j);

struct Violation {
  std::string job_uid;
  std::string message;
};

// Pure: runs of the same job uid whose [start, end) intervals overlap (an
// open run extends to infinity), and at-most-once jobs with more than one run.
std::vector<Violation> CheckRuns(const std::vector<Run>& runs);

// The check's answer (GET /check, and ctl check over several simulators):
// ok, the violations, how many gantry jobs ran, and how many of them more
// than once (one run after another: a Requeue job moved, or evicted).
nlohmann::json CheckReport(const std::vector<Run>& runs);

class Journal {
 public:
  // Records a start; returns the run's id for Stop.
  std::size_t Start(Run run);
  void Stop(std::size_t id, int64_t end_ms, std::string reason);
  std::vector<Run> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::vector<Run> runs_;
};

}  // namespace gantry::sim
