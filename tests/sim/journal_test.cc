// The journal checker on crafted histories: the oracle must be right.
#include <catch2/catch.hpp>

#include "journal.h"

namespace gantry::sim {
namespace {

Run R(const char* cluster, const char* uid, int64_t start, int64_t end, bool at_most_once = false) {
  Run r;
  r.cluster = cluster;
  r.job_uid = uid;
  r.name = "job";
  r.ns = "team-a";
  r.start_ms = start;
  r.end_ms = end;
  r.at_most_once = at_most_once;
  return r;
}

TEST_CASE("CheckRuns on crafted histories", "[sim][journal]") {
  struct Case {
    const char* what;
    std::vector<Run> runs;
    std::vector<std::string> bad_uids;
  };
  std::vector<Case> cases = {
      {"empty", {}, {}},
      {"one run", {R("c1", "u1", 0, 100)}, {}},
      {"sequential runs in two clusters", {R("c1", "u1", 0, 100), R("c2", "u1", 100, 200)}, {}},
      {"overlap across clusters", {R("c1", "u1", 0, 100), R("c2", "u1", 99, 200)}, {"u1"}},
      {"open run overlaps a later one", {R("c1", "u1", 0, 0), R("c2", "u1", 500, 600)}, {"u1"}},
      {"nested inside a long run", {R("c1", "u1", 0, 1000), R("c2", "u1", 10, 20), R("c3", "u1", 30, 40)}, {"u1"}},
      {"different jobs may overlap", {R("c1", "u1", 0, 100), R("c2", "u2", 0, 100)}, {}},
      {"at-most-once ran twice (no overlap)", {R("c1", "u1", 0, 100, true), R("c2", "u1", 200, 300, true)}, {"u1"}},
      {"at-most-once ran once", {R("c1", "u1", 0, 100, true)}, {}},
      {"runs without a job uid are ignored", {R("c1", "", 0, 100), R("c2", "", 0, 100)}, {}},
      {"only the guilty job is named", {R("c1", "u1", 0, 100), R("c2", "u1", 50, 60), R("c1", "u2", 0, 10)}, {"u1"}},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      std::vector<std::string> bad;
      for (const Violation& v : CheckRuns(c.runs)) {
        bad.push_back(v.job_uid);
        CHECK(v.message.find(v.job_uid) != std::string::npos);
      }
      CHECK(bad == c.bad_uids);
    }
  }
}

TEST_CASE("a job with several faults is one violation naming every run", "[sim][journal]") {
  Run a = R("c1", "u1", 0, 1000, true);
  Run b = R("c2", "u1", 10, 20, true);
  Run c = R("c3", "u1", 30, 40, true);
  a.epoch = "1";
  b.epoch = "2";
  c.epoch = "3";
  const std::vector<Violation> found = CheckRuns({a, b, c});
  REQUIRE(found.size() == 1);
  const std::string& m = found[0].message;
  CHECK(m.find("at-most-once but ran 3 times (in c1 epoch 1, then c2 epoch 2, then c3 epoch 3)") != std::string::npos);
  CHECK(m.find("ran twice at once: in c1") != std::string::npos);
  CHECK(m.find("2 runs began while an earlier one ran") != std::string::npos);
}

TEST_CASE("Journal records starts and stops", "[sim][journal]") {
  Journal j;
  std::size_t id = j.Start(R("c1", "u1", 10, 0));
  j.Stop(id, 20, "Succeeded");
  j.Stop(id, 99, "again");  // a second stop is ignored
  auto runs = j.Snapshot();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].end_ms == 20);
  CHECK(runs[0].end_reason == "Succeeded");
  CHECK(RunToJson(runs[0])["jobUid"] == "u1");
}

TEST_CASE("a journal line reads back as its run, and runs of two simulators are checked as one", "[sim][journal]") {
  Run a = R("c1", "u1", 10, 0, true);
  a.epoch = "1";
  a.kind = "Job";
  auto back = RunFromJson(RunToJson(a));
  REQUIRE(back);
  CHECK(back->cluster == "c1");
  CHECK(back->job_uid == "u1");
  CHECK(back->epoch == "1");
  CHECK(back->at_most_once);
  CHECK(back->start_ms == 10);
  CHECK(back->end_ms == 0);
  CHECK_FALSE(RunFromJson(nlohmann::json::parse("[1]")));
  // Each simulator's journal alone passes; together the job ran twice.
  Run b = R("c1", "u1", 50, 60, true);
  CHECK(CheckReport({a})["ok"] == true);
  CHECK(CheckReport({b})["ok"] == true);
  const nlohmann::json both = CheckReport({a, b});
  CHECK(both["ok"] == false);
  CHECK(both["jobs"] == 1);
  CHECK(both["jobsRunAgain"] == 1);
  CHECK(both["violations"].size() == 1);
}

}  // namespace
}  // namespace gantry::sim
