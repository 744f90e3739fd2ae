#include "gantry/api/api_metrics.h"

#include <mutex>
#include <sstream>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "cluster_metrics.h"

namespace gantry::api {

struct ApiMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter().Name("gantry_http_requests_total")
          .Help("HTTP requests by method, route pattern and status code").Register(*registry);
  prometheus::Family<prometheus::Histogram>& latency =
      prometheus::BuildHistogram().Name("gantry_http_request_duration_seconds")
          .Help("HTTP request latency by method and route pattern").Register(*registry);
  prometheus::Family<prometheus::Gauge>& jobs =
      prometheus::BuildGauge().Name("gantry_jobs").Help("Jobs by phase").Register(*registry);
  prometheus::Family<prometheus::Histogram>& commit_family =
      prometheus::BuildHistogram().Name("gantry_store_commit_duration_seconds")
          .Help("Store transaction commit latency, fsync included").Register(*registry);
  prometheus::Family<prometheus::Histogram>& writes_family =
      prometheus::BuildHistogram().Name("gantry_store_commit_writes")
          .Help("Writes carried by one store commit (group commit batch size)").Register(*registry);
  // Buckets from 0.5 ms (a cached read) to 10 s (a stalled disk).
  const prometheus::Histogram::BucketBoundaries latency_buckets{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  prometheus::Histogram& commit = commit_family.Add({}, latency_buckets);
  prometheus::Family<prometheus::Counter>& commits_family =
      prometheus::BuildCounter().Name("gantry_store_commits_total")
          .Help("Store commits, by whether they were fsync'd (fsync=\"false\": every write in them may be "
                "lost in a power failure and is made again by the dispatch engine)")
          .Register(*registry);
  prometheus::Counter& commits_synced = commits_family.Add({{"fsync", "true"}});
  prometheus::Counter& commits_unsynced = commits_family.Add({{"fsync", "false"}});
  prometheus::Histogram& writes =
      writes_family.Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000});
  prometheus::Family<prometheus::Counter>& remote_calls =
      prometheus::BuildCounter().Name("gantry_dispatch_remote_calls_total")
          .Help("Kubernetes API calls to worker clusters by cluster, verb and HTTP code (0: no answer)")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& transitions =
      prometheus::BuildCounter().Name("gantry_dispatch_transitions_total")
          .Help("Job phase changes made by the dispatch engine, by ladder step (not the API's: a cancel request's "
                "move to Cancelling, a resubmission's to Queued)").Register(*registry);
  prometheus::Family<prometheus::Histogram>& admission_family =
      prometheus::BuildHistogram().Name("gantry_dispatch_admission_seconds")
          .Help("Submission to lease (the first worker admitting the whole job)").Register(*registry);
  prometheus::Histogram& admission = admission_family.Add(
      {}, prometheus::Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
                                                  900, 3600});
  prometheus::Counter& conflicts =
      prometheus::BuildCounter().Name("gantry_dispatch_write_conflicts_total")
          .Help("Guarded dispatch writes that found the job changed (lost lease races included)")
          .Register(*registry).Add({});
  prometheus::Counter& records_expired =
      prometheus::BuildCounter().Name("gantry_job_records_expired_total")
          .Help("Records of finished jobs deleted, with their events, for their age (jobRecordRetentionSeconds)")
          .Register(*registry).Add({});
  prometheus::Family<prometheus::Counter>& leases =
      prometheus::BuildCounter().Name("gantry_dispatch_leases_total")
          .Help("Leases by cluster: won (the cluster holds the job), lost (its copy was admitted too, and withdrawn)")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& passes =
      prometheus::BuildCounter().Name("gantry_dispatch_passes_total")
          .Help("Reconciler passes over jobs, by the ladder step that decided each").Register(*registry);
  prometheus::Counter& commit_failures =
      prometheus::BuildCounter().Name("gantry_store_commit_failures_total")
          .Help("Store commits that failed as a whole (a full disk, an I/O error): every write in them was refused")
          .Register(*registry).Add({});
  mutable std::mutex store_mu;
  std::string store_failing;  // guarded by store_mu
  std::mutex mu;  // guards Family::Add's lookup-or-create with our own cache
  std::map<std::tuple<std::string, std::string, int>, prometheus::Counter*> remote_cache;
  std::map<std::tuple<JobPhase, JobPhase, std::string>, prometheus::Counter*> transition_cache;
  std::map<std::tuple<std::string, std::string, int>, prometheus::Counter*> counter_cache;
  std::map<std::pair<std::string, std::string>, prometheus::Histogram*> hist_cache;
  std::map<std::string, prometheus::Counter*> pass_cache;
  std::map<std::pair<std::string, bool>, prometheus::Counter*> lease_cache;
  std::mutex clusters_mu;
  std::vector<prometheus::MetricFamily> clusters;  // guarded by clusters_mu

  // The labelled child in cache[key], made by make() on first use.
  // REQUIRES: mu held.
  template <class Key, class Metric, class Make>
  static Metric* Cached(std::map<Key, Metric*>& cache, const Key& key, Make make) {
    Metric*& slot = cache[key];
    if (!slot) slot = &make();
    return slot;
  }
};

ApiMetrics::ApiMetrics() : impl_(std::make_unique<Impl>()) {
  for (JobPhase p : kAllJobPhases) impl_->jobs.Add({{"phase", std::string(JobPhaseName(p))}}).Set(0);
}
ApiMetrics::~ApiMetrics() = default;

