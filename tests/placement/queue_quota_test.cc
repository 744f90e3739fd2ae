// Placement against the job's own ClusterQueue (queue_quota.h): a cluster
// with a small queue for team-a and a big one for team-b is judged by the
// queue the job is submitted to; a missing LocalQueue or ClusterQueue, an
// inactive one and an unknown bound in a cohort never make a job
// Unschedulable; without the LocalQueues the sums apply, never for good.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gantry/placement/cluster_queues.h"
#include "gantry/placement/place.h"

namespace gantry::placement {
namespace {

using namespace gantry::placement::testing;  // NOLINT: test-local builders

FlavorQuota Gpus(std::string flavor, int64_t nominal, int64_t reserved = 0,
                 std::optional<int64_t> borrowing_limit = std::nullopt) {
  FlavorQuota f;
  f.flavor = std::move(flavor);
  f.nominal_milli = Units(nominal);
  f.reserved_milli = Units(reserved);
  if (borrowing_limit) f.borrowing_limit_milli = Units(*borrowing_limit);
  return f;
}

ClusterQueueInfo Queue(std::string name, std::vector<FlavorQuota> gpu_flavors, std::string cohort = "") {
  ClusterQueueInfo q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  q.activity = QueueActivity::kActive;
  q.resources[kGpu] = std::move(gpu_flavors);
  return q;
}

// One Ready cluster "c1" with these ClusterQueues and LocalQueues
// ("ns/name" -> ClusterQueue), and their sums as the summed quota.
ClusterSnapshot Cluster(std::vector<ClusterQueueInfo> cqs, std::map<std::string, std::string> lqs) {
  ClusterSnapshot c = GpuCluster("c1", "r1", "H100", 80, 8, Interconnect::kNvlink, 3.0, 0);
  c.capacity.quota.clear();
  auto queues = std::make_shared<ClusterQueues>();
  for (ClusterQueueInfo& q : cqs) {
    for (const auto& [resource, flavors] : q.resources) {
      for (const FlavorQuota& f : flavors) {
        c.capacity.quota[resource].nominal_milli += f.nominal_milli;
        c.capacity.quota[resource].reserved_milli += f.reserved_milli;
      }
    }
    std::string name = q.name;
    queues->by_name.emplace(std::move(name), std::move(q));
  }
  queues->local_queues_known = true;
  queues->local_queues = std::move(lqs);
  c.capacity.queues = std::move(queues);
  return c;
}

// team-a-cq: 8 GPUs; team-b-cq: 64 GPUs, 32 of them reserved.
ClusterSnapshot TeamsCluster() {
  return Cluster({Queue("team-a-cq", {Gpus("h100", 8)}), Queue("team-b-cq", {Gpus("h100", 64, 32)})},
                 {{"ml/team-a", "team-a-cq"}, {"ml/team-b", "team-b-cq"}});
}

// `pods` pods of 8 GPUs each, submitted to ml/queue.
JobDemand GpuJob(int32_t pods, const std::string& queue, int64_t gpus_per_pod = 8) {
  JobDemand job = Workers(pods, gpus_per_pod, 0, 0);
  job.ns = "ml";
  job.queue = queue;
  return job;
}

Decision PlaceOne(const JobDemand& job, const ClusterSnapshot& cluster) { return Place(job, std::span(&cluster, 1)); }

// The one cluster's exclusion (REQUIREs that it is excluded).
Exclusion ExclusionIn(const Decision& d) {
  REQUIRE(d.excluded.size() == 1);
  return d.excluded[0].exclusion;
}

ClusterSnapshot With(ClusterSnapshot c, const std::function<void(ClusterQueues&)>& change) {
  auto queues = std::make_shared<ClusterQueues>(*c.capacity.queues);
  change(*queues);
  c.capacity.queues = std::move(queues);
  return c;
}

}  // namespace

TEST_CASE("a job is judged by its own ClusterQueue, not by the sum of the cluster's", "[placement][queues]") {
  const ClusterSnapshot cluster = TeamsCluster();  // 72 GPUs summed

  SECTION("16 GPUs to team-a's 8-GPU queue: never, naming the queue") {
    const Decision d = PlaceOne(GpuJob(2, "team-a"), cluster);
    CHECK(d.candidates.empty());
    CHECK(d.unschedulable);
    const Exclusion x = ExclusionIn(d);
    CHECK(x.filter == Filter::kQuota);
    CHECK(x.permanent);
    CHECK(x.message == "needs 16 nvidia.com/gpu; ClusterQueue team-a-cq (LocalQueue ml/team-a) holds at most 8");
  }
  SECTION("16 GPUs to team-b's 64-GPU queue: a candidate that fits now, scored by team-b's free quota") {
    const Decision d = PlaceOne(GpuJob(2, "team-b"), cluster);
    REQUIRE(d.candidates == std::vector<std::string>{"c1"});
    CHECK(d.feasible[0].score.value(Term::kFitsNow) == 1);
    CHECK(d.feasible[0].score.value(Term::kFreeQuota) == Approx((32.0 - 16.0) / 64.0));
  }
  SECTION("40 GPUs to team-b: within its nominal quota, above its free: a candidate that does not fit now") {
    const Decision d = PlaceOne(GpuJob(5, "team-b"), cluster);
    REQUIRE(d.candidates == std::vector<std::string>{"c1"});
    CHECK(d.feasible[0].score.value(Term::kFitsNow) == 0);
  }
  SECTION("8 GPUs to team-a: fits, and team-b's reservations do not count against it") {
    const Decision d = PlaceOne(GpuJob(1, "team-a"), cluster);
    REQUIRE(d.candidates == std::vector<std::string>{"c1"});
    CHECK(d.feasible[0].score.value(Term::kFitsNow) == 1);
  }
  SECTION("a stale reading is no proof of never") {
    ClusterSnapshot stale = cluster;
    stale.capacity.stale = true;
    const Decision d = PlaceOne(GpuJob(2, "team-a"), stale);
    CHECK_FALSE(d.unschedulable);
    CHECK_FALSE(ExclusionIn(d).permanent);
  }
  SECTION("the cluster's localQueues mapping names the LocalQueue, as in the Workload") {
    ClusterSnapshot mapped = cluster;
    mapped.local_queues = {{"ml", "team-b"}};
    const Decision d = PlaceOne(GpuJob(2, "gpu"), mapped);
    CHECK(d.candidates == std::vector<std::string>{"c1"});
  }
  SECTION("a mapping to a name the queue-name label cannot hold leaves the cluster out for now, saying why") {
    ClusterSnapshot mapped = cluster;
    mapped.local_queues = {{"ml", "team-b." + std::string(60, 'q')}};
    const Decision d = PlaceOne(GpuJob(2, "gpu"), mapped);
    CHECK(d.candidates.empty());
    CHECK_FALSE(d.unschedulable);
    const Exclusion x = ExclusionIn(d);
    CHECK_FALSE(x.permanent);
    CHECK_THAT(x.message, Catch::StartsWith("the cluster's localQueues maps namespace ml to LocalQueue team-b.qqq") &&
                              Catch::Contains("at most 63 characters"));
  }
}

TEST_CASE("a missing LocalQueue or ClusterQueue, or one not Active, excludes a cluster for now only",
          "[placement][queues]") {
  const ClusterSnapshot cluster = TeamsCluster();
  struct Case {
    const char* what;
    ClusterSnapshot cluster;
    const char* queue;
    const char* message;
  };
  const Case cases[] = {
      {"no LocalQueue ml/team-c", cluster, "team-c",
       "LocalQueue ml/team-c does not exist here (Kueue would leave a Workload copy pending)"},
      {"its ClusterQueue gone",
       With(cluster, [](ClusterQueues& q) { q.local_queues["ml/orphan"] = "gone-cq"; }), "orphan",
       "LocalQueue ml/orphan names ClusterQueue gone-cq, which does not exist here"},
      {"its ClusterQueue not Active",
       With(cluster,
            [](ClusterQueues& q) {
              q.by_name["team-b-cq"].activity = QueueActivity::kInactive;
              q.by_name["team-b-cq"].inactive_message = "FlavorNotFound: references missing ResourceFlavor(s): [h100]";
            }),
       "team-b",
       "ClusterQueue team-b-cq (LocalQueue ml/team-b) is not Active: FlavorNotFound: references missing "
       "ResourceFlavor(s): [h100]"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    // Even a job that would fit, and even one too big for every queue: the
    // queue may be created (or fixed), and the job must wait, not fail.
    for (int32_t pods : {1, 100}) {
      const Decision d = PlaceOne(GpuJob(pods, c.queue), c.cluster);
      CHECK(d.candidates.empty());
      CHECK_FALSE(d.unschedulable);
      const Exclusion x = ExclusionIn(d);
      CHECK(x.filter == Filter::kQuota);
      CHECK_FALSE(x.permanent);
      CHECK(x.message == c.message);
    }
  }
}

TEST_CASE("a resource the job's ClusterQueue does not cover excludes for good, only when Active and fresh",
          "[placement][queues]") {
  JobDemand fpga = GpuJob(1, "team-a");
  fpga.pod_sets[0].requests_milli["example.com/fpga"] = 1000;
  const Decision d = PlaceOne(fpga, TeamsCluster());
  CHECK(d.unschedulable);
  CHECK(ExclusionIn(d).message ==
        "needs 1 example.com/fpga; ClusterQueue team-a-cq (LocalQueue ml/team-a) has no quota for example.com/fpga");
  // Not reconciled yet (no Active condition): not proof of never.
  const ClusterSnapshot unknown =
      With(TeamsCluster(), [](ClusterQueues& q) { q.by_name["team-a-cq"].activity = QueueActivity::kUnknown; });
  CHECK_FALSE(PlaceOne(fpga, unknown).unschedulable);
  CHECK_FALSE(PlaceOne(GpuJob(2, "team-a"), unknown).unschedulable);
}

TEST_CASE("several flavors of one ClusterQueue add up, and so does their free quota", "[placement][queues]") {
  // a100: 8, all reserved; h100: 8, none reserved.
  const ClusterSnapshot cluster =
      Cluster({Queue("mixed-cq", {Gpus("a100", 8, 8), Gpus("h100", 8)})}, {{"ml/mixed", "mixed-cq"}});
  const Decision two = PlaceOne(GpuJob(2, "mixed"), cluster);
  REQUIRE(two.candidates.size() == 1);
  CHECK(two.feasible[0].score.value(Term::kFitsNow) == 0);  // 8 free of 16
  const Decision one = PlaceOne(GpuJob(1, "mixed"), cluster);
  REQUIRE(one.candidates.size() == 1);
  CHECK(one.feasible[0].score.value(Term::kFitsNow) == 1);
  const Decision three = PlaceOne(GpuJob(3, "mixed"), cluster);
  CHECK(three.unschedulable);
  CHECK(ExclusionIn(three).message ==
        "needs 24 nvidia.com/gpu; ClusterQueue mixed-cq (LocalQueue ml/mixed) holds at most 16");
}

TEST_CASE("in a cohort, a job beyond the ClusterQueue's own quota is never Unschedulable unless a "
          "borrowingLimit bounds it",
          "[placement][queues][cohort]") {
  // team-a-cq (8) and team-b-cq (64) share cohort research.
  auto cohort = [](std::optional<int64_t> limit) {
    return Cluster({Queue("team-a-cq", {Gpus("h100", 8, 0, limit)}, "research"),
                    Queue("team-b-cq", {Gpus("h100", 64)}, "research")},
                   {{"ml/team-a", "team-a-cq"}, {"ml/team-b", "team-b-cq"}});
  };
  SECTION("no borrowingLimit: 16 may be borrowed, a candidate that does not fit without borrowing") {
    const Decision d = PlaceOne(GpuJob(2, "team-a"), cohort(std::nullopt));
    REQUIRE(d.candidates == std::vector<std::string>{"c1"});
    CHECK(d.feasible[0].score.value(Term::kFitsNow) == 0);
  }
  SECTION("no borrowingLimit: beyond what the cohort's queues gantry reads could lend, still a candidate") {
    // A Cohort object, or a sibling cohort under a parent, may lend what no
    // ClusterQueue gantry reads holds: only Kueue can tell.
    const Decision d = PlaceOne(GpuJob(10, "team-a"), cohort(std::nullopt));
    REQUIRE(d.candidates == std::vector<std::string>{"c1"});
    CHECK(d.feasible[0].score.value(Term::kFitsNow) == 0);
  }
  SECTION("a borrowingLimit of 4: 12 fit, 16 never") {
    CHECK(PlaceOne(GpuJob(3, "team-a", 4), cohort(4)).candidates == std::vector<std::string>{"c1"});
    const Decision d = PlaceOne(GpuJob(2, "team-a"), cohort(4));
    CHECK(d.unschedulable);
    CHECK(ExclusionIn(d).message ==
          "needs 16 nvidia.com/gpu; ClusterQueue team-a-cq (LocalQueue ml/team-a) holds at most 12: 8 of its own and "
          "at most 4 borrowed in cohort research");
  }
  SECTION("a borrowingLimit above what the cohort's queues gantry reads hold: a candidate") {
    const Decision d = PlaceOne(GpuJob(10, "team-a"), cohort(100));  // 80 > 8 + 64, < 108
    CHECK(d.candidates == std::vector<std::string>{"c1"});
  }
  SECTION("hierarchical cohorts: lenders in a sibling cohort gantry cannot tie to this one") {
    // team-a-cq in child-a with no quota of its own, team-b-cq's 64 in
    // child-b, both under a parent Cohort object gantry does not read.
    const ClusterSnapshot split = Cluster({Queue("team-a-cq", {Gpus("h100", 0)}, "child-a"),
                                           Queue("team-b-cq", {Gpus("h100", 64)}, "child-b")},
                                          {{"ml/team-a", "team-a-cq"}, {"ml/team-b", "team-b-cq"}});
    CHECK(PlaceOne(GpuJob(2, "team-a"), split).candidates == std::vector<std::string>{"c1"});
  }
}

TEST_CASE("without the LocalQueues the sums over all ClusterQueues apply, and never for good",
          "[placement][queues][fallback]") {
  const ClusterSnapshot unknown = With(TeamsCluster(), [](ClusterQueues& q) {
    q.local_queues_known = false;
    q.local_queues.clear();
  });
  // 16 GPUs fit the 72 summed (team-a's 8 is not known to be the one).
  CHECK(PlaceOne(GpuJob(2, "team-a"), unknown).candidates == std::vector<std::string>{"c1"});
  // A missing LocalQueue cannot be seen either.
  CHECK(PlaceOne(GpuJob(2, "team-c"), unknown).candidates == std::vector<std::string>{"c1"});
  const Decision big = PlaceOne(GpuJob(10, "team-a"), unknown);
  CHECK_FALSE(big.unschedulable);
  CHECK_FALSE(ExclusionIn(big).permanent);
  CHECK(ExclusionIn(big).message == "needs 80 nvidia.com/gpu; the cluster's ClusterQueues hold 72 in all");
  // A job that names no queue is judged by the sums as well.
  CHECK_FALSE(PlaceOne(GpuJob(10, ""), TeamsCluster()).unschedulable);
  // A reading that never described its queues: the sums, as final as before.
  ClusterSnapshot sums_only = TeamsCluster();
  sums_only.capacity.queues = nullptr;
  CHECK(PlaceOne(GpuJob(10, "team-a"), sums_only).unschedulable);
}

TEST_CASE("a job that names a WorkloadPriorityClass goes only where gantry knows its value, never failing for it",
          "[placement][queues]") {
  const ClusterSnapshot known = With(TeamsCluster(), [](ClusterQueues& q) {
    q.priority_classes_known = true;
    q.priority_classes = {{"high", 1000}};
  });
  JobDemand job = GpuJob(1, "team-a");
  job.priority_class = "high";
  CHECK(PlaceOne(job, known).candidates == std::vector<std::string>{"c1"});
  // A job that names none is not concerned by the classes at all.
  CHECK(PlaceOne(GpuJob(1, "team-a"), TeamsCluster()).candidates == std::vector<std::string>{"c1"});

  struct Case {
    const char* what;
    ClusterSnapshot cluster;
    const char* priority_class;
    const char* message;
  };
  ClusterSnapshot no_queues = TeamsCluster();
  no_queues.capacity.queues = nullptr;
  const Case cases[] = {
      {"no such class there", known, "urgent", "WorkloadPriorityClass urgent does not exist here"},
      {"the classes not listed",
       With(TeamsCluster(),
            [](ClusterQueues& q) {
              q.priority_classes_error = "listing WorkloadPriorityClasses is forbidden (403: no)";
            }),
       "high",
       "the job names WorkloadPriorityClass high, and gantry cannot read this cluster's classes for its value: "
       "listing WorkloadPriorityClasses is forbidden (403: no)"},
      {"no queue description at all", no_queues, "high",
       "the job names WorkloadPriorityClass high, and gantry cannot read this cluster's classes for its value"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    JobDemand named = GpuJob(1, "team-a");
    named.priority_class = c.priority_class;
    const Decision d = PlaceOne(named, c.cluster);
    CHECK(d.candidates.empty());
    CHECK_FALSE(d.unschedulable);  // the class may be created: the job waits
    const Exclusion x = ExclusionIn(d);
    CHECK(x.filter == Filter::kPriorityClass);
    CHECK(FilterName(x.filter) == "PriorityClass");
    CHECK_FALSE(x.permanent);
    CHECK(x.message == c.message);
    // One the queue can never hold is told so, the class notwithstanding.
    named.pod_sets = GpuJob(100, "team-a").pod_sets;
    const Decision never = PlaceOne(named, c.cluster);
    CHECK(never.unschedulable);
    CHECK(ExclusionIn(never).permanent);
    CHECK_THAT(ExclusionIn(never).message, Catch::Contains(" hold"));
  }
}

TEST_CASE("a resource the cluster's Kueue excludes by prefix needs no quota there, in its queue or in the sums",
          "[placement][queues]") {
  JobDemand job = GpuJob(1, "team-b");
  job.pod_sets[0].requests_milli["ephemeral-storage"] = GiB(50);
  ClusterSnapshot cluster = TeamsCluster();

  SECTION("counted: team-b's queue has no quota for it, never") {
    const Decision d = PlaceOne(job, cluster);
    CHECK(d.unschedulable);
    CHECK(ExclusionIn(d).message ==
          "needs 50Gi ephemeral-storage; ClusterQueue team-b-cq (LocalQueue ml/team-b) has no quota for "
          "ephemeral-storage");
  }
  SECTION("excluded: a candidate that fits now, scored by its GPUs alone") {
    cluster.exclude_resource_prefixes = {"example.com/", "ephemeral-"};
    const Decision d = PlaceOne(job, cluster);
    REQUIRE(d.candidates == std::vector<std::string>{"c1"});
    CHECK(d.feasible[0].score.value(Term::kFitsNow) == 1);
    CHECK(d.feasible[0].score.value(Term::kFreeQuota) == Approx((32.0 - 8.0) / 64.0));
  }
  SECTION("excluded, the queues unknown: the sums need none of it either") {
    cluster.exclude_resource_prefixes = {"ephemeral-storage"};
    cluster.capacity.queues.reset();
    const Decision d = PlaceOne(job, cluster);
    REQUIRE(d.candidates == std::vector<std::string>{"c1"});
    cluster.exclude_resource_prefixes.clear();
    CHECK(ExclusionIn(PlaceOne(job, cluster)).message ==
          "needs 50Gi ephemeral-storage; no ClusterQueue has quota for ephemeral-storage");
  }
}

TEST_CASE("the queues' stamp moves with a ClusterQueue's nominal quota, borrowing limit and cohort, not with what "
          "it holds",
          "[placement][quota]") {
  ClusterQueues q;
  q.local_queues_known = true;
  q.local_queues["team-a/gpu"] = "cq";
  q.by_name["cq"] = Queue("cq", {Gpus("h100", 8, 2)});
  const uint64_t before = QueuesStamp(q);
  CHECK(before != 0);
  // What admitted Workloads hold changes all the time: no wake-up for it.
  q.by_name["cq"].resources[kGpu][0].reserved_milli = Units(6);
  CHECK(QueuesStamp(q) == before);
  // A quota raised (or cut: a job may wait on other clusters) is news for
  // the jobs judged against the old one, Unschedulable ones too.
  q.by_name["cq"].resources[kGpu][0].nominal_milli = Units(16);
  const uint64_t raised = QueuesStamp(q);
  CHECK(raised != before);
  q.by_name["cq"].resources[kGpu][0].borrowing_limit_milli = Units(4);
  const uint64_t limited = QueuesStamp(q);
  CHECK(limited != raised);
  q.by_name["cq"].cohort = "pool";
  CHECK(QueuesStamp(q) != limited);
}

}  // namespace gantry::placement
