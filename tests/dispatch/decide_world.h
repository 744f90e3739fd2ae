// The world of the Decide() tests: one stored job, its intents, what the
// clusters (c1, c2, c3, all Ready and synced) show of it, and helpers to
// read a plan. Shared by decide_test.cc and decide_lost_test.cc.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <variant>

#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/remote_objects.h"

namespace gantry::dispatch::decide_world {

inline const char* kDoc = R"(apiVersion: gantry.dev/v1
kind: Job
metadata: {name: train, namespace: team-a}
spec:
  queue: gpu
  onClusterLoss: %POLICY%
  template:
    apiVersion: batch/v1
    kind: Job
    spec:
      parallelism: 2
      template:
        spec:
          restartPolicy: Never
          containers:
          - {name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}
)";

inline JobSpec Spec(const std::string& policy = "Requeue") {
  std::string doc = kDoc;
  doc.replace(doc.find("%POLICY%"), 8, policy);
  auto parsed = ParseJobDocument(doc, DocumentFormat::kYaml, std::nullopt);
  REQUIRE(std::holds_alternative<JobSpec>(parsed));
  return std::get<JobSpec>(parsed);
}

struct World {
  JobRecord job;
  JobSpec spec = Spec();
  FleetFacts clusters;             // in.clusters, set by Input()
  std::set<std::string> synced;    // in.synced, set by Input()
  std::set<std::string> behind;    // in.behind, set by Input()
  DecideInput in;

  World() {
    job.uid = "0123abcd-0000-4000-8000-000000000001";
    job.ns = "team-a";
    job.name = "train";
    job.queue = "gpu";
    for (const char* c : {"c1", "c2", "c3"}) {
      ClusterFacts f;
      f.ready = true;
      f.config.name = c;
      clusters[c] = f;
      synced.insert(c);
    }
    in.now_ms = 1'000'000;
  }
  DecideInput& Input() {
    in.job = &job;
    in.spec = &spec;
    in.clusters = std::make_shared<const FleetFacts>(clusters);
    in.synced = std::make_shared<const std::set<std::string>>(synced);
    in.behind = std::make_shared<const std::set<std::string>>(behind);
    return in;
  }
  // The lease is held: phase, owner and epoch set, and the owner's Workload
  // copy and real job recorded as present.
  void OwnedBy(JobPhase phase, const std::string& cluster, int64_t epoch) {
    job.phase = phase;
    job.epoch = epoch;
    job.cluster = cluster;
    Intent(cluster, "Workload", epoch);
    Intent(cluster, "Job", epoch);
  }
  // Finished on cluster at epoch, its job and Workload rows marked absent
  // (their deletes sent).
  void FinishedOn(const std::string& cluster, int64_t epoch) {
    job.phase = JobPhase::kSucceeded;
    job.epoch = epoch;
    job.cluster = cluster;
    Intent(cluster, "Job", epoch, false);
    Intent(cluster, "Workload", epoch, false);
  }
  void Intent(const std::string& cluster, const std::string& kind, int64_t epoch, bool present = true) {
    RemoteIntent i;
    i.job_uid = job.uid;
    i.cluster = cluster;
    i.kind = kind;
    i.ns = job.ns;
    i.name = RemoteName(job.name, job.uid);
    i.epoch = epoch;
    i.present = present;
    in.intents.push_back(i);
  }
  ObservedWorkload& Workload(const std::string& cluster, int64_t epoch) {
    ObservedWorkload w;
    w.ns = job.ns;
    w.name = RemoteName(job.name, job.uid);
    w.job_uid = job.uid;
    w.epoch = epoch;
    w.k8s_uid = "wl-" + cluster;
    w.resource_version = "1";
    in.observed[cluster].workloads.push_back(w);
    return in.observed[cluster].workloads.back();
  }
  ObservedJob& RemoteJob(const std::string& cluster, int64_t epoch, RemoteJobState state) {
    ObservedJob j;
    j.kind = "Job";
    j.ns = job.ns;
    j.name = RemoteName(job.name, job.uid);
    j.job_uid = job.uid;
    j.epoch = epoch;
    j.state = state;
    in.observed[cluster].jobs.push_back(j);
    return in.observed[cluster].jobs.back();
  }
};

inline int Count(const Plan& p, Verb verb, const std::string& kind, const std::string& cluster = "") {
  return static_cast<int>(std::count_if(p.actions.begin(), p.actions.end(), [&](const Action& a) {
    return a.verb == verb && a.kind == kind && (cluster.empty() || a.cluster == cluster);
  }));
}

// The plan's action of that verb on cluster's object of kind, or null.
inline const Action* Find(const Plan& p, Verb verb, const std::string& kind, const std::string& cluster) {
  for (const Action& a : p.actions) {
    if (a.verb == verb && a.kind == kind && a.cluster == cluster) return &a;
  }
  return nullptr;
}

inline const RemoteIntent* FindIntent(const DispatchUpdate& u, const std::string& cluster, const std::string& kind) {
  for (const RemoteIntent& i : u.upsert_intents) {
    if (i.cluster == cluster && i.kind == kind) return &i;
  }
  return nullptr;
}

// An Incremental job nominated at epoch 1, its copy in c1 recorded and seen.
inline World IncrementalWithCopyInC1() {
  World w;
  w.spec.dispatch.mode = DispatchMode::kIncremental;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.Intent("c1", "Workload", 1);
  w.Workload("c1", 1);
  return w;
}

inline placement::Decision Candidates(std::vector<std::string> names) {
  placement::Decision d;
  d.candidates = std::move(names);
  return d;
}

// Placement's candidates and its feasible clusters, ranked in that order.
inline placement::Decision Feasible(std::vector<std::string> candidates, std::vector<std::string> feasible) {
  placement::Decision d = Candidates(std::move(candidates));
  for (const std::string& c : feasible) {
    placement::RankedCluster r;
    r.cluster = c;
    d.feasible.push_back(r);
  }
  return d;
}

}  // namespace gantry::dispatch::decide_world
