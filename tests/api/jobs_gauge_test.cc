// gantry_jobs{phase} on /metrics: counted off the server's loop, at most
// once every jobs_count_refresh_ms, on a fake clock.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>

#include "gantry/api/api_service.h"
#include "gantry/store/sqlite_store.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

// The SQLite store, counting its counts of the jobs by phase.
class CountingStore final : public JobStore {
 public:
  explicit CountingStore(JobStore& inner) : inner_(inner) {}
  std::atomic<int> counts{0};

  Result<std::map<JobPhase, int64_t>> CountByPhase() override {
    ++counts;
    return inner_.CountByPhase();
  }
  void Submit(JobRecord job, StoreCallback<SubmitResult> done) override { inner_.Submit(std::move(job), std::move(done)); }
  void RequestCancel(std::string ns, std::string name, StoreCallback<JobRecord> done) override {
    inner_.RequestCancel(std::move(ns), std::move(name), std::move(done));
  }
  void Purge(std::string ns, std::string name, StoreCallback<std::string> done) override {
    inner_.Purge(std::move(ns), std::move(name), std::move(done));
  }
  void ExpireFinished(int64_t finished_before_ms, int64_t finished_from_ms, int limit,
                      StoreCallback<ExpiredJobs> done) override {
    inner_.ExpireFinished(finished_before_ms, finished_from_ms, limit, std::move(done));
  }
  void Transition(std::string uid, JobPhase expected_phase, JobPhase new_phase, std::string message,
                  std::optional<JobEvent> event, StoreCallback<JobRecord> done) override {
    inner_.Transition(std::move(uid), expected_phase, new_phase, std::move(message), std::move(event), std::move(done));
  }
  void ApplyDispatch(DispatchUpdate update, StoreCallback<JobRecord> done) override {
    inner_.ApplyDispatch(std::move(update), std::move(done));
  }
  Result<std::vector<RemoteIntent>> Intents(const std::string& uid) override { return inner_.Intents(uid); }
  Result<std::vector<std::string>> UidsWithIntents(const std::string& after_uid, int limit) override {
    return inner_.UidsWithIntents(after_uid, limit);
  }
  Result<std::vector<std::string>> UidsWithIntentsIn(const std::string& cluster, const std::string& after_uid,
                                                     int limit) override {
    return inner_.UidsWithIntentsIn(cluster, after_uid, limit);
  }
  Result<JobRecord> Get(const std::string& ns, const std::string& name) override { return inner_.Get(ns, name); }
  Result<JobRecord> GetByUid(const std::string& uid) override { return inner_.GetByUid(uid); }
  Result<bool> WasPurged(const std::string& uid) override { return inner_.WasPurged(uid); }
  Result<JobPage> List(const ListQuery& query) override { return inner_.List(query); }
  Result<std::vector<JobEvent>> Events(const std::string& uid) override { return inner_.Events(uid); }
  Result<EventTail> LastEvents(const std::string& uid, int limit) override { return inner_.LastEvents(uid, limit); }
  Result<std::vector<JobKey>> JobsInPhase(JobPhase phase, int64_t after_seq, int limit) override {
    return inner_.JobsInPhase(phase, after_seq, limit);
  }

 private:
  JobStore& inner_;
};

void SubmitJob(JobStore& store, const std::string& name) {
  JobRecord job;
  job.uid = "uid-" + name;
  job.ns = "team-a";
  job.name = name;
  job.queue = "team-a";
  job.spec_json = "{}";
  std::promise<bool> done;
  store.Submit(job, [&done](Result<SubmitResult> r) { done.set_value(r.ok()); });
  REQUIRE(done.get_future().get());
}

// GET /metrics through the service's handler, as the server's loop calls it.
std::string Scrape(const http::Handler& handler) {
  http::Request req;
  req.method = "GET";
  req.target = req.path = "/metrics";
  req.remote_loopback = true;
  auto answer = std::make_shared<std::promise<http::Response>>();
  auto got = answer->get_future();
  handler(std::move(req), [answer](http::Response r) { answer->set_value(std::move(r)); });
  REQUIRE(got.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  http::Response r = got.get();
  CHECK(r.status == 200);
  return r.body;
}

bool Shows(const std::string& metrics, const std::string& series) { return metrics.find(series) != std::string::npos; }

}  // namespace

TEST_CASE("the jobs gauge is counted at the first scrape, then at most once per refresh, off the loop",
          "[api][metrics]") {
  TempDir dir;
  SqliteStoreOptions store_options;
  store_options.path = dir.File("gantry.db");
  auto sqlite = OpenSqliteStore(store_options);
  REQUIRE(sqlite.ok());
  CountingStore store(**sqlite);
  auto auth = api::TokenAuth::Load("");
  REQUIRE(auth.ok());
  api::ApiMetrics metrics;
  FakeClock clock;
  api::ApiOptions options;
  options.jobs_count_refresh_ms = 15'000;
  api::ApiService service(store, **auth, metrics, nullptr, clock, options);
  const http::Handler handler = service.Handler();
  SubmitJob(store, "a");
  SubmitJob(store, "b");

  // The first scrape waits for a count: the jobs there are, not zeros.
  CHECK(Shows(Scrape(handler), "gantry_jobs{phase=\"Queued\"} 2"));
  CHECK(store.counts == 1);
  // Another job, and scrapes within the refresh: the last count's figures, no count.
  SubmitJob(store, "c");
  clock.Advance(14'999);
  CHECK(Shows(Scrape(handler), "gantry_jobs{phase=\"Queued\"} 2"));
  CHECK(Shows(Scrape(handler), "gantry_jobs{phase=\"Queued\"} 2"));
  CHECK(store.counts == 1);
  // Once the refresh is due, a scrape starts a count and shows its figures,
  // not the last one's; the scrapes after it show them without counting.
  clock.Advance(1);
  CHECK(Shows(Scrape(handler), "gantry_jobs{phase=\"Queued\"} 3"));
  CHECK(Shows(Scrape(handler), "gantry_jobs{phase=\"Queued\"} 3"));
  CHECK(store.counts == 2);

  // Stopping: a scrape is still answered, with the last figures.
  service.StopSlowLane();
  clock.Advance(15'000);
  CHECK(Shows(Scrape(handler), "gantry_jobs{phase=\"Queued\"} 3"));
  CHECK(store.counts == 2);
}

}  // namespace gantry::testing
