// watch_line_bench: the CPU cost of one watch event as a watch thread reads
// it: ParseWatchLine with the observer's only_fields for Workloads, next to
// nlohmann's plain parse of the same line (the reference it is held to in
// tests/kube/watch_line_test.cc). The line is a Workload event as gantry-sim
// sends it after admission (about 1.4 KB). Figures are thread CPU time, the
// median of several rounds. Linked with jemalloc, as the daemon is.
//
//   watch_line_bench [lines per round [rounds]]   (default: 50000 x 7)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "gantry/kube/watch_line.h"

namespace {

const char* kLine =
    R"({"type":"MODIFIED","object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload","metadata":{)"
    R"("annotations":{"gantry.dev/epoch":"1"},"creationTimestamp":"2026-11-30T02:54:16Z","generation":1,)"
    R"("labels":{"gantry.dev/job-uid":"01a22a5f-e131-7d33-a4c6-0ebf88fb23ef","kueue.x-k8s.io/multikueue-origin":"gantry"},)"
    R"("name":"probe-line-88fb23ef","namespace":"team-a","ownerReferences":[{"apiVersion":"batch/v1",)"
    R"("blockOwnerDeletion":true,"controller":true,"kind":"Job","name":"probe-line-88fb23ef",)"
    R"("uid":"01a22a5f-e143-70d7-879b-cf6142ce144a"}],"resourceVersion":"27","uid":"01a22a5f-e138-77d3-a35f-e1db0af769d2"},)"
    R"("spec":{"podSets":[{"count":1,"name":"main","template":{"spec":{"containers":[{"env":[{"name":"GANTRY_EPOCH",)"
    R"("value":"1"}],"image":"registry.example.com/train:1","name":"main","resources":{"requests":{"cpu":"100m",)"
    R"("memory":"128Mi"}}}],"restartPolicy":"Never"}}}],"priority":0,"queueName":"team-a"},"status":{"admission":{)"
    R"("clusterQueue":"cluster-queue","podSetAssignments":[{"count":1,"flavors":{"cpu":"h100","memory":"h100"},)"
    R"("name":"main","resourceUsage":{"cpu":"100m","memory":"128Mi"}}]},"conditions":[{"lastTransitionTime":)"
    R"("2026-11-30T02:54:16Z","message":"Quota reserved in ClusterQueue cluster-queue","observedGeneration":1,)"
    R"("reason":"QuotaReserved","status":"True","type":"QuotaReserved"},{"lastTransitionTime":"2026-11-30T02:54:16Z",)"
    R"("message":"The workload is admitted","observedGeneration":1,"reason":"Admitted","status":"True","type":"Admitted"}]}}})";

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

std::size_t g_sink = 0;  // so the optimizer cannot drop the work

// The median over rounds of CPU microseconds per line.
double Median(int lines, int rounds, const std::function<std::size_t()>& parse) {
  std::vector<double> per_line;
  for (int r = 0; r < rounds; ++r) {
    double start = ThreadCpuMicros();
    for (int i = 0; i < lines; ++i) g_sink += parse();
    per_line.push_back((ThreadCpuMicros() - start) / lines);
  }
  std::sort(per_line.begin(), per_line.end());
  return per_line[per_line.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int lines = argc > 1 ? std::atoi(argv[1]) : 50000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const std::string line = kLine;
  // The observer's for Workloads (src/dispatch/observer_watch.cc).
  const gantry::kube::OnlyFields only = {{"spec", {"suspend"}}, {"status", {"conditions"}}};
  if (gantry::kube::ParseWatchLine(line, only).is_discarded()) {
    std::fprintf(stderr, "watch_line_bench: the sample line does not parse\n");
    return 1;
  }
  double watch = Median(lines, rounds, [&] { return gantry::kube::ParseWatchLine(line, only).size(); });
  double plain = Median(lines, rounds, [&] { return nlohmann::json::parse(line).size(); });
  std::printf("watch line of %zu bytes, %d lines x %d rounds (median, thread CPU):\n", line.size(), lines, rounds);
  std::printf("  ParseWatchLine (observer's only_fields)  %6.2f us/line  %6.0f MB/s\n", watch, line.size() / watch);
  std::printf("  nlohmann::json::parse, whole line        %6.2f us/line  %6.0f MB/s\n", plain, line.size() / plain);
  return g_sink == 0 ? 1 : 0;
}