namespace {

// A client chooses the method it sends, any token up to the header limit:
// one label value per distinct method would grow the registry (and
// /metrics) without bound.
const std::string& MethodLabel(const std::string& method) {
  static const std::string kKnown[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
  static const std::string kOther = "other";
  for (const std::string& m : kKnown) {
    if (method == m) return m;
  }
  return kOther;
}

}  // namespace

void ApiMetrics::CountServerAnswer(int code) {
  prometheus::Counter* counter;
  {
    std::lock_guard lock(impl_->mu);
    counter = Impl::Cached(impl_->counter_cache, {"-", "-", code}, [&]() -> prometheus::Counter& {
      return impl_->requests.Add({{"method", "-"}, {"route", "-"}, {"code", std::to_string(code)}});
    });
  }
  counter->Increment();
}

void ApiMetrics::ObserveRequest(const std::string& sent_method, const std::string& route, int code,
                                double seconds) {
  const std::string& method = MethodLabel(sent_method);
  prometheus::Counter* counter;
  prometheus::Histogram* hist;
  {
    std::lock_guard lock(impl_->mu);
    counter = Impl::Cached(impl_->counter_cache, {method, route, code}, [&]() -> prometheus::Counter& {
      return impl_->requests.Add({{"method", method}, {"route", route}, {"code", std::to_string(code)}});
    });
    hist = Impl::Cached(impl_->hist_cache, {method, route}, [&]() -> prometheus::Histogram& {
      return impl_->latency.Add({{"method", method}, {"route", route}}, impl_->latency_buckets);
    });
  }
  counter->Increment();
  hist->Observe(seconds);
}

void ApiMetrics::ObserveCommit(double seconds, int writes, bool synced) {
  impl_->commit.Observe(seconds);
  impl_->writes.Observe(writes);
  (synced ? impl_->commits_synced : impl_->commits_unsynced).Increment();
  std::lock_guard lock(impl_->store_mu);
  impl_->store_failing.clear();
}

void ApiMetrics::ObserveCommitFailure(const std::string& error) {
  impl_->commit_failures.Increment();
  std::lock_guard lock(impl_->store_mu);
  impl_->store_failing = error;
}

std::string ApiMetrics::StoreFailing() const {
  std::lock_guard lock(impl_->store_mu);
  return impl_->store_failing;
}

void ApiMetrics::SetJobsByPhase(const std::map<JobPhase, int64_t>& counts) {
  for (const auto& [phase, n] : counts) {
    impl_->jobs.Add({{"phase", std::string(JobPhaseName(phase))}}).Set(static_cast<double>(n));
  }
}

void ApiMetrics::SetClusters(const std::vector<inventory::ClusterView>& clusters, int64_t now_ms,
                             const std::map<std::string, int64_t>& behind_since,
                             const std::map<std::string, int>& connections_limit,
                             const std::map<std::string, int64_t>& stalled_for_ms) {
  auto families = ClusterMetricFamilies(clusters, now_ms, behind_since, connections_limit, stalled_for_ms);
  std::lock_guard lock(impl_->clusters_mu);
  impl_->clusters = std::move(families);
}

std::string ApiMetrics::Serialize() const {
  std::vector<prometheus::MetricFamily> families = impl_->registry->Collect();
  {
    std::lock_guard lock(impl_->clusters_mu);
    families.insert(families.end(), impl_->clusters.begin(), impl_->clusters.end());
  }
  prometheus::TextSerializer serializer;
  std::ostringstream out;
  serializer.Serialize(out, families);
  return out.str();
}

void ApiMetrics::RemoteCall(const std::string& cluster, const char* verb, int code) {
  prometheus::Counter* c;
  {
    std::lock_guard lock(impl_->mu);
    c = Impl::Cached(impl_->remote_cache, {cluster, verb, code}, [&]() -> prometheus::Counter& {
      return impl_->remote_calls.Add({{"cluster", cluster}, {"verb", verb}, {"code", std::to_string(code)}});
    });
  }
  c->Increment();
}

void ApiMetrics::Transition(JobPhase from, JobPhase to, const std::string& step) {
  prometheus::Counter* c;
  {
    std::lock_guard lock(impl_->mu);
    c = Impl::Cached(impl_->transition_cache, {from, to, step}, [&]() -> prometheus::Counter& {
      return impl_->transitions.Add(
          {{"from", std::string(JobPhaseName(from))}, {"to", std::string(JobPhaseName(to))}, {"step", step}});
    });
  }
  c->Increment();
}

void ApiMetrics::Admitted(double seconds) { impl_->admission.Observe(seconds); }

void ApiMetrics::WriteConflict() { impl_->conflicts.Increment(); }
void ApiMetrics::RecordsExpired(int count) { impl_->records_expired.Increment(count); }

void ApiMetrics::Lease(const std::string& cluster, bool won) {
  prometheus::Counter* c;
  {
    std::lock_guard lock(impl_->mu);
    c = Impl::Cached(impl_->lease_cache, {cluster, won}, [&]() -> prometheus::Counter& {
      return impl_->leases.Add({{"cluster", cluster}, {"outcome", won ? "won" : "lost"}});
    });
  }
  c->Increment();
}

void ApiMetrics::Pass(const std::string& step) {
  prometheus::Counter* c;
  {
    std::lock_guard lock(impl_->mu);
    c = Impl::Cached(impl_->pass_cache, step, [&]() -> prometheus::Counter& {
      return impl_->passes.Add({{"step", step.empty() ? "none" : step}});
    });
  }
  c->Increment();
}

}  // namespace gantry::api
