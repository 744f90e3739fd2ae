// Conversions from the inventory's types to the placement engine's view of a
// cluster (gantry/placement/cluster_snapshot.h).
//
// ToClusterSnapshot fills the static fields only (name, region, zone,
// provider, compliance zones, labels, accelerators, node shape, on-demand
// price, datasets, LocalQueue names, cordoned). Health, capacity and admission statistics are
// left at their defaults for the caller to fill from the live caches.
#pragma once

#include <cstdint>

#include "gantry/inventory/cluster_config.h"
#include "gantry/inventory/cluster_health.h"
#include "gantry/placement/cluster_snapshot.h"

namespace gantry::inventory {

placement::ClusterSnapshot ToClusterSnapshot(const ClusterConfig& config);

// Ready -> kReady, Unknown -> kUnknown, NotReady -> kNotReady, or kLost once
// the outage (first_lost_ms) has lasted `lost_timeout_ms` or longer.
placement::ClusterHealth ToPlacementHealth(const ClusterHealth& health, int64_t now_ms,
                                           int64_t lost_timeout_ms);

}  // namespace gantry::inventory
