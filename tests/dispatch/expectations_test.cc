// Expectations: a create is expected until it is observed, its epoch moves
// on, or it lapses; a delete is remembered by incarnation until it lapses.
#include <catch2/catch.hpp>

#include "gantry/dispatch/expectations.h"

namespace gantry::dispatch {

TEST_CASE("a created object is expected until seen, superseded or lapsed", "[dispatch]") {
  Expectations e(10'000);
  using Key = Expectations::Key;
  e.Created("j1", "c1", "Workload", 1, 1'000);
  e.Created("j1", "c2", "Workload", 1, 1'000);
  e.Created("j2", "c1", "Job", 3, 1'000);

  CHECK(e.Pending("j1", 1, {}, 2'000) == std::set<Key>{{"c1", "Workload"}, {"c2", "Workload"}});
  // Seen in c1: no longer expected there, even if the object goes away later.
  CHECK(e.Pending("j1", 1, {{"c1", "Workload"}}, 2'000) == std::set<Key>{{"c2", "Workload"}});
  CHECK(e.Pending("j1", 1, {}, 2'000) == std::set<Key>{{"c2", "Workload"}});
  CHECK_FALSE(e.Seen("j1", "c2", "Workload", 2, 2'000));  // another epoch's object
  CHECK_FALSE(e.Seen("j1", "c2", "Job", 1, 2'000));
  CHECK_FALSE(e.Seen("j1", "c2", "Workload", 1, 11'000));  // lapsed
  CHECK_FALSE(e.Seen("j9", "c2", "Workload", 1, 2'000));
  CHECK(e.Pending("j1", 1, {}, 2'000) == std::set<Key>{{"c2", "Workload"}});  // none of those was it
  // Lapsed: created again by the next pass.
  CHECK(e.Pending("j1", 1, {}, 11'000).empty());
  CHECK(e.jobs() == 1);
  // Seen by the watch: no longer expected, even if the object goes away
  // before any pass looks.
  e.Created("j5", "c1", "Workload", 1, 1'000);
  CHECK(e.Seen("j5", "c1", "Workload", 1, 2'000));
  CHECK_FALSE(e.Seen("j5", "c1", "Workload", 1, 2'000));  // once
  CHECK(e.Pending("j5", 1, {}, 2'000).empty());

  // Another epoch: what was created for the old one is not expected.
  CHECK(e.Pending("j2", 4, {}, 2'000).empty());
  CHECK(e.jobs() == 0);

  // A create again at a new epoch replaces the old entry.
  e.Created("j3", "c1", "Workload", 1, 1'000);
  e.Created("j3", "c1", "Workload", 2, 5'000);
  CHECK(e.Pending("j3", 2, {}, 14'000) == std::set<Key>{{"c1", "Workload"}});
  e.Forget("j3");
  CHECK(e.Pending("j3", 2, {}, 14'000).empty());
}

TEST_CASE("Peek reads what Pending would, and drops nothing, whatever the epoch it is given", "[dispatch]") {
  Expectations e(10'000);
  using Key = Expectations::Key;
  e.Created("j1", "c1", "Workload", 2, 1'000);
  e.Created("j1", "c2", "Workload", 2, 1'000);
  // A reader a moment behind, at epoch 1: nothing of epoch 2 is dropped.
  CHECK(e.Peek("j1", 1, {}, 2'000).empty());
  CHECK(e.Peek("j1", 2, {{"c1", "Workload"}}, 2'000) == std::set<Key>{{"c2", "Workload"}});
  CHECK(e.Peek("j1", 2, {}, 11'000).empty());  // lapsed, as Pending would say
  CHECK(e.Pending("j1", 2, {}, 2'000) == std::set<Key>{{"c1", "Workload"}, {"c2", "Workload"}});
  CHECK(e.Peek("j9", 1, {}, 2'000).empty());
}

TEST_CASE("a real job's create not seen yet is an unseen run at any epoch until seen or past its own ttl",
          "[dispatch]") {
  Expectations e(10'000, 40'000);
  using Run = Expectations::Run;
  e.Created("j1", "c1", "Job", 1, 1'000);
  e.Created("j1", "c2", "Workload", 1, 1'000);
  CHECK(e.UnseenRuns("j1", {}, 2'000, true) == std::set<Run>{{"c1", 1}});
  CHECK(e.UnseenCreates("j1", "Workload", {}, 2'000, true) == std::set<Run>{{"c2", 1}});  // the copy, apart
  // The job moved on to epoch 2: neither create is expected at the job's
  // epoch any more, but each is still unseen, the run and the copy.
  CHECK(e.Pending("j1", 2, {}, 2'000).empty());
  CHECK(e.UnseenRuns("j1", {}, 2'000, true) == std::set<Run>{{"c1", 1}});
  // Past the expectation's ttl, within the run's.
  CHECK(e.Pending("j1", 2, {}, 30'000).empty());
  CHECK(e.UnseenRuns("j1", {}, 30'000, true) == std::set<Run>{{"c1", 1}});
  CHECK(e.UnseenCreates("j1", "Workload", {}, 30'000, true) == std::set<Run>{{"c2", 1}});
  CHECK(e.UnseenRuns("j1", {}, 41'000, true).empty());
  CHECK(e.UnseenCreates("j1", "Workload", {}, 41'000, true).empty());
  CHECK(e.jobs() == 0);

  SECTION("seen by the watch at its epoch, even past the expectation's ttl: no longer unseen") {
    e.Created("j2", "c1", "Job", 3, 1'000);
    CHECK_FALSE(e.Seen("j2", "c1", "Job", 3, 20'000));  // not expected at 20 s: the job is woken
    CHECK(e.UnseenRuns("j2", {}, 20'000, true).empty());
  }
  SECTION("shown by the job's view (a relist): dropped when settled, kept by a reader that only peeks") {
    e.Created("j3", "c1", "Job", 3, 1'000);
    CHECK(e.UnseenRuns("j3", {{"c1", 2}}, 2'000, true) == std::set<Run>{{"c1", 3}});  // another epoch's
    CHECK(e.UnseenRuns("j3", {{"c1", 3}}, 2'000, false).empty());
    CHECK(e.UnseenRuns("j3", {}, 2'000, true) == std::set<Run>{{"c1", 3}});
    CHECK(e.UnseenRuns("j3", {{"c1", 3}}, 2'000, true).empty());
    CHECK(e.UnseenRuns("j3", {}, 2'000, true).empty());
  }
  SECTION("Young: the creates answered less than ttl ago, at any epoch") {
    e.Created("j8", "c1", "Workload", 1, 1'000);
    e.Created("j8", "c2", "Job", 2, 5'000);
    e.MayHaveLanded("j8", "c3", 2, 5'000);  // unanswered: not a create known to be young
    using Young = std::map<Expectations::Key, int64_t>;
    CHECK(e.Young("j8", 6'000) == Young{{{"c1", "Workload"}, 11'000}, {{"c2", "Job"}, 15'000}});
    CHECK(e.Young("j8", 12'000) == Young{{{"c2", "Job"}, 15'000}});
    CHECK(e.Young("j8", 16'000).empty());
    CHECK(e.Young("nobody", 6'000).empty());
  }
  SECTION("a copy seen by the watch, or shown by the job's view when settled, is no longer unseen") {
    e.Created("j7", "c1", "Workload", 2, 1'000);
    e.Created("j7", "c2", "Workload", 2, 1'000);
    CHECK_FALSE(e.Seen("j7", "c1", "Workload", 2, 20'000));
    CHECK(e.UnseenCreates("j7", "Workload", {{"c2", 2}}, 20'000, false).empty());
    CHECK(e.UnseenCreates("j7", "Workload", {}, 20'000, true) == std::set<Run>{{"c2", 2}});
    CHECK(e.UnseenCreates("j7", "Workload", {{"c2", 2}}, 20'000, true).empty());
    CHECK(e.UnseenRuns("j7", {}, 20'000, true).empty());  // copies are not runs
    CHECK(e.jobs() == 0);
  }
  SECTION("within the expectation's ttl a create is still expected at its epoch, as before") {
    e.Created("j4", "c1", "Job", 1, 1'000);
    CHECK(e.Pending("j4", 1, {}, 5'000) == std::set<Expectations::Key>{{"c1", "Job"}});
    CHECK(e.Pending("j4", 1, {}, 12'000).empty());
    CHECK(e.UnseenRuns("j4", {}, 12'000, true) == std::set<Run>{{"c1", 1}});
  }
  SECTION("a create that may have landed unanswered is an unseen run, never an expectation") {
    e.MayHaveLanded("j6", "c1", 2, 1'000);
    CHECK(e.Pending("j6", 2, {}, 2'000).empty());  // sent again as any failed create
    CHECK(e.Peek("j6", 2, {}, 2'000).empty());
    CHECK_FALSE(e.Seen("j6", "c1", "Job", 2, 2'000));  // seen: dropped, the job woken
    CHECK(e.UnseenRuns("j6", {}, 2'000, true).empty());
    e.MayHaveLanded("j6", "c1", 2, 3'000);
    CHECK(e.UnseenRuns("j6", {}, 30'000, true) == std::set<Run>{{"c1", 2}});
    e.Created("j6", "c1", "Job", 2, 31'000);  // answered after all: expected again
    CHECK(e.Pending("j6", 2, {}, 32'000) == std::set<Expectations::Key>{{"c1", "Job"}});
    e.MayHaveLanded("j6", "c1", 2, 33'000);  // a later failure does not undo that
    CHECK(e.Pending("j6", 2, {}, 34'000) == std::set<Expectations::Key>{{"c1", "Job"}});
  }
  SECTION("without a run ttl longer than the expectation's, nothing is kept apart") {
    Expectations plain(10'000);
    plain.Created("j5", "c1", "Job", 1, 1'000);
    plain.MayHaveLanded("j5", "c1", 1, 1'000);
    CHECK(plain.UnseenRuns("j5", {}, 2'000, true).empty());
    CHECK(plain.Pending("j5", 2, {}, 2'000).empty());
    CHECK(plain.jobs() == 0);
  }
}

TEST_CASE("a deleted incarnation is skipped until its delete lapses", "[dispatch]") {
  Expectations e(10'000);
  e.Deleted("k8s-a", 1'000);
  CHECK(e.RecentlyDeleted("k8s-a", 5'000));
  CHECK_FALSE(e.RecentlyDeleted("k8s-b", 5'000));  // another incarnation of the same name
  CHECK_FALSE(e.RecentlyDeleted("k8s-a", 11'000));
  CHECK_FALSE(e.RecentlyDeleted("", 5'000));
  e.Deleted("", 1'000);  // a delete without a precondition names no incarnation
  CHECK_FALSE(e.RecentlyDeleted("", 1'000));

  // Deleted again later: the first entry lapsing does not take the second.
  e.Deleted("k8s-c", 2'000);
  e.Deleted("k8s-c", 9'000);
  e.Deleted("k8s-d", 12'500);  // prunes k8s-a and the first k8s-c
  CHECK(e.RecentlyDeleted("k8s-c", 12'500));
  CHECK(e.deletes() == 2);
  e.Deleted("k8s-e", 30'000);  // everything before has lapsed
  CHECK(e.deletes() == 1);
}

}  // namespace gantry::dispatch
