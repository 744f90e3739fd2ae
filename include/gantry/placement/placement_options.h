// PlacementOptions: the tunables of Place(), each with its default and reason.
//
// Scoring: every soft term is a value in [0, 1] multiplied by its weight; a
// cluster's score is the sum (see scoring.cc for how each term is computed).
// The defaults encode one ordering of concerns: "can be admitted now" first,
// then headroom left after placing, then cost, then queue and track record.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>

namespace gantry::placement {

// REQUIRES: every weight finite and >= 0 (validated where configuration is read).
struct ScoreWeights {
  // Bonus when the whole gang fits in the cluster's free quota right now
  // (nominal - reserved - demand >= 0 for every requested resource, on a fresh
  // reading). Larger than the sum of all other weights, so every cluster that
  // can admit now outranks every cluster that would have to wait.
  double fits_now = 100;
  // Fraction of quota still free after placing, on the tightest requested
  // resource: leaves room for the next job and avoids preemption.
  double free_quota = 10;
  // Cheaper GPU hours score higher, normalized over the feasible set. Half of
  // free_quota: cost matters, but not more than landing where there is room.
  double price = 5;
  // Fewer pending workloads in the cluster's queue score higher.
  double queue_depth = 3;
  // Faster recent admissions score higher.
  double admission_latency = 1;
  // Fewer recent admission failures score higher; a stronger signal than
  // latency because a failure costs a whole round.
  double admission_failures = 2;
  // Fraction of the job's preferred datasets present in the cluster.
  double data_locality = 2;
};

struct PlacementOptions {
  ScoreWeights weights;
  // At most this many copies of one job are nominated at once: every copy
  // queues (and may preempt) in its worker although only one will run.
  int32_t max_copies = 8;
  // The resource name that counts as GPUs (accelerator, price and per-node checks).
  std::string gpu_resource = "nvidia.com/gpu";
};

}  // namespace gantry::placement
