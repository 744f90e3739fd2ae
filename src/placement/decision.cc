#include "gantry/placement/decision.h"

namespace gantry::placement {

std::string_view FilterName(Filter filter) {
  switch (filter) {
    case Filter::kAllowlist:
      return "Allowlist";
    case Filter::kRegion:
      return "Region";
    case Filter::kComplianceZone:
      return "ComplianceZone";
    case Filter::kClusterLabels:
      return "ClusterLabels";
    case Filter::kAccelerator:
      return "Accelerator";
    case Filter::kDatasets:
      return "Datasets";
    case Filter::kPrice:
      return "Price";
    case Filter::kNodeFit:
      return "NodeFit";
    case Filter::kQuota:
      return "Quota";
    case Filter::kCordoned:
      return "Cordoned";
    case Filter::kHealth:
      return "Health";
    case Filter::kPriorityClass:
      return "PriorityClass";
  }
  return "Unknown";
}

bool IsPermanentFilter(Filter filter) {
  // Cordoning is lifted by an operator and health recovers on its own; every
  // other filter compares the job with configuration, which a retry won't change.
  // A WorkloadPriorityClass may be created at any time.
  return filter != Filter::kCordoned && filter != Filter::kHealth && filter != Filter::kPriorityClass;
}

std::string_view TermName(Term term) {
  switch (term) {
    case Term::kFitsNow:
      return "fits_now";
    case Term::kFreeQuota:
      return "free_quota";
    case Term::kPrice:
      return "price";
    case Term::kQueueDepth:
      return "queue_depth";
    case Term::kAdmissionLatency:
      return "admission_latency";
    case Term::kAdmissionFailures:
      return "admission_failures";
    case Term::kDataLocality:
      return "data_locality";
  }
  return "unknown";
}

}  // namespace gantry::placement
