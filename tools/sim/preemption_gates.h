// A Workload's preemption gates (Kueue v1beta2, KEP-8303): spec.preemptionGates
// names the gates; status.preemptionGates holds their positions, set by the
// controller that owns each gate (gantry opens its gantry.dev/preemption gate
// by a merge patch of the status subresource). The gates are closed by
// default: a gate is open only when status has an entry of the same name
// with position "Open". A Workload may preempt only when all are open.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::sim {

// The names in wl's spec.preemptionGates that are not open, in spec order;
// empty when it may preempt. Read leniently: malformed entries (which v1beta2
// validation refuses, but a v1beta1 write keeps) name no gate.
std::vector<std::string> ClosedPreemptionGates(const nlohmann::json& wl);

}  // namespace gantry::sim
