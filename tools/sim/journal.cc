#include "journal.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "gantry/common/clock.h"

namespace gantry::sim {

nlohmann::json RunToJson(const Run& run) {
  nlohmann::json j = {{"cluster", run.cluster}, {"kind", run.kind},       {"namespace", run.ns},
                      {"name", run.name},       {"jobUid", run.job_uid},  {"epoch", run.epoch},
                      {"atMostOnce", run.at_most_once}, {"startMs", run.start_ms},
                      {"start", FormatRfc3339(run.start_ms)}};
  if (run.end_ms != 0) {
    j["endMs"] = run.end_ms;
    j["end"] = FormatRfc3339(run.end_ms);
    j["endReason"] = run.end_reason;
  }
  return j;
}

std::optional<Run> RunFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  Run r;
  r.cluster = j.value("cluster", "");
  r.kind = j.value("kind", "");
  r.ns = j.value("namespace", "");
  r.name = j.value("name", "");
  r.job_uid = j.value("jobUid", "");
  r.epoch = j.value("epoch", "");
  r.at_most_once = j.value("atMostOnce", false);
  r.start_ms = j.value("startMs", int64_t{0});
  r.end_ms = j.value("endMs", int64_t{0});
  r.end_reason = j.value("endReason", "");
  return r;
}

nlohmann::json CheckReport(const std::vector<Run>& runs) {
  nlohmann::json violations = nlohmann::json::array();
  for (const Violation& v : CheckRuns(runs)) violations.push_back({{"jobUid", v.job_uid}, {"message", v.message}});
  std::map<std::string, int> runs_of;
  for (const Run& r : runs) {
    if (!r.job_uid.empty()) ++runs_of[r.job_uid];
  }
  const auto again = std::count_if(runs_of.begin(), runs_of.end(), [](const auto& j) { return j.second > 1; });
  return {{"ok", violations.empty()}, {"violations", violations}, {"jobs", runs_of.size()}, {"jobsRunAgain", again}};
}

namespace {

// "c1 epoch 1, then c2 epoch 2, then ...": every run of a job, in start order.
std::string RunsInOrder(const std::vector<const Run*>& list) {
  std::string out;
  for (const Run* r : list) out += fmt::format("{}{} epoch {}", out.empty() ? "" : ", then ", r->cluster, r->epoch);
  return out;
}

}  // namespace

std::vector<Violation> CheckRuns(const std::vector<Run>& runs) {
  constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();
  std::map<std::string, std::vector<const Run*>> by_uid;
  for (const Run& r : runs) {
    if (!r.job_uid.empty()) by_uid[r.job_uid].push_back(&r);
  }
  std::vector<Violation> out;
  for (auto& [uid, list] : by_uid) {
    std::sort(list.begin(), list.end(), [](const Run* a, const Run* b) { return a->start_ms < b->start_ms; });
    // One violation per job, naming every run (a job moved twice, or run
    // again more than once, is told whole, not by its first fault alone).
    const bool at_most_once = std::any_of(list.begin(), list.end(), [](const Run* r) { return r->at_most_once; });
    std::string message;
    if (at_most_once && list.size() > 1) {
      message = fmt::format("job {} is at-most-once but ran {} times (in {})", uid, list.size(), RunsInOrder(list));
    }
    // Sorted by start: a run overlaps an earlier one iff it starts before
    // the latest end seen so far.
    const Run* longest = nullptr;
    int64_t latest_end = std::numeric_limits<int64_t>::min();
    int overlaps = 0;
    for (const Run* r : list) {
      if (longest && r->start_ms < latest_end) {
        if (++overlaps == 1) {
          message += fmt::format("{}job {} ran twice at once: in {} ({}/{}, epoch {}) and in {} ({}/{}, epoch {})",
                                 message.empty() ? "" : "; ", uid, longest->cluster, longest->ns, longest->name,
                                 longest->epoch, r->cluster, r->ns, r->name, r->epoch);
        }
      }
      int64_t end = r->end_ms == 0 ? kOpen : r->end_ms;
      if (end > latest_end) latest_end = end, longest = r;
    }
    if (overlaps > 1) {
      message += fmt::format("; {} runs began while an earlier one ran ({} runs in all: {})", overlaps, list.size(),
                             RunsInOrder(list));
    }
    if (!message.empty()) out.push_back({uid, std::move(message)});
  }
  return out;
}

std::size_t Journal::Start(Run run) {
  std::lock_guard lock(mu_);
  runs_.push_back(std::move(run));
  return runs_.size() - 1;
}

void Journal::Stop(std::size_t id, int64_t end_ms, std::string reason) {
  std::lock_guard lock(mu_);
  if (id >= runs_.size() || runs_[id].end_ms != 0) return;
  runs_[id].end_ms = std::max(end_ms, runs_[id].start_ms);
  runs_[id].end_reason = std::move(reason);
}

std::vector<Run> Journal::Snapshot() const {
  std::lock_guard lock(mu_);
  return runs_;
}

}  // namespace gantry::sim
