// store_bench: what the store's paged reads cost over a store the size of a
// busy fleet's, filled through SqliteStore: the REST list filtered by
// namespace and phase, and the scan for the jobs with intents in one cluster
// (run when a cluster's readiness changes), with their neighbours as
// controls. Then what the writes cost in WAL frames (one frame is one page
// of the database rewritten into the log, 2 KiB), one write per commit.
// Build RelWithDebInfo (-O2) before reading the numbers. The database lives
// under $TMPDIR (default /tmp) and is removed at the end.
//
//   store_bench [jobs [intents per unfinished job]]   (default: 100000 and 10)
//
// The oldest 40% of the jobs are finished (Succeeded, one in ten Failed),
// the rest Running or Nominating with their intents in distinct clusters out
// of kClusters, which makes 600,000 intents by default. Namespaces are drawn
// from kNamespaces, but one job in kSmallEvery goes to "small": a namespace
// with few jobs in a common phase is the case a filter on the phase alone
// serves worst. Likewise "quiet" is a cluster with few intents.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_job_document.h"
#include "gantry/common/names.h"
#include "gantry/store/job_scan.h"
#include "gantry/store/sqlite_store.h"
#include "wal_write_vfs.h"

namespace {

using gantry::DispatchUpdate;
using gantry::JobPhase;
using gantry::JobRecord;
using gantry::ListQuery;
using gantry::RemoteIntent;
using gantry::SqliteStore;
using Clock = std::chrono::steady_clock;

constexpr int kDefaultJobs = 100'000;
constexpr int kDefaultIntentsPerJob = 10;
constexpr int kNamespaces = 20;
constexpr int kClusters = 30;
constexpr int kSmallEvery = 1000;  // one job in this many is in namespace "small"
constexpr int kQuietJobs = 100;    // jobs with an intent in "quiet", a cluster just added
constexpr int kChunk = 4096;       // writes queued at once while filling (bounds memory)
constexpr int kListLimit = 500;    // the REST list's default page
constexpr int kRepeats = 5;        // passes per read; the median is printed
constexpr int kSteadyJobs = 500;   // jobs written one write per commit at the end
constexpr int64_t kStartMs = 1'700'000'000'000;
constexpr auto kWriteDeadline = std::chrono::seconds(120);
constexpr uint32_t kSeed = 42;

double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// SQLite writes a WAL frame as its header, then its page (the log's own
// header, once per restart, adds one write more).
int64_t WalFrames() { return gantry::store_internal::WalWrites().in / 2; }

// Counts the callbacks of queued writes, which run on the store's writer thread.
class Pending {
 public:
  void Add() {
    std::lock_guard lock(mu_);
    ++left_;
  }
  void Done(bool ok) {
    std::lock_guard lock(mu_);
    failed_ += ok ? 0 : 1;
    if (--left_ == 0) cv_.notify_all();
  }
  // Whether every write came back, and none failed, within kWriteDeadline.
  bool Wait() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kWriteDeadline, [this] { return left_ == 0; }) && failed_ == 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_ = 0;
  int failed_ = 0;
};

void Submit(SqliteStore& store, Pending& pending, JobRecord job) {
  pending.Add();
  store.Submit(std::move(job), [&pending](auto result) { pending.Done(result.ok()); });
}
void Apply(SqliteStore& store, Pending& pending, DispatchUpdate update) {
  pending.Add();
  store.ApplyDispatch(std::move(update), [&pending](auto result) { pending.Done(result.ok()); });
}

std::string Namespace(int i) { return "team-" + std::to_string(i); }
std::string ClusterName(int i) { return "c-" + std::to_string(i); }

JobRecord NewJob(int i, std::mt19937& rng, JobPhase phase) {
  JobRecord job;
  job.uid = gantry::NewUid(kStartMs + i);  // time-ordered, as the API makes them
  job.ns = i % kSmallEvery == 0 ? "small" : Namespace(static_cast<int>(rng() % kNamespaces));
  job.name = "job-" + std::to_string(i);
  job.queue = "gpu";
  job.spec_json = gantry::bench::JobDocument(job.name);
  job.phase = phase;
  job.created_ms = kStartMs + i;
  return job;
}

// A nomination of job over `count` distinct clusters (and "quiet" when asked).
DispatchUpdate Nominate(const JobRecord& job, int count, std::mt19937& rng, bool quiet) {
  DispatchUpdate u;
  u.uid = job.uid;
  u.expected_phase = job.phase;
  u.epoch = 1;
  std::vector<int> clusters(kClusters);
  for (int c = 0; c < kClusters; ++c) clusters[c] = c;
  std::shuffle(clusters.begin(), clusters.end(), rng);
  clusters.resize(std::min(count, kClusters));
  std::vector<std::string> names;
  for (int c : clusters) names.push_back(ClusterName(c));
  if (quiet) names.push_back("quiet");
  for (const std::string& cluster : names) {
    RemoteIntent intent;
    intent.cluster = cluster;
    intent.kind = "Workload";
    intent.ns = job.ns;
    intent.name = job.name + "-1";
    intent.epoch = 1;
    u.upsert_intents.push_back(std::move(intent));
  }
  return u;
}

