// What `gantry explain` says of placement's Unschedulable verdict, by the
// job's phase, against a server made here.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "daemon_fixture.h"
#include "gantry/http/server.h"

namespace gantry::testing {
namespace {

// `gantry explain team-a/JOB` against a server that answers decision.
RunResult ExplainAgainst(const std::string& decision, const std::string& job) {
  return CliAgainst(decision, {"explain", "team-a/" + job});
}

}  // namespace

TEST_CASE("explain calls a job Unschedulable only while it waits for a dispatch: a dispatched one keeps its phase",
          "[cli]") {
  struct Row {
    const char* phase;
    const char* said;  // the line's start
  };
  const Row rows[] = {
      {"Queued", "Unschedulable: no configured cluster can ever run this job as a whole\n"},
      {"Unschedulable", "Unschedulable: no configured cluster can ever run this job as a whole\n"},
      {"", "Unschedulable: no configured cluster can ever run this job as a whole\n"},  // an older daemon
      {"Nominating", "No fit now:    no configured cluster can hold this job as a whole now (each one's reason is "
                     "below); it stays Nominating, its copies waiting where they are until a quota grows again\n"},
      {"Running", "No fit now:    no configured cluster could take this job as a whole if it were dispatched now "
                  "(each one's reason is below); it is Running, and that does not change it\n"},
      {"Cancelled", "Job phase:     Cancelled (not dispatched again: below is where a dispatch now could go)\n"},
  };
  for (const Row& row : rows) {
    INFO(row.phase);
    std::string decision = R"({"kind":"PlacementDecision","candidates":[],"unschedulable":true,)"
                           R"("clusters":[{"name":"c1","feasible":false,"filter":"Quota","permanent":true,)"
                           R"("message":"gang needs 64 cpu, nominal quota 32"}])";
    if (*row.phase) decision += std::string(R"(,"jobPhase":")") + row.phase + "\"";
    decision += "}";
    RunResult r = ExplainAgainst(decision, "big");
    CHECK(r.code == 0);
    CHECK(r.out.find(row.said) != std::string::npos);
    CHECK(r.out.find("c1") != std::string::npos);  // the clusters' table follows either way
  }
}

TEST_CASE("explain shows where the job's dispatch put its copies, whatever the rank of now says", "[cli]") {
  const std::string decision =
      R"({"kind":"PlacementDecision","candidates":["c2"],"unschedulable":false,"jobPhase":"Nominating","clusters":[)"
      R"({"name":"c1","feasible":true,"rank":2,"score":9.2,"copy":true},)"
      R"({"name":"c2","feasible":true,"rank":1,"score":9.5,"selected":true},)"
      R"({"name":"c3","feasible":false,"filter":"Quota","message":"needs 8 GPUs","copy":true}]})";
  RunResult r = ExplainAgainst(decision, "inc");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("Copies in:     c1, c3\n") != std::string::npos);
  CHECK(r.out.find("c1        has a copy   rank 2 score 9.2 now") != std::string::npos);
  CHECK(r.out.find("c2        candidate    rank 1 score 9.5") != std::string::npos);
  CHECK(r.out.find("c3        has a copy   Quota now: needs 8 GPUs") != std::string::npos);
}

TEST_CASE("explain says when a feasible cluster, or one holding a copy, has no room in its quota now", "[cli]") {
  const std::string decision =
      R"({"kind":"PlacementDecision","candidates":["c2"],"unschedulable":false,"jobPhase":"Nominating","clusters":[)"
      R"({"name":"c1","feasible":true,"rank":1,"score":9.2,"copy":true,)"
      R"("scoreTerms":{"fits_now":{"value":0,"weight":3,"points":0}}},)"
      R"({"name":"c2","feasible":true,"rank":2,"score":8.5,"selected":true,)"
      R"("scoreTerms":{"fits_now":{"value":1,"weight":3,"points":3}}}]})";
  RunResult r = ExplainAgainst(decision, "full");
  INFO(r.out);
  CHECK(r.out.find("c1        has a copy   rank 1 score 9.2 now; its quota shows no room now (or its reading is stale)") !=
        std::string::npos);
  CHECK(r.out.find("c2        candidate    rank 2 score 8.5\n") != std::string::npos);
}

