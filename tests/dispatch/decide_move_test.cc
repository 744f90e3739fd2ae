// Decide() step 7 at maxCopies: copies in clusters that cannot take the job
// now move to feasible clusters that have none (Ladder::MoveFromFull).
#include <catch2/catch.hpp>

#include <utility>
#include <vector>

#include "decide_world.h"

namespace gantry::dispatch {
namespace {

using decide_world::Count;
using decide_world::FindIntent;
using decide_world::World;

// Placement's ranking: each cluster with room for the job now, or not.
placement::Decision Ranked(std::vector<std::pair<std::string, bool>> clusters) {
  placement::Decision d;
  for (const auto& [name, fits] : clusters) {
    placement::RankedCluster r;
    r.cluster = name;
    r.score.values[static_cast<size_t>(placement::Term::kFitsNow)] = fits ? 1 : 0;
    r.score.values[static_cast<size_t>(placement::Term::kQueueDepth)] = 1;  // nothing pending
    d.feasible.push_back(r);
    d.candidates.push_back(name);
  }
  return d;
}

// A cluster placement leaves out for quota (its ClusterQueue missing, say).
placement::ExcludedCluster Full(const std::string& cluster) {
  placement::ExcludedCluster x;
  x.cluster = cluster;
  x.exclusion.filter = placement::Filter::kQuota;
  x.exclusion.message = "insufficient unused quota";
  x.exclusion.permanent = false;
  return x;
}

// Nominated at epoch 1 to c1 and c2 (maxCopies 2), both full now; c3,
// ranked below the cap then, has room now. Placement ranks c3 first.
World CopiesInFullClusters() {
  World w;
  w.job.phase = JobPhase::kNominating;
  w.job.epoch = 1;
  w.job.nominated_ms = w.in.now_ms - 5'000;
  w.Intent("c1", "Workload", 1);
  w.Workload("c1", 1);
  w.Intent("c2", "Workload", 1);
  w.Workload("c2", 1);
  w.in.placement = Ranked({{"c3", true}, {"c1", false}, {"c2", false}});
  w.in.max_copies = 2;
  return w;
}

}  // namespace

TEST_CASE("step 7: at maxCopies, a copy in a cluster full now moves to a feasible cluster without one",
          "[dispatch][decide]") {
  World w = CopiesInFullClusters();
  Plan p = Decide(w.Input());
  CHECK(p.step == "widen");
  CHECK(Count(p, Verb::kCreate, "Workload") == 1);
  CHECK(Count(p, Verb::kCreate, "Workload", "c3") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload") == 1);
  CHECK(Count(p, Verb::kDelete, "Workload", "c1") == 1);  // one copy moves: one cluster has room
  REQUIRE(p.write);
  const RemoteIntent* c1 = FindIntent(*p.write, "c1", "Workload");
  REQUIRE(c1);
  CHECK_FALSE(c1->present);
  CHECK(c1->epoch == 1);  // the same epoch: no new nomination
  const RemoteIntent* c3 = FindIntent(*p.write, "c3", "Workload");
  REQUIRE(c3);
  CHECK(c3->present);
  CHECK(c3->epoch == 1);
  CHECK(p.write->message.value_or("") == "nominated to c2, c3");
  REQUIRE(p.write->events.size() == 1);
  CHECK(p.write->events[0].reason == "CopiesMoved");
  CHECK(p.write->events[0].message ==
        "Workload copies moved from c1, which cannot take the job now (quota), to c3, which may (maxCopies 2)");
}

TEST_CASE("step 7: a copy whose preemption gate is open, or in a cluster out of reach, does not move",
          "[dispatch][decide]") {
  World gate = CopiesInFullClusters();
  gate.in.intents[0].gate_opened_ms = gate.in.now_ms - 1'000;  // c1 may be preempting for the job
  Plan g = Decide(gate.Input());
  CHECK(g.step == "widen");
  CHECK(Count(g, Verb::kDelete, "Workload", "c1") == 0);
  CHECK(Count(g, Verb::kDelete, "Workload", "c2") == 1);
  CHECK(Count(g, Verb::kCreate, "Workload", "c3") == 1);

  World both = gate;
  both.in.intents[1].gate_opened_ms = both.in.now_ms - 500;
  CHECK(Decide(both.Input()).step == "copies");

  World far = CopiesInFullClusters();
  far.synced.erase("c1");  // c1's view is not listed: its copy could not be deleted now
  Plan f = Decide(far.Input());
  CHECK(Count(f, Verb::kDelete, "Workload", "c1") == 0);
  CHECK(Count(f, Verb::kDelete, "Workload", "c2") == 1);
  CHECK(Count(f, Verb::kCreate, "Workload", "c3") == 1);
}

TEST_CASE("step 7: only a copy its Kueue shows pending moves, and never back to a cluster it moved from",
          "[dispatch][decide]") {
  // Deactivated (an admission check Rejected it): it keeps its slot, for
  // step 8 and its backoff.
  World rejected = CopiesInFullClusters();
  rejected.in.observed["c1"].workloads.back().active = false;
  Plan r = Decide(rejected.Input());
  CHECK(Count(r, Verb::kDelete, "Workload", "c1") == 0);
  CHECK(Count(r, Verb::kDelete, "Workload", "c2") == 1);

  // Not seen yet in c1 (its create a moment ago), evicted in c2: neither
  // is known to wait for quota there.
  World unseen = CopiesInFullClusters();
  unseen.in.observed["c1"].workloads.clear();
  unseen.in.observed["c2"].workloads.back().evicted = true;
  Plan u = Decide(unseen.Input());
  CHECK(Count(u, Verb::kDelete, "Workload") == 0);
  CHECK(Count(u, Verb::kCreate, "Workload", "c3") == 0);

  // A copy moved from c3 at this epoch: c3 having room again takes none back.
  World back = CopiesInFullClusters();
  back.Intent("c3", "Workload", 1, false);
  Plan b = Decide(back.Input());
  CHECK(Count(b, Verb::kCreate, "Workload") == 0);
  CHECK(Count(b, Verb::kDelete, "Workload") == 0);
}

TEST_CASE("step 7: no copy moves while one holds quota, from a cluster that can take the job, or to one with a queue",
          "[dispatch][decide]") {
  World holding = CopiesInFullClusters();
  holding.in.observed["c2"].workloads.back().quota_reserved = true;  // its admission checks pending, say
  Plan h = Decide(holding.Input());
  CHECK(Count(h, Verb::kDelete, "Workload") == 0);
  CHECK(Count(h, Verb::kCreate, "Workload") == 0);

  World fits = CopiesInFullClusters();
  fits.in.placement = Ranked({{"c1", true}, {"c3", true}, {"c2", false}});  // c1 has room again: its copy stays
  Plan f = Decide(fits.Input());
  CHECK(Count(f, Verb::kDelete, "Workload", "c1") == 0);
  CHECK(Count(f, Verb::kDelete, "Workload", "c2") == 1);
  CHECK(Count(f, Verb::kCreate, "Workload", "c3") == 1);

  // Room, but workloads pending there: they take it first.
  World queued = CopiesInFullClusters();
  queued.in.placement->feasible[0].score.values[static_cast<size_t>(placement::Term::kQueueDepth)] = 0.5;
  Plan q = Decide(queued.Input());
  CHECK(Count(q, Verb::kDelete, "Workload") == 0);
  CHECK(Count(q, Verb::kCreate, "Workload") == 0);

  World none = CopiesInFullClusters();
  none.in.placement = Ranked({{"c3", false}, {"c1", false}, {"c2", false}});  // nowhere has room
  CHECK(Decide(none.Input()).step == "copies");

  // A copy in a cluster placement leaves out for its quota moves too.
  World excluded = CopiesInFullClusters();
  excluded.in.placement = Ranked({{"c3", true}, {"c2", true}});
  excluded.in.placement->excluded = {Full("c1")};
  Plan e = Decide(excluded.Input());
  CHECK(Count(e, Verb::kDelete, "Workload", "c1") == 1);
  CHECK(Count(e, Verb::kCreate, "Workload", "c3") == 1);
}

}  // namespace gantry::dispatch
