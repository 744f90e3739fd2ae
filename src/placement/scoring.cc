#include "scoring.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "filters.h"
#include "queue_quota.h"

namespace gantry::placement {
namespace {

double PriceValue(const GangDemand& demand, const ClusterSnapshot& cluster,
                  const FeasibleSetStats& stats) {
  const std::optional<double> price = KnownPrice(cluster);
  if (!demand.needs_gpu() || !price || !stats.min_price) return 0;
  const double spread = *stats.max_price - *stats.min_price;
  if (spread <= 0) return 1;
  return std::clamp((*stats.max_price - *price) / spread, 0.0, 1.0);
}

double LocalityValue(const JobDemand& job, const ClusterSnapshot& cluster) {
  if (job.preferred_datasets.empty()) return 0;
  int present = 0;
  for (const std::string& dataset : job.preferred_datasets) {
    if (std::find(cluster.datasets.begin(), cluster.datasets.end(), dataset) !=
        cluster.datasets.end()) {
      ++present;
    }
  }
  return static_cast<double>(present) / static_cast<double>(job.preferred_datasets.size());
}

}  // namespace

std::array<double, kTermCount> WeightsByTerm(const ScoreWeights& w) {
  std::array<double, kTermCount> out{};
  out[static_cast<size_t>(Term::kFitsNow)] = w.fits_now;
  out[static_cast<size_t>(Term::kFreeQuota)] = w.free_quota;
  out[static_cast<size_t>(Term::kPrice)] = w.price;
  out[static_cast<size_t>(Term::kQueueDepth)] = w.queue_depth;
  out[static_cast<size_t>(Term::kAdmissionLatency)] = w.admission_latency;
  out[static_cast<size_t>(Term::kAdmissionFailures)] = w.admission_failures;
  out[static_cast<size_t>(Term::kDataLocality)] = w.data_locality;
  return out;
}

Score ScoreCluster(const JobDemand& job, const GangDemand& demand, const ClusterSnapshot& cluster,
                   const FeasibleSetStats& stats, const std::array<double, kTermCount>& weights) {
  Score score;
  auto set = [&score](Term term, double value) { score.values[static_cast<size_t>(term)] = value; };
  const Headroom headroom = ComputeHeadroom(job, demand, cluster);
  set(Term::kFitsNow, headroom.fits_now ? 1 : 0);
  set(Term::kFreeQuota, headroom.free_fraction);
  set(Term::kPrice, PriceValue(demand, cluster, stats));
  const double pending = std::max(0, cluster.capacity.pending_workloads);
  set(Term::kQueueDepth, 1.0 / (1.0 + pending / kPendingAtHalfScore));
  double latency = kUnknownAdmissionScore;
  double failures = kUnknownAdmissionScore;
  // NaN or out-of-range statistics count as no data: they must never poison
  // the ordering.
  if (cluster.admission && std::isfinite(cluster.admission->failure_rate)) {
    const double p50 = static_cast<double>(std::max<int64_t>(0, cluster.admission->latency_p50_ms));
    latency = 1.0 / (1.0 + p50 / kLatencyAtHalfScoreMs);
    failures = 1.0 - std::clamp(cluster.admission->failure_rate, 0.0, 1.0);
  }
  set(Term::kAdmissionLatency, latency);
  set(Term::kAdmissionFailures, failures);
  set(Term::kDataLocality, LocalityValue(job, cluster));
  for (size_t t = 0; t < score.values.size(); ++t) score.total += score.values[t] * weights[t];
  return score;
}

}  // namespace gantry::placement
