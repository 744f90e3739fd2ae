// Listing: filters, pagination, counts.
#include <catch2/catch.hpp>
#include <set>

#include "gantry/store/sqlite_connection.h"
#include "gantry/store/sqlite_store.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

// 3 namespaces x 2 queues x 10 jobs = 60 jobs; every third one Running.
std::unique_ptr<SqliteStore> Seeded(const TempDir& dir) {
  auto store = OpenStore(dir.File("db"));
  int i = 0;
  for (const char* ns : {"a", "b", "c"}) {
    for (const char* queue : {"cpu", "gpu"}) {
      for (int k = 0; k < 10; ++k, ++i) {
        JobRecord job = MakeJob(ns, std::string(queue) + "-" + std::to_string(k), "{}", queue);
        REQUIRE(SubmitSync(*store, job).ok());
        if (i % 3 == 0) ForcePhase(*store, job.uid, JobPhase::kRunning);
      }
    }
  }
  return store;
}

// Follows next_after_seq to the end; checks each page's order and size.
std::vector<JobRecord> ListAll(SqliteStore& store, ListQuery query) {
  std::vector<JobRecord> all;
  for (int pages = 0; pages < 1000; ++pages) {
    Result<JobPage> page = store.List(query);
    REQUIRE(page.ok());
    REQUIRE(page->jobs.size() <= static_cast<size_t>(query.limit));
    for (const JobRecord& job : page->jobs) {
      REQUIRE((all.empty() || all.back().seq < job.seq));
      all.push_back(job);
    }
    if (!page->next_after_seq) return all;
    REQUIRE(*page->next_after_seq == page->jobs.back().seq);
    query.after_seq = *page->next_after_seq;
  }
  FAIL("pagination did not end");
  return all;
}

}  // namespace

TEST_CASE("List filters", "[store][list]") {
  TempDir dir;
  auto store = Seeded(dir);
  struct Case {
    const char* what;
    ListQuery query;
    size_t want;
  };
  auto q = [](auto fill) {
    ListQuery query;
    fill(query);
    return query;
  };
  const Case cases[] = {
      {"all", {}, 60},
      {"namespace", q([](ListQuery& x) { x.ns = "b"; }), 20},
      {"allowed", q([](ListQuery& x) {
         x.allowed_namespaces = {"a", "c"};
       }),
       40},
      {"ns outside allowed", q([](ListQuery& x) {
         x.ns = "b";
         x.allowed_namespaces = {"a"};
       }),
       0},
      {"queue", q([](ListQuery& x) { x.queue = "gpu"; }), 30},
      {"phase", q([](ListQuery& x) { x.phase = JobPhase::kRunning; }), 20},
      {"ns+queue+phase", q([](ListQuery& x) {
         x.ns = "a";
         x.queue = "cpu";
         x.phase = JobPhase::kQueued;
       }),
       6},
      {"unknown ns", q([](ListQuery& x) { x.ns = "zzz"; }), 0},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::vector<JobRecord> all = ListAll(*store, c.query);
    CHECK(all.size() == c.want);
    for (const JobRecord& job : all) {
      if (c.query.ns) CHECK(job.ns == *c.query.ns);
      if (!c.query.allowed_namespaces.empty()) CHECK(job.ns != "b");
      if (c.query.queue) CHECK(job.queue == *c.query.queue);
      if (c.query.phase) CHECK(job.phase == *c.query.phase);
    }
  }
}

TEST_CASE("List filters by the lease owner, alone and with a phase", "[store][list]") {
  TempDir dir;
  auto store = Seeded(dir);
  {
    SqliteConnectionOptions options;
    options.create = false;
    auto conn = SqliteConnection::Open(dir.File("db"), options);
    REQUIRE(conn.ok());
    // The Running jobs of namespace a (7 of its 20) are leased to c1.
    REQUIRE((*conn)->Exec("UPDATE jobs SET cluster = 'c1' WHERE namespace = 'a' AND phase = 'Running'").ok());
  }
  auto count = [&](std::optional<std::string> cluster, std::optional<JobPhase> phase, int limit) {
    ListQuery query;
    query.cluster = std::move(cluster);
    query.phase = phase;
    query.limit = limit;
    std::vector<JobRecord> all = ListAll(*store, query);
    for (const JobRecord& job : all) CHECK(job.cluster == "c1");
    return all.size();
  };
  CHECK(count("c1", std::nullopt, 500) == 7);
  CHECK(count("c1", std::nullopt, 2) == 7);  // pages walk past the jobs of no owner
  CHECK(count("c1", JobPhase::kRunning, 3) == 7);
  CHECK(count("c1", JobPhase::kQueued, 500) == 0);
  CHECK(count("c2", std::nullopt, 500) == 0);
}

