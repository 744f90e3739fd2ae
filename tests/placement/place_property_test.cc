// Property test: random fleets and random jobs (fixed seed). An independent
// oracle re-derives every hard constraint from the inputs (with 128-bit sums,
// so it shares no arithmetic with the implementation) and checks that:
//   - no feasible cluster, in particular no candidate, fails any filter;
//   - every excluded cluster names a filter that really fails, and no earlier
//     filter in evaluation order fails;
//   - candidates are the best-ranked feasible clusters, as many as the mode says;
//   - unschedulable holds exactly when every cluster is excluded permanently.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gantry/placement/place.h"

namespace gantry::placement {
namespace {

using namespace gantry::placement::testing;  // NOLINT: test-local builders

constexpr int kIterations = 3000;
constexpr uint32_t kSeed = 20260801;

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, static_cast<int>(v.size()) - 1)];
  }
  std::vector<std::string> Subset(const std::vector<std::string>& v, double p) {
    std::vector<std::string> out;
    for (const auto& s : v)
      if (Chance(p)) out.push_back(s);
    return out;
  }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
};

const std::vector<std::string> kRegions = {"r1", "r2", "r3"};
const std::vector<std::string> kZones = {"z1", "z2", "z3"};
const std::vector<std::string> kModels = {"A100", "H100", "L4"};
const std::vector<std::string> kDatasets = {"d1", "d2", "d3"};
const std::vector<std::string> kResources = {"cpu", "memory", kGpu, "example.com/fpga"};
const std::vector<std::string> kClasses = {"high", "low"};

