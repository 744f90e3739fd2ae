// The query plans of the store's paged reads: each page should read its own
// rows by an index in page order, not a whole phase or table (read_sql.h).
#include <catch2/catch.hpp>

#include "gantry/store/sqlite_connection.h"
#include "read_sql.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

// SQLite's plan for sql on conn, one line per step.
std::string PlanOf(SqliteConnection& conn, const std::string& sql) {
  Result<Statement> stmt = conn.Prepare("EXPLAIN QUERY PLAN " + sql);
  REQUIRE(stmt.ok());
  std::string plan;
  while (true) {
    Result<bool> row = stmt->Step();
    REQUIRE(row.ok());
    if (!*row) return plan;
    plan += stmt->Text(3) + "\n";  // columns: id, parent, notused, detail
  }
}

std::string List(std::optional<std::string> ns, std::vector<std::string> allowed,
                 std::optional<std::string> queue, std::optional<JobPhase> phase) {
  ListQuery query;
  query.ns = std::move(ns);
  query.allowed_namespaces = std::move(allowed);
  query.queue = std::move(queue);
  query.phase = phase;
  std::vector<std::string> params;
  return ListSql(query, &params);
}

// An owner's jobs, in a phase or any.
std::string ListByCluster(std::optional<JobPhase> phase) {
  ListQuery query;
  query.phase = phase;
  query.cluster = "c1";
  std::vector<std::string> params;
  return ListSql(query, &params);
}

}  // namespace

TEST_CASE("the paged reads go by an index in page order, without a sort", "[store][plan]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  OpenStore(path).reset();  // this build's schema
  SqliteConnectionOptions options;
  options.create = false;
  options.query_only = true;  // as the store's reader
  Result<std::unique_ptr<SqliteConnection>> conn = SqliteConnection::Open(path, options);
  REQUIRE(conn.ok());

  const JobPhase kRunning = JobPhase::kRunning;
  const std::string kByNamespacePhase =
      "USING INDEX jobs_by_namespace_phase (namespace=? AND phase=? AND rowid>?)";
  const std::string kByPhase = "USING INDEX jobs_by_phase (phase=? AND seq>?)";
  struct Case {
    const char* what;
    std::string sql;
    std::string plan;  // a part of the plan
  };
  const Case cases[] = {
      {"list by namespace and phase", List("ns", {}, std::nullopt, kRunning), kByNamespacePhase},
      {"list by namespace, queue and phase", List("ns", {}, "q", kRunning), kByNamespacePhase},
      {"list by one allowed namespace and phase", List(std::nullopt, {"a"}, std::nullopt, kRunning),
       kByNamespacePhase},
      // Several allowed namespaces: one range per namespace would need a sort.
      {"list by allowed namespaces and phase",
       List(std::nullopt, {"a", "b"}, std::nullopt, kRunning), kByPhase},
      {"list by namespace", List("ns", {}, std::nullopt, std::nullopt),
       "USING INDEX jobs_by_namespace (namespace=? AND seq>?)"},
      {"list by phase", List(std::nullopt, {}, std::nullopt, kRunning), kByPhase},
      {"list by cluster", ListByCluster(std::nullopt), "USING INDEX jobs_by_cluster (cluster=? AND seq>?)"},
      {"list by cluster and phase", ListByCluster(kRunning), "USING INDEX jobs_by_cluster (cluster=? AND seq>?)"},
      {"list by queue", List(std::nullopt, {}, "q", std::nullopt),
       "USING INDEX jobs_by_queue (queue=? AND seq>?)"},
      {"list everything", List(std::nullopt, {}, std::nullopt, std::nullopt),
       "USING INTEGER PRIMARY KEY (rowid>?)"},
      {"jobs in a phase", kJobsInPhaseSql, kByPhase},
      {"jobs with intents", kUidsWithIntentsSql, "USING PRIMARY KEY (job_uid>?)"},
      {"finished jobs to expire", kExpireFinishedSql,
       "USING INDEX jobs_by_finished (finished_ms>? AND finished_ms<?)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what, c.sql);
    const std::string plan = PlanOf(**conn, c.sql);
    CHECK_THAT(plan, Catch::Contains(c.plan));
    CHECK_THAT(plan, !Catch::Contains("TEMP B-TREE"));
  }
}

}  // namespace gantry::testing
