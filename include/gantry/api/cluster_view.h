// How worker clusters look over the API: {apiVersion: gantry.dev/v1, kind:
// Cluster, metadata, spec (static capabilities), status (health, outage,
// capacity and its age)}.
#pragma once

#include <nlohmann/json.hpp>

#include "gantry/inventory/fleet.h"

namespace gantry::api {

nlohmann::json ClusterToJson(const inventory::ClusterView& view, int64_t now_ms, int64_t stale_after_ms);

}  // namespace gantry::api
