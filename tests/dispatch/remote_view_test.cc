// RemoteViewOf: the watches' view of a job's objects, as `gantry status`
// shows it.
#include <catch2/catch.hpp>

#include "gantry/dispatch/remote_view.h"

namespace gantry::dispatch {
namespace {

ObservedWorkload Copy(const std::string& name, int64_t epoch) {
  ObservedWorkload w;
  w.name = name;
  w.epoch = epoch;
  return w;
}

const ObservedObject* Find(const std::vector<ObservedObject>& view, const std::string& cluster,
                           const std::string& kind) {
  for (const ObservedObject& o : view) {
    if (o.cluster == cluster && o.kind == kind) return &o;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("RemoteViewOf: a copy's furthest condition, with Kueue's words", "[remote_view]") {
  JobObservation seen;
  ObservedWorkload pending = Copy("j-0123abcd", 2);
  pending.reason = "Pending";
  pending.message = "couldn't assign flavors to pod set main: insufficient unused quota";
  seen.clusters["c1"].workloads.push_back(pending);

  ObservedWorkload admitted = Copy("j-0123abcd", 2);
  admitted.quota_reserved = admitted.admitted = true;
  seen.clusters["c2"].workloads.push_back(admitted);
  ObservedJob job;
  job.name = "j-0123abcd";
  job.kind = "JobSet";  // shown as the real job, whatever its kind
  job.epoch = 2;
  job.state = RemoteJobState::kRunning;
  seen.clusters["c2"].jobs.push_back(job);

  ObservedWorkload evicted = Copy("j-0123abcd", 1);  // an older epoch's, being fenced off
  evicted.quota_reserved = evicted.admitted = evicted.evicted = true;
  evicted.reason = "Preempted";
  seen.clusters["c3"].workloads.push_back(evicted);
  ObservedJob leaving = job;
  leaving.epoch = 1;
  leaving.deleting = true;
  seen.clusters["c3"].jobs.push_back(leaving);

  ObservedWorkload reserved = Copy("j-0123abcd", 2);
  reserved.quota_reserved = true;
  seen.clusters["c4"].workloads.push_back(reserved);
  ObservedWorkload off = Copy("j-0123abcd", 2);
  off.active = false;
  seen.clusters["c5"].workloads.push_back(off);
  ObservedWorkload done = admitted;
  done.finished = true;
  seen.clusters["c6"].workloads.push_back(done);

  // c3 is cut off: its watch failed since it listed.
  seen.behind = std::make_shared<const std::set<std::string>>(std::set<std::string>{"c3"});

  const std::vector<ObservedObject> view = RemoteViewOf(seen);
  REQUIRE(view.size() == 8);
  for (const ObservedObject& o : view) CHECK(o.last_seen == (o.cluster == "c3"));
  const ObservedObject* c1 = Find(view, "c1", "Workload");
  REQUIRE(c1);
  CHECK(c1->state == "Pending");
  CHECK(c1->name == "j-0123abcd");
  CHECK(c1->epoch == 2);
  CHECK(c1->message == pending.message);
  REQUIRE(Find(view, "c2", "Workload"));
  CHECK(Find(view, "c2", "Workload")->state == "Admitted");
  REQUIRE(Find(view, "c2", "Job"));
  CHECK(Find(view, "c2", "Job")->state == "Running");
  CHECK(Find(view, "c3", "Workload")->state == "Evicted");
  CHECK(Find(view, "c3", "Workload")->reason == "Preempted");
  CHECK(Find(view, "c3", "Workload")->epoch == 1);
  CHECK(Find(view, "c3", "Job")->state == "Deleting");
  CHECK(Find(view, "c4", "Workload")->state == "QuotaReserved");
  CHECK(Find(view, "c5", "Workload")->state == "Deactivated");
  CHECK(Find(view, "c6", "Workload")->state == "Finished");
  CHECK(RemoteViewOf(JobObservation{}).empty());
}

}  // namespace gantry::dispatch
