// Decision: the result of Place(), with an explanation for every cluster.
//
// Every cluster of the snapshot gets exactly one verdict: excluded by the first
// failing hard filter (with a message carrying the numbers), or feasible with
// its score broken down by term. The two kinds live in separate lists so that
// neither carries the other's fields (the decision is built per job and per
// reconcile, over thousands of clusters). Candidates are the feasible clusters chosen by
// the dispatch mode, best first. The whole value is a deterministic function of
// the inputs: the order of clusters in the snapshot does not matter.
//
// Thread-safety: plain values.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gantry::placement {

// Hard filters, in the order they are evaluated. Static filters come first, so
// a cluster that can never run the job is reported for that reason rather than
// for a transient one (cordoned, not Ready) that hides it.
enum class Filter {
  kAllowlist,       // not in the job's cluster allowlist
  kRegion,          // region not allowed
  kComplianceZone,  // in none of the job's compliance zones
  kClusterLabels,   // a matchLabels entry does not match
  kAccelerator,     // no accelerator of the required model / memory / interconnect
  kDatasets,        // a required dataset is missing
  kPrice,           // GPU hour above the job's ceiling (or unknown)
  kNodeFit,         // some pod is larger than the largest node
  kQuota,           // the job's ClusterQueue cannot hold the gang, or is missing (queue_quota.h)
  kCordoned,        // cordoned by an operator (transient)
  kHealth,          // connection not Ready (transient)
  // The job names a WorkloadPriorityClass the cluster does not have, or
  // whose classes gantry cannot read (transient: an operator may create
  // the class or grant the list). Told last: a class is no use where the
  // job cannot go for another reason.
  kPriorityClass,
};
inline constexpr int kFilterCount = 12;

std::string_view FilterName(Filter filter);  // "Region", "Quota", ...

// Whether a failure of this filter reflects static capability or configured
// quota (true) rather than a passing state (false). See Exclusion::permanent.
bool IsPermanentFilter(Filter filter);

struct Exclusion {
  Filter filter = Filter::kAllowlist;
  std::string message;  // e.g. "region us-east-1 not in [eu-central-1]"
  // True when the cluster could never run the job as configured; false for
  // transient states, for a LocalQueue or ClusterQueue missing or not
  // Active, and for a quota shortfall that is not certain (a stale reading,
  // a cohort that may lend more, a LocalQueue list that failed).
  bool permanent = true;
};

// Soft score terms, in the order they are summed and reported.
enum class Term {
  kFitsNow,
  kFreeQuota,
  kPrice,
  kQueueDepth,
  kAdmissionLatency,
  kAdmissionFailures,
  kDataLocality,
};
inline constexpr int kTermCount = 7;

std::string_view TermName(Term term);  // "fits_now", "free_quota", ...

struct Score {
  double total = 0;                         // sum over terms of value x weight, in Term order
  std::array<double, kTermCount> values{};  // each in [0, 1]
  double value(Term t) const { return values[static_cast<size_t>(t)]; }
};

// A cluster that passed every filter.
struct RankedCluster {
  std::string cluster;
  Score score;
  int32_t rank = 0;       // 1-based
  bool selected = false;  // among the candidates
};

// A cluster that failed a filter.
struct ExcludedCluster {
  std::string cluster;
  Exclusion exclusion;
};

struct Decision {
  // Clusters to nominate, best first: a prefix of `feasible`.
  std::vector<std::string> candidates;
  // Every cluster appears in exactly one of the two lists.
  std::vector<RankedCluster> feasible;    // by rank (score, then name)
  std::vector<ExcludedCluster> excluded;  // by name
  // The weights the scores were computed with, in Term order, so a Score can
  // be broken down into points without the options.
  std::array<double, kTermCount> weights{};
  // No cluster could ever run the job: every cluster is excluded permanently
  // (static capability or quota). False for an empty snapshot, which
  // means "inventory not known yet", not "impossible".
  bool unschedulable = false;

  // value x weight of one term of one score.
  double Points(const Score& score, Term t) const {
    return score.value(t) * weights[static_cast<size_t>(t)];
  }
};

}  // namespace gantry::placement
