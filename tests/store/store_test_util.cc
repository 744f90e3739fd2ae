#include "store_test_util.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <future>

namespace gantry::testing {
namespace {

constexpr auto kCallbackDeadline = std::chrono::seconds(10);

// Bridges a StoreCallback<T> to a blocking wait.
template <typename T, typename Start>
Result<T> Await(Start start) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  std::future<Result<T>> future = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  if (future.wait_for(kCallbackDeadline) != std::future_status::ready) {
    return Status::Deadline("store callback did not arrive");
  }
  return future.get();
}

std::string NextUid() {
  static std::atomic<int> counter{0};
  char buf[40];
  std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012d", counter.fetch_add(1));
  return buf;
}

}  // namespace

JobRecord MakeJob(const std::string& ns, const std::string& name, const std::string& spec,
                  const std::string& queue) {
  JobRecord job;
  job.uid = NextUid();
  job.ns = ns;
  job.name = name;
  job.queue = queue;
  job.priority = 10;
  job.spec_json = spec;
  job.labels_json = R"({"team":"a"})";
  job.created_ms = 1'700'000'000'123;
  return job;
}

std::unique_ptr<SqliteStore> OpenStore(const std::string& path, const Clock* clock) {
  SqliteStoreOptions options;
  options.path = path;
  options.clock = clock;
  Result<std::unique_ptr<SqliteStore>> store = OpenSqliteStore(options);
  REQUIRE(store.status().ToString() == Status::Ok().ToString());
  return std::move(*store);
}

Result<SubmitResult> SubmitSync(SqliteStore& store, JobRecord job) {
  return Await<SubmitResult>([&](StoreCallback<SubmitResult> cb) { store.Submit(job, cb); });
}

Result<JobRecord> CancelSync(SqliteStore& store, const std::string& ns, const std::string& name) {
  return Await<JobRecord>([&](StoreCallback<JobRecord> cb) { store.RequestCancel(ns, name, cb); });
}

Result<std::string> PurgeSync(SqliteStore& store, const std::string& ns, const std::string& name) {
  return Await<std::string>([&](StoreCallback<std::string> cb) { store.Purge(ns, name, cb); });
}

Result<ExpiredJobs> ExpireSync(SqliteStore& store, int64_t finished_before_ms, int limit, int64_t finished_from_ms) {
  return Await<ExpiredJobs>(
      [&](StoreCallback<ExpiredJobs> cb) { store.ExpireFinished(finished_before_ms, finished_from_ms, limit, cb); });
}

Result<JobRecord> TransitionSync(SqliteStore& store, const std::string& uid, JobPhase from,
                                 JobPhase to, std::optional<JobEvent> event) {
  return Await<JobRecord>([&](StoreCallback<JobRecord> cb) {
    store.Transition(uid, from, to, "moved by test", event, cb);
  });
}

Result<JobRecord> ApplySync(SqliteStore& store, DispatchUpdate update) {
  return Await<JobRecord>([&](StoreCallback<JobRecord> cb) { store.ApplyDispatch(std::move(update), cb); });
}

void ForcePhase(SqliteStore& store, const std::string& uid, JobPhase phase) {
  Result<JobRecord> job = store.GetByUid(uid);
  REQUIRE(job.ok());
  Result<JobRecord> moved = TransitionSync(store, uid, job->phase, phase);
  REQUIRE(moved.status().ToString() == Status::Ok().ToString());
}

RemoteIntent MakeIntent(const std::string& cluster, const std::string& kind, int64_t epoch, bool present,
                        const std::string& name) {
  RemoteIntent i;
  i.cluster = cluster;
  i.kind = kind;
  i.ns = "team-a";
  i.name = name;
  i.epoch = epoch;
  i.present = present;
  return i;
}

}  // namespace gantry::testing