TEST_CASE("list shows what holds a job beside its phase: its owner out of reach, a cancel waiting", "[cli]") {
  const std::string page = R"({"kind":"JobList","items":[)"
                           R"({"metadata":{"name":"held","creationTimestamp":"2026-12-06T10:00:00Z"},"spec":{"queue":"q"},)"
                           R"("status":{"phase":"Running","cluster":"c1","epoch":1,"conditions":[)"
                           R"({"type":"OwnerUnreachable","status":"True","reason":"OwnerLost"}]}},)"
                           R"({"metadata":{"name":"plain","creationTimestamp":"2026-12-06T10:00:00Z"},"spec":{"queue":"q"},)"
                           R"("status":{"phase":"Running","cluster":"c2","epoch":1}},)"
                           R"({"metadata":{"name":"cut","creationTimestamp":"2026-12-06T10:00:00Z"},"spec":{"queue":"q"},)"
                           R"("status":{"phase":"Cancelling","cluster":"c3","epoch":1,)"
                           R"("ownerUnreachable":{"since":"2026-12-06T10:00:00Z","message":"x"},"conditions":[)"
                           R"({"type":"WaitingForClusters","status":"True","reason":"ClusterUnreachable"}]}}]})";
  RunResult r = CliAgainst(page, {"list", "-n", "team-a"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("held    q       Running,OwnerLost        c1") != std::string::npos);
  CHECK(r.out.find("plain   q       Running                  c2") != std::string::npos);
  CHECK(r.out.find("cut     q       Cancelling,Unreachable   c3") != std::string::npos);  // said once
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("the clusters table shows a Ready cluster whose last probe failed as ProbeFailed, with that error",
          "[cli]") {
  const std::string list =
      R"({"kind":"ClusterList","items":[)"
      R"({"metadata":{"name":"c1"},"spec":{"region":"eu"},"status":{"health":"Ready","failedProbes":1,)"
      R"("lastError":"/readyz answered 500"}},)"
      R"({"metadata":{"name":"c2"},"spec":{"region":"eu"},"status":{"health":"Ready",)"
      R"("recoveredFrom":"/readyz answered 503"}}]})";
  RunResult r = CliAgainst(list, {"clusters"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(std::regex_search(r.out, std::regex("(^|\\n)c1 +Ready,ProbeFailed .*/readyz answered 500")));
  CHECK(std::regex_search(r.out, std::regex("(^|\\n)c2 +Ready ")));
  CHECK(r.out.find("503") == std::string::npos);  // history, not shown in the table
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("what the CLI prints of a server's words cannot drive the terminal or fake a line", "[cli]") {
  // A table cell: a cluster's error holding an escape sequence and a line break.
  const std::string list =
      R"({"kind":"ClusterList","items":[{"metadata":{"name":"c1"},"spec":{"region":"eu"},)"
      R"("status":{"health":"NotReady","lastError":"refused\u001b[2J\nc9   Ready   forged"}}]})";
  RunResult table = CliAgainst(list, {"clusters"});
  INFO(table.out << table.err);
  CHECK(table.code == 0);
  CHECK(table.out.find('\x1b') == std::string::npos);
  CHECK(table.out.find("\nc9") == std::string::npos);
  CHECK_THAT(table.out, Catch::Contains("refused?[2J c9   Ready   forged"));

  // An error answer: its message and causes cleaned; a message that is no
  // string (something that is not gantry) does not end the CLI.
  for (const std::string& body :
       {std::string(R"({"kind":"Status","code":422,"message":"bad\u001b]0;title\u0007",)"
                    R"("details":{"causes":[{"field":"spec.x","message":"no\nFORGED"}]}})"),
        std::string(R"({"kind":"Status","code":422,"message":42,"details":{"causes":[7]}})")}) {
    RunResult r = CliAgainst(body, {"status", "team-a/x"}, 422);
    INFO(r.out << r.err);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("Error from server (422): "));
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK(r.err.find('\x07') == std::string::npos);
    CHECK(r.err.find("\nFORGED") == std::string::npos);
  }
}

}  // namespace gantry::testing
