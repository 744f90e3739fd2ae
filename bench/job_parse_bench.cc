// job_parse_bench: the CPU cost of the submission path's document handling,
// per document: ParseJobDocument alone, and ParseJobDocument followed by
// SpecToJsonText(spec) (the text ApiService::Submit stores); and, to tell the
// two apart, SpecToJsonText(spec) alone of an already parsed spec, next to
// SpecToJson(spec).dump(), the tree it replaced. The document is
// the one bench/submit_loadgen.cc submits. Figures are thread CPU time, so a
// busy machine inflates them less than wall time; the median of several
// rounds is printed. Linked with jemalloc like the daemon (bench/job.cmake).
// Build RelWithDebInfo (-O2) before reading the numbers.
//
//   job_parse_bench [documents per round [rounds]]   (default: 20000 x 7)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "bench_job_document.h"
#include "gantry/job/job_document.h"

namespace {

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// Sink so the optimizer cannot drop the work.
std::size_t g_sink = 0;

// One round: CPU microseconds per document.
double Round(const std::vector<std::string>& docs, bool text) {
  double start = ThreadCpuMicros();
  for (const std::string& body : docs) {
    auto parsed = gantry::ParseJobDocument(body, gantry::DocumentFormat::kJson, "bench");
    const auto* spec = std::get_if<gantry::JobSpec>(&parsed);
    if (spec == nullptr) {
      std::fprintf(stderr, "job_parse_bench: document refused: %s\n",
                   std::get<gantry::DocumentError>(parsed).message.c_str());
      std::exit(1);
    }
    g_sink += text ? gantry::SpecToJsonText(*spec).size() : spec->pod_sets.size();
  }
  return (ThreadCpuMicros() - start) / static_cast<double>(docs.size());
}

// The stored text alone, CPU microseconds per spec: written directly
// (tree = false) or through SpecToJson(spec).dump() (tree = true).
double DumpRound(const std::vector<gantry::JobSpec>& specs, bool tree) {
  double start = ThreadCpuMicros();
  for (const gantry::JobSpec& spec : specs) {
    g_sink += tree ? gantry::SpecToJson(spec).dump().size() : gantry::SpecToJsonText(spec).size();
  }
  return (ThreadCpuMicros() - start) / static_cast<double>(specs.size());
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int per_round = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (per_round <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: job_parse_bench [documents per round [rounds]]\n");
    return 2;
  }
  std::vector<std::string> docs;
  for (int i = 0; i < per_round; ++i) docs.push_back(gantry::bench::JobDocument("bench-" + std::to_string(i)));
  Round(docs, true);  // warm-up
  std::vector<gantry::JobSpec> specs;
  for (const std::string& body : docs) {
    specs.push_back(std::get<gantry::JobSpec>(
        gantry::ParseJobDocument(body, gantry::DocumentFormat::kJson, "bench")));
  }
  std::vector<double> parse, parse_dump, dump, tree;
  for (int r = 0; r < rounds; ++r) {
    parse.push_back(Round(docs, false));
    parse_dump.push_back(Round(docs, true));
    dump.push_back(DumpRound(specs, false));
    tree.push_back(DumpRound(specs, true));
  }
  std::printf("document: %zu bytes, %d documents x %d rounds (thread CPU time, median)\n",
              docs[0].size(), per_round, rounds);
  std::printf("parse            %8.2f us/doc  (min %.2f)\n", Median(parse),
              *std::min_element(parse.begin(), parse.end()));
  std::printf("parse+text       %8.2f us/doc  (min %.2f)\n", Median(parse_dump),
              *std::min_element(parse_dump.begin(), parse_dump.end()));
  std::printf("text only        %8.2f us/doc  (min %.2f)\n", Median(dump),
              *std::min_element(dump.begin(), dump.end()));
  std::printf("tree+dump only   %8.2f us/doc  (min %.2f)\n", Median(tree),
              *std::min_element(tree.begin(), tree.end()));
  return g_sink == 0 ? 1 : 0;
}