// The bulk writes that fill the store, of each kind: queued kChunk at a
// time, so the store commits them in batches of up to max_batch.
struct Bulk {
  int64_t writes = 0;
  int64_t frames = 0;
  double ms = 0;
  // Runs queue (which queues writes on pending) and waits for them.
  template <typename Queue>
  bool Run(Queue queue) {
    Pending pending;
    const int64_t f = WalFrames();
    const auto start = Clock::now();
    writes += queue(pending);
    if (!pending.Wait()) return false;
    ms += Ms(start);
    frames += WalFrames() - f;
    return true;
  }
  void Print(const char* what) const {
    std::printf("  %-30s %6lld writes  %6.2f WAL frames/write  %7.1f us/write\n", what,
                static_cast<long long>(writes), static_cast<double>(frames) / writes,
                ms * 1000 / writes);
  }
};

// Fills the store; returns the number of intents written, or -1.
int64_t Fill(SqliteStore& store, int jobs, int intents_per_job, Bulk& submits, Bulk& nominations) {
  std::mt19937 rng(kSeed);
  const int finished = jobs * 2 / 5;
  int64_t intents = 0;
  for (int start = 0; start < jobs; start += kChunk) {
    const int end = std::min(jobs, start + kChunk);
    std::vector<std::pair<JobRecord, bool>> unfinished;  // and whether it goes to "quiet" too
    const bool submitted = submits.Run([&](Pending& pending) {
      for (int i = start; i < end; ++i) {
        const JobPhase phase = i < finished
                                   ? (rng() % 10 == 0 ? JobPhase::kFailed : JobPhase::kSucceeded)
                                   : (rng() % 2 == 0 ? JobPhase::kRunning : JobPhase::kNominating);
        JobRecord job = NewJob(i, rng, phase);
        if (i >= finished) unfinished.emplace_back(job, i < finished + kQuietJobs);
        Submit(store, pending, std::move(job));
      }
      return end - start;
    });
    if (!submitted) return -1;
    const bool nominated = nominations.Run([&](Pending& pending) {
      for (const auto& [job, quiet] : unfinished) {
        DispatchUpdate u = Nominate(job, intents_per_job, rng, quiet);
        intents += static_cast<int64_t>(u.upsert_intents.size());
        Apply(store, pending, std::move(u));
      }
      return static_cast<int>(unfinished.size());
    });
    if (!nominated) return -1;
  }
  return intents;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Pages through query to its end, kRepeats times: the median pass's ms per page.
void ListPages(SqliteStore& store, const char* what, ListQuery query) {
  query.limit = kListLimit;
  std::vector<double> per_page;
  size_t pages = 0, rows = 0;
  for (int r = 0; r < kRepeats; ++r) {
    ListQuery q = query;
    pages = rows = 0;
    const auto start = Clock::now();
    while (true) {
      auto page = store.List(q);
      if (!page.ok()) {
        std::fprintf(stderr, "list %s: %s\n", what, page.status().ToString().c_str());
        return;
      }
      ++pages;
      rows += page->jobs.size();
      if (!page->next_after_seq) break;
      q.after_seq = *page->next_after_seq;
    }
    per_page.push_back(Ms(start) / static_cast<double>(pages));
  }
  std::printf("  list %-34s %6zu rows %4zu pages  %8.3f ms/page\n", what, rows, pages,
              Median(per_page));
}

// One whole ForEachUidWithIntents (cluster, or every job with cluster null): ms.
double ScanMs(SqliteStore& store, const std::string* cluster, size_t* uids) {
  *uids = 0;
  const auto start = Clock::now();
  gantry::Status st =
      gantry::ForEachUidWithIntents(store, cluster, [uids](const std::string&) { ++*uids; });
  if (!st.ok()) std::fprintf(stderr, "scan: %s\n", st.ToString().c_str());
  return Ms(start);
}

void Scans(SqliteStore& store) {
  std::vector<double> busy;
  size_t uids = 0, total = 0;
  for (int c = 0; c < kClusters; ++c) {
    const std::string cluster = ClusterName(c);
    busy.push_back(ScanMs(store, &cluster, &uids));
    total += uids;
  }
  std::printf(
      "  intents in one cluster, %d clusters   %6zu uids each  %8.3f ms/scan median  %8.3f max\n",
      kClusters, total / kClusters, Median(busy), *std::max_element(busy.begin(), busy.end()));
  const std::string quiet = "quiet";
  std::vector<double> quiet_ms;
  for (int r = 0; r < kRepeats; ++r) quiet_ms.push_back(ScanMs(store, &quiet, &uids));
  std::printf("  intents in the quiet cluster            %6zu uids       %8.3f ms/scan\n", uids,
              Median(quiet_ms));
  const double all = ScanMs(store, nullptr, &uids);
  std::printf("  jobs with intents anywhere (control)    %6zu uids       %8.3f ms/scan\n", uids,
              all);
}

// Submit, nominate over intents_per_job clusters, finish: kSteadyJobs of
// each, each write its own commit, as when gantry is not busy.
bool SteadyWrites(SqliteStore& store, int first, int intents_per_job) {
  std::mt19937 rng(kSeed + 1);
  const char* kWhat[] = {"submit", "nominate (phase, intents)", "finish (phase, drop intents)"};
  double ms[3] = {};
  int64_t frames[3] = {};
  auto one = [&](int step, auto write) {
    Pending pending;
    const int64_t f = WalFrames();
    const auto start = Clock::now();
    write(pending);
    if (!pending.Wait()) return false;
    ms[step] += Ms(start);
    frames[step] += WalFrames() - f;
    return true;
  };
  for (int i = first; i < first + kSteadyJobs; ++i) {
    JobRecord job = NewJob(i, rng, JobPhase::kQueued);
    DispatchUpdate nominate = Nominate(job, intents_per_job, rng, false);
    nominate.phase = JobPhase::kNominating;
    DispatchUpdate finish;
    finish.uid = job.uid;
    finish.expected_phase = JobPhase::kNominating;
    finish.expected_epoch = 1;
    finish.phase = JobPhase::kSucceeded;
    for (const RemoteIntent& intent : nominate.upsert_intents)
      finish.drop_intents.emplace_back(intent.cluster, intent.kind);
    if (!one(0, [&](Pending& p) { Submit(store, p, job); }) ||
        !one(1, [&](Pending& p) { Apply(store, p, std::move(nominate)); }) ||
        !one(2, [&](Pending& p) { Apply(store, p, std::move(finish)); })) {
      return false;
    }
  }
  for (int s = 0; s < 3; ++s) {
    std::printf("  %-30s %6.2f WAL frames/write  %7.3f ms/write (with its fsync)\n", kWhat[s],
                static_cast<double>(frames[s]) / kSteadyJobs, ms[s] / kSteadyJobs);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int jobs = argc > 1 ? std::atoi(argv[1]) : kDefaultJobs;
  const int intents_per_job = argc > 2 ? std::atoi(argv[2]) : kDefaultIntentsPerJob;
  if (jobs < 1 || intents_per_job < 1)
    return std::fprintf(stderr, "usage: store_bench [jobs [intents per job]]\n"), 2;
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gantry-store-bench.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return std::perror("mkdtemp"), 1;
  gantry::SqliteStoreOptions options;
  options.path = dir + "/gantry.db";
  int rc = 1;
  {
    auto store = gantry::OpenSqliteStore(options);
    if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().ToString().c_str()), 1;
    std::printf("schema %d, %d jobs, %d namespaces, %d clusters\n", gantry::LatestSchemaVersion(),
                jobs, kNamespaces, kClusters);
    Bulk submits, nominations;
    const int64_t intents = Fill(**store, jobs, intents_per_job, submits, nominations);
    if (intents >= 0) {
      std::printf("fill: %lld intents, database %.0f MiB\n", static_cast<long long>(intents),
                  static_cast<double>(std::filesystem::file_size(options.path)) / (1 << 20));
      submits.Print("submit");
      nominations.Print("nominate (intents)");
      std::printf("reads (median of %d passes):\n", kRepeats);
      auto q = [](std::optional<std::string> ns, std::optional<JobPhase> phase) {
        ListQuery query;
        query.ns = std::move(ns);
        query.phase = phase;
        return query;
      };
      ListPages(**store, "namespace=team-7 phase=Succeeded", q("team-7", JobPhase::kSucceeded));
      ListPages(**store, "namespace=team-7 phase=Running", q("team-7", JobPhase::kRunning));
      ListPages(**store, "namespace=team-7 phase=Failed", q("team-7", JobPhase::kFailed));
      ListPages(**store, "namespace=small phase=Succeeded", q("small", JobPhase::kSucceeded));
      ListPages(**store, "namespace=team-7 (control)", q("team-7", std::nullopt));
      ListPages(**store, "phase=Running (control)", q(std::nullopt, JobPhase::kRunning));
      Scans(**store);
      std::printf("writes, one per commit (%d jobs):\n", kSteadyJobs);
      if (SteadyWrites(**store, jobs, intents_per_job)) rc = 0;
    }
    if (intents < 0) std::fprintf(stderr, "fill: a write failed or did not come back\n");
  }
  std::filesystem::remove_all(dir);
  return rc;
}