ClusterSnapshot RandomCluster(Gen& g, int index) {
  ClusterSnapshot c;
  c.name = "c" + std::to_string(index);
  c.region = g.Pick(kRegions);
  c.compliance_zones = g.Subset(kZones, 0.4);
  if (g.Chance(0.8)) c.labels["tier"] = g.Chance(0.5) ? "a" : "b";
  for (int i = g.Int(0, 2); i > 0; --i) {
    c.accelerators.push_back(
        Accelerator{g.Pick(kModels), g.Pick<int64_t>({24, 40, 80}), g.Pick<int32_t>({0, 4, 8}),
                    g.Chance(0.5) ? Interconnect::kNvlink : Interconnect::kPcie, g.Chance(0.5)});
  }
  c.node = NodeShape{Units(g.Pick<int64_t>({0, 32, 96})), GiB(g.Pick<int64_t>({0, 128, 1024})),
                     g.Pick<int32_t>({0, 4, 8}), g.Int(0, 64)};
  if (g.Chance(0.85)) c.price_per_gpu_hour = g.Int(50, 400) / 100.0;
  c.datasets = g.Subset(kDatasets, 0.5);
  c.cordoned = g.Chance(0.1);
  c.health = g.Chance(0.8) ? ClusterHealth::kReady
                           : g.Pick<ClusterHealth>({ClusterHealth::kNotReady, ClusterHealth::kLost,
                                                    ClusterHealth::kUnknown});
  for (const std::string& r : kResources) {
    if (!g.Chance(r == "example.com/fpga" ? 0.2 : 0.85)) continue;
    const int64_t nominal = r == "memory" ? GiB(g.Int(0, 8192)) : Units(g.Int(0, 512));
    const int64_t reserved = nominal / 100 * g.Int(0, 120);
    c.capacity.quota[r] = ResourceQuota{nominal, reserved};
  }
  c.capacity.stale = g.Chance(0.1);
  c.capacity.pending_workloads = g.Int(0, 30);
  // Its WorkloadPriorityClasses: read (some of kClasses), or not (no
  // description of its queues, or the list refused). LocalQueues unknown:
  // the quota is judged on the sums, as the oracle does.
  if (g.Chance(0.8)) {
    auto queues = std::make_shared<ClusterQueues>();
    queues->priority_classes_known = g.Chance(0.85);
    if (!queues->priority_classes_known) queues->priority_classes_error = "listing them is forbidden (403)";
    for (const std::string& name : g.Subset(kClasses, 0.6)) queues->priority_classes[name] = 1000;
    c.capacity.queues = std::move(queues);
  }
  if (g.Chance(0.5)) c.admission = AdmissionStats{g.Int(0, 120'000), g.Int(0, 100) / 100.0};
  return c;
}

JobDemand RandomJob(Gen& g, const std::vector<ClusterSnapshot>& fleet) {
  JobDemand job;
  for (int i = g.Int(1, 3); i > 0; --i) {
    PodSetDemand set{"ps" + std::to_string(i), g.Int(-1, 8), {}};
    if (g.Chance(0.6)) set.requests_milli[kGpu] = Units(g.Pick<int64_t>({0, 1, 2, 4, 8, 16}));
    if (g.Chance(0.9)) set.requests_milli["cpu"] = g.Int(0, 48'000);
    if (g.Chance(0.9)) set.requests_milli["memory"] = GiB(g.Int(0, 300));
    if (g.Chance(0.05)) set.requests_milli["example.com/fpga"] = Units(g.Int(0, 4));
    job.pod_sets.push_back(std::move(set));
  }
  PlacementConstraints& c = job.constraints;
  if (g.Chance(0.1)) {
    for (const auto& cluster : fleet)
      if (g.Chance(0.3)) c.clusters.push_back(cluster.name);
  }
  if (g.Chance(0.3)) c.regions = g.Subset(kRegions, 0.5);
  if (g.Chance(0.3)) c.compliance_zones = g.Subset(kZones, 0.5);
  if (g.Chance(0.2)) c.cluster_match_labels["tier"] = g.Chance(0.5) ? "a" : "b";
  if (g.Chance(0.3)) {
    AcceleratorRequirement req;
    if (g.Chance(0.5)) req.model = g.Pick(kModels);
    if (g.Chance(0.5)) req.min_memory_gib = g.Pick<int64_t>({24, 40, 80});
    req.interconnect =
        g.Pick<Interconnect>({Interconnect::kAny, Interconnect::kNvlink, Interconnect::kPcie});
    c.accelerator = req;
  }
  if (g.Chance(0.3)) c.datasets = g.Subset(kDatasets, 0.4);
  if (g.Chance(0.3)) c.max_price_per_gpu_hour = g.Int(50, 400) / 100.0;
  if (g.Chance(0.3)) job.preferred_datasets = g.Subset(kDatasets, 0.5);
  if (g.Chance(0.15)) job.priority_class = g.Pick(kClasses);
  if (g.Chance(0.5)) {
    job.dispatch.mode = DispatchMode::kIncremental;
    job.dispatch.step_size = g.Int(-1, 5);
    job.rounds_elapsed = g.Int(-1, 4);
  }
  return job;
}

// ---- The oracle: each filter restated from its contract in filters.h. ----

using Wide = __int128;

bool In(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::map<std::string, Wide> Totals(const JobDemand& job) {
  std::map<std::string, Wide> totals;
  for (const auto& set : job.pod_sets) {
    for (const auto& [r, q] : set.requests_milli) {
      if (set.count > 0 && q > 0) totals[r] += Wide{q} * set.count;
    }
  }
  return totals;
}

int64_t PerPodMax(const JobDemand& job, const std::string& resource) {
  int64_t best = 0;
  for (const auto& set : job.pod_sets) {
    auto it = set.requests_milli.find(resource);
    if (set.count > 0 && it != set.requests_milli.end()) best = std::max(best, it->second);
  }
  return best;
}

bool AccMatches(const Accelerator& a, const AcceleratorRequirement& r) {
  return (r.model.empty() || r.model == a.model) &&
         (!r.min_memory_gib || a.memory_gib >= *r.min_memory_gib) &&
         (r.interconnect == Interconnect::kAny || r.interconnect == a.interconnect);
}

bool Fails(Filter f, const JobDemand& job, const ClusterSnapshot& c) {
  const PlacementConstraints& k = job.constraints;
  const auto totals = Totals(job);
  const bool gpu_job = totals.count(kGpu) > 0 && totals.at(kGpu) > 0;
  switch (f) {
    case Filter::kAllowlist:
      return !k.clusters.empty() && !In(k.clusters, c.name);
    case Filter::kRegion:
      return !k.regions.empty() && !In(k.regions, c.region);
    case Filter::kComplianceZone:
      return !k.compliance_zones.empty() &&
             std::none_of(c.compliance_zones.begin(), c.compliance_zones.end(),
                          [&](const std::string& z) { return In(k.compliance_zones, z); });
    case Filter::kClusterLabels:
      for (const auto& [key, value] : k.cluster_match_labels) {
        if (!c.labels.count(key) || c.labels.at(key) != value) return true;
      }
      return false;
    case Filter::kAccelerator:
      if (k.accelerator) {
        return std::none_of(c.accelerators.begin(), c.accelerators.end(),
                            [&](const Accelerator& a) { return AccMatches(a, *k.accelerator); });
      }
      return gpu_job && c.accelerators.empty();
    case Filter::kDatasets:
      return std::any_of(k.datasets.begin(), k.datasets.end(),
                         [&](const std::string& d) { return !In(c.datasets, d); });
    case Filter::kPrice:
      return gpu_job && k.max_price_per_gpu_hour &&
             (!c.price_per_gpu_hour || *c.price_per_gpu_hour > *k.max_price_per_gpu_hour);
    case Filter::kNodeFit: {
      int64_t gpn = 0;
      for (const auto& a : c.accelerators) {
        if (k.accelerator && !AccMatches(a, *k.accelerator)) continue;
        gpn = std::max<int64_t>(gpn, a.gpus_per_node ? a.gpus_per_node : c.node.gpus_per_node);
      }
      auto too_big = [](int64_t pod, int64_t node) { return node > 0 && pod > node; };
      return too_big(PerPodMax(job, kGpu), gpn * 1000) ||
             too_big(PerPodMax(job, "cpu"), c.node.cpu_milli) ||
             too_big(PerPodMax(job, "memory"), c.node.memory_milli);
    }
    case Filter::kQuota:
      for (const auto& [r, total] : totals) {
        auto it = c.capacity.quota.find(r);
        const Wide nominal = it == c.capacity.quota.end() ? 0 : it->second.nominal_milli;
        if (total > nominal) return true;
      }
      return false;
    case Filter::kCordoned:
      return c.cordoned;
    case Filter::kHealth:
      return c.health != ClusterHealth::kReady;
    case Filter::kPriorityClass: {
      if (job.priority_class.empty()) return false;
      const ClusterQueues* q = c.capacity.queues.get();
      return !q || !q->priority_classes_known || !q->priority_classes.count(job.priority_class);
    }
  }
  return true;
}

size_t ExpectedSelection(const JobDemand& job, size_t feasible) {
  size_t wanted = feasible;
  if (job.dispatch.mode == DispatchMode::kIncremental) {
    wanted = static_cast<size_t>(std::max(1, job.dispatch.step_size)) *
             static_cast<size_t>(std::max(0, job.rounds_elapsed) + 1);
  }
  return std::min<size_t>({wanted, 8, feasible});
}

TEST_CASE("random fleets and jobs respect every hard constraint", "[placement][property]") {
  Gen g(kSeed);
  int with_candidates = 0;
  int unschedulable_seen = 0;
  std::set<Filter> filters_seen;
  for (int iter = 0; iter < kIterations; ++iter) {
    std::vector<ClusterSnapshot> fleet;
    for (int i = g.Int(0, 24); i > 0; --i) fleet.push_back(RandomCluster(g, i));
    const JobDemand job = RandomJob(g, fleet);
    const Decision d = Place(job, fleet);
    INFO("iteration " << iter);
    REQUIRE(d.feasible.size() + d.excluded.size() == fleet.size());
    std::map<std::string, const ClusterSnapshot*> by_name;
    for (const auto& c : fleet) by_name[c.name] = &c;

    double last_score = 1e300;
    for (size_t i = 0; i < d.feasible.size(); ++i) {
      const RankedCluster& v = d.feasible[i];
      INFO("feasible cluster " << v.cluster);
      const ClusterSnapshot& c = *by_name.at(v.cluster);
      for (int f = 0; f < kFilterCount; ++f) CHECK_FALSE(Fails(static_cast<Filter>(f), job, c));
      CHECK(v.rank == static_cast<int32_t>(i + 1));
      CHECK(v.score.total <= last_score);
      last_score = v.score.total;
    }
    bool all_permanent = true;
    for (const ExcludedCluster& v : d.excluded) {
      INFO("excluded cluster " << v.cluster << ": " << v.exclusion.message);
      const ClusterSnapshot& c = *by_name.at(v.cluster);
      filters_seen.insert(v.exclusion.filter);
      CHECK(Fails(v.exclusion.filter, job, c));
      for (int f = 0; f < static_cast<int>(v.exclusion.filter); ++f) {
        // A quota shortfall that may pass (read stale) is told after a cordon
        // or an outage, later filters (filters.cc).
        const bool told_after = static_cast<Filter>(f) == Filter::kQuota &&
                                (c.capacity.stale || c.capacity.queues) &&
                                (c.cordoned || c.health != ClusterHealth::kReady);
        if (!told_after) CHECK_FALSE(Fails(static_cast<Filter>(f), job, c));
      }
      // (A cluster that describes its queues, their LocalQueues unknown, is
      // judged on the sums, which are never final there: queue_quota.cc.)
      const bool permanent = IsPermanentFilter(v.exclusion.filter) &&
                             !(v.exclusion.filter == Filter::kQuota && (c.capacity.stale || c.capacity.queues));
      CHECK(v.exclusion.permanent == permanent);
      CHECK_FALSE(v.exclusion.message.empty());
      all_permanent = all_permanent && permanent;
    }
    const size_t feasible = d.feasible.size();
    const size_t k = ExpectedSelection(job, feasible);
    REQUIRE(d.candidates.size() == k);
    for (size_t i = 0; i < feasible; ++i) {
      CHECK(d.feasible[i].selected == (i < k));
      if (i < k) CHECK(d.candidates[i] == d.feasible[i].cluster);
    }
    CHECK(d.unschedulable == (!fleet.empty() && feasible == 0 && all_permanent));
    with_candidates += k > 0 ? 1 : 0;
    unschedulable_seen += d.unschedulable ? 1 : 0;
  }
  // The generator must exercise every filter and both outcomes, or the
  // property says little.
  CHECK(filters_seen.size() == static_cast<size_t>(kFilterCount));
  CHECK(with_candidates > kIterations / 4);
  CHECK(unschedulable_seen > 10);
}

}  // namespace
}  // namespace gantry::placement