TEST_CASE("List pages return every row exactly once, in seq order", "[store][list]") {
  TempDir dir;
  auto store = Seeded(dir);
  for (int limit : {1, 7, 20, 59, 60, 61, 5000}) {
    INFO("limit " << limit);
    ListQuery query;
    query.limit = limit;
    std::vector<JobRecord> all = ListAll(*store, query);
    std::set<std::string> uids;
    for (const JobRecord& job : all) uids.insert(job.uid);
    CHECK(all.size() == 60);
    CHECK(uids.size() == 60);
  }
  // An exact fit may announce one more (empty) page, never a missing one.
  ListQuery query;
  query.limit = 60;
  Result<JobPage> page = store->List(query);
  REQUIRE(page.ok());
  CHECK(page->jobs.size() == 60);
  CHECK_FALSE(page->next_after_seq.has_value());

  // Limits outside 1..5000 are clamped, not errors.
  query.limit = 0;
  CHECK(store->List(query)->jobs.size() == 1);
  query.limit = 1'000'000;
  CHECK(store->List(query)->jobs.size() == 60);

  // Purging a row in between does not disturb a cursor.
  query.limit = 10;
  Result<JobPage> first = store->List(query);
  REQUIRE(first.ok());
  ForcePhase(*store, first->jobs.back().uid, JobPhase::kSucceeded);
  REQUIRE(PurgeSync(*store, first->jobs.back().ns, first->jobs.back().name).ok());
  query.after_seq = *first->next_after_seq;
  Result<JobPage> second = store->List(query);
  REQUIRE(second.ok());
  CHECK(second->jobs.front().seq > first->jobs.back().seq);
}

TEST_CASE("a page with a byte cap ends once its jobs hold that much text: never empty and every row still once",
          "[store][list]") {
  TempDir dir;
  auto store = Seeded(dir);
  ListQuery query;
  query.limit = 500;
  Result<JobPage> whole = store->List(query);
  REQUIRE(whole.ok());
  REQUIRE(whole->jobs.size() == 60);
  auto text = [](const JobRecord& j) { return static_cast<int64_t>(j.TextBytes()); };
  query.max_bytes = 1;  // every job is over it: one a page
  Result<JobPage> single = store->List(query);
  REQUIRE(single.ok());
  CHECK(single->jobs.size() == 1);
  CHECK(single->next_after_seq.has_value());
  query.max_bytes = text(whole->jobs[0]) + text(whole->jobs[1]) + text(whole->jobs[2]);  // three reach it
  Result<JobPage> few = store->List(query);
  REQUIRE(few.ok());
  CHECK(few->jobs.size() == 3);
  std::vector<JobRecord> all = ListAll(*store, query);
  std::set<std::string> uids;
  for (const JobRecord& job : all) uids.insert(job.uid);
  CHECK(all.size() == 60);
  CHECK(uids.size() == 60);
}

TEST_CASE("CountByPhase lists every phase, JobsInPhase is oldest first", "[store][list]") {
  TempDir dir;
  auto store = OpenStore(dir.File("db"));
  Result<std::map<JobPhase, int64_t>> empty = store->CountByPhase();
  REQUIRE(empty.ok());
  CHECK(empty->size() == kAllJobPhases.size());
  for (const auto& [phase, n] : *empty) CHECK(n == 0);

  store.reset();
  store = Seeded(dir);
  Result<std::map<JobPhase, int64_t>> counts = store->CountByPhase();
  REQUIRE(counts.ok());
  CHECK(counts->size() == kAllJobPhases.size());
  CHECK(counts->at(JobPhase::kQueued) == 40);
  CHECK(counts->at(JobPhase::kRunning) == 20);
  CHECK(counts->at(JobPhase::kFailed) == 0);

  Result<std::vector<JobKey>> running = store->JobsInPhase(JobPhase::kRunning, 0, 100);
  REQUIRE(running.ok());
  REQUIRE(running->size() == 20);
  ListQuery query;
  query.phase = JobPhase::kRunning;
  query.limit = 100;
  Result<JobPage> listed = store->List(query);
  for (size_t i = 0; i < running->size(); ++i) {
    CHECK((*running)[i].uid == listed->jobs[i].uid);
    CHECK((*running)[i].seq == listed->jobs[i].seq);
  }
  // A page continues after the seq given.
  Result<std::vector<JobKey>> rest = store->JobsInPhase(JobPhase::kRunning, (*running)[4].seq, 100);
  REQUIRE(rest.ok());
  REQUIRE(rest->size() == 15);
  CHECK(rest->front().uid == (*running)[5].uid);
  CHECK(store->JobsInPhase(JobPhase::kRunning, 0, 5)->size() == 5);
  CHECK(store->JobsInPhase(JobPhase::kLost, 0, 5)->empty());
}

}  // namespace gantry::testing
