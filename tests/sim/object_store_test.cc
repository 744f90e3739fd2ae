// The apiserver semantics of ObjectStore + WatchHub: resourceVersions,
// pagination, watch resume, 410 Gone, and selector transitions.
#include <catch2/catch.hpp>

#include "cluster_state.h"
#include "sim_test_util.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

using testing::StreamEvents;

json Obj(const std::string& name, const std::string& env) {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"labels", {{"env", env}}}}}, {"spec", {{"x", 1}, {"suspend", true}}}};
}

TEST_CASE("ObjectStore: resourceVersion, generation, conflicts, pages", "[sim][store]") {
  ObjectStore store(100, nullptr);
  auto a = store.Create("jobs", Obj("a", "prod"), 0);
  REQUIRE(a.ok());
  CHECK(store.Create("jobs", Obj("a", "prod"), 0).status().code() == Code::kAlreadyExists);
  json changed = **a;  // a copy: *a is the stored object, which the update changes
  changed["metadata"]["labels"]["env"] = "dev";
  auto b = store.Update("jobs", changed);
  REQUIRE(b.ok());
  CHECK(std::stoll((**b)["metadata"]["resourceVersion"].get<std::string>()) >
        std::stoll(changed["metadata"]["resourceVersion"].get<std::string>()));
  CHECK((**b)["metadata"]["generation"] == 1);  // labels only
  changed["spec"]["x"] = 2;
  CHECK((**store.Update("jobs", changed))["metadata"]["generation"] == 2);
  CHECK(store.Delete("jobs", "ns", "zzz").status().code() == Code::kNotFound);

  for (const char* n : {"b", "c", "d", "e"}) REQUIRE(store.Create("jobs", Obj(n, "prod"), 0).ok());
  LabelSelector all;
  std::vector<std::string> names;
  std::string token;
  do {
    auto page = store.List("jobs", "ns", all, 2, token);
    REQUIRE(page.ok());
    for (const json& o : page->items) names.push_back(NameOf(o));
    token = page->continue_token;
  } while (!token.empty());
  CHECK(names == std::vector<std::string>{"a", "b", "c", "d", "e"});
}

TEST_CASE("ObjectStore: a DELETED event carries the object as deleted, at the deletion's resourceVersion",
          "[sim][store]") {
  std::vector<std::string> bodies;
  ObjectStore store(100, [&](const WatchEvent& ev, const json&) { bodies.push_back(ev.type + " " + ev.body); });
  REQUIRE(store.Create("jobs", Obj("a", "prod"), 0).ok());
  REQUIRE(store.Mutate("jobs", "ns", "a", [](json& o) { o["status"]["active"] = 1; }).ok());
  // A label value that spells a resourceVersion field is escaped, not taken for one.
  REQUIRE(store.Mutate("jobs", "ns", "a", [](json& o) {
                 o["metadata"]["labels"]["note"] = "\"resourceVersion\":\"3\"";
               }).ok());
  auto deleted = store.Delete("jobs", "ns", "a");
  REQUIRE(deleted.ok());
  CHECK((*deleted)["metadata"]["resourceVersion"] == "4");
  REQUIRE(bodies.size() == 4);
  CHECK(bodies.back() == "DELETED " + deleted->dump());
  // Created again: its own text, not the old one's.
  REQUIRE(store.Create("jobs", Obj("a", "dev"), 0).ok());
  auto again = store.Delete("jobs", "ns", "a");
  REQUIRE(again.ok());
  CHECK(bodies.back() == "DELETED " + again->dump());
}

TEST_CASE("ObjectStore: an edit that changes nothing writes nothing", "[sim][store]") {
  ObjectStore store(100, nullptr);
  REQUIRE(store.Create("jobs", Obj("a", "prod"), 0).ok());
  auto rv = [&] { return (*store.Get("jobs", "ns", "a"))["metadata"]["resourceVersion"].get<std::string>(); };
  const std::string before = rv();
  REQUIRE(store.MutateIf("jobs", "ns", "a", [](json&) { return false; }).ok());
  CHECK(rv() == before);
  REQUIRE(store.MutateIf("jobs", "ns", "a", [](json& o) {
                 o["status"]["active"] = 1;
                 return true;
               }).ok());
  CHECK(rv() != before);
  CHECK((*store.Get("jobs", "ns", "a"))["status"]["active"] == 1);
  CHECK(store.MutateIf("jobs", "ns", "zzz", [](json&) { return true; }).status().code() == Code::kNotFound);
}

TEST_CASE("watch resumes from a resourceVersion and answers 410 when too old", "[sim][watch]") {
  FakeClock clock;
  Journal journal;
  ClusterConfig cfg = testing::SmallCluster();
  cfg.history_limit = 5;
  ClusterState state(cfg, &journal, &clock);
  const ResourceInfo& jobs = ResourceByPlural("jobs");
  auto first = state.Create(jobs, "ns", Obj("a", "prod"));
  REQUIRE(first.ok());
  std::string rv = json::parse(*first)["metadata"]["resourceVersion"];
  REQUIRE(state.Create(jobs, "ns", Obj("b", "prod")).ok());

  WatchRequest w;
  w.resource = &jobs;
  w.api_version = "batch/v1";
  w.resource_version = rv;
  w.timeout_ms = 1000;
  w.stream = std::make_shared<http::ResponseStream>();
  auto stream = w.stream;
  state.Watch(w);
  auto ev = StreamEvents(stream);
  REQUIRE(ev.size() == 1);  // only what came after rv
  CHECK(ev[0]["type"] == "ADDED");
  CHECK(ev[0]["object"]["metadata"]["name"] == "b");
  REQUIRE(state.Delete(jobs, "ns", "a", "").ok());
  ev = StreamEvents(stream);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0]["type"] == "DELETED");
  clock.Advance(1000);
  state.Tick();
  CHECK(stream->closed());  // the server ends watches at their timeout

  for (int i = 0; i < 10; ++i) REQUIRE(state.Create(jobs, "ns", Obj("x" + std::to_string(i), "prod")).ok());
  WatchRequest old = w;
  old.stream = std::make_shared<http::ResponseStream>();
  state.Watch(old);
  ev = StreamEvents(old.stream);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0]["type"] == "ERROR");
  CHECK(ev[0]["object"]["code"] == 410);
  CHECK(old.stream->closed());
}

TEST_CASE("watch with a selector sees objects enter and leave it", "[sim][watch]") {
  testing::ClusterFixture f;
  ClusterState& state = f.state;
  const ResourceInfo& wl = f.wl;
  WatchRequest w;
  w.resource = &wl;
  w.api_version = "kueue.x-k8s.io/v1beta1";
  w.selector = *LabelSelector::Parse("env=prod");
  w.stream = std::make_shared<http::ResponseStream>();
  auto stream = w.stream;
  state.Watch(w);
  auto wl_a = testing::MakeWorkload("a", 1, 1);
  wl_a["metadata"]["labels"]["env"] = "prod";
  REQUIRE(state.Create(wl, "team-a", wl_a).ok());
  REQUIRE(state.Create(wl, "team-a", testing::MakeWorkload("other", 1, 1)).ok());
  REQUIRE(state.Patch(wl, "team-a", "a", "merge", {{"metadata", {{"labels", {{"env", "dev"}}}}}}, false).ok());
  auto ev = StreamEvents(stream);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0]["type"] == "ADDED");
  CHECK(ev[0]["object"]["apiVersion"] == "kueue.x-k8s.io/v1beta1");
  CHECK(ev[1]["type"] == "DELETED");
}

TEST_CASE("create and delete answer with the object as stored, also when a controller wrote it at once",
          "[sim][store]") {
  testing::ClusterFixture f;
  // A Workload: the answer is the stored object, as a GET reads it.
  auto created = f.state.Create(f.wl, "team-a", testing::MakeWorkload("a", 1, 1));
  REQUIRE(created.ok());
  CHECK(json::parse(*created) == f.Get(f.wl, "a"));
  f.TickAfter(10);  // admitted
  // A job for the admitted Workload starts at once: the answer is the job
  // as the controller left it (unsuspended), not as first stored.
  auto job = f.state.Create(f.jobs, "team-a", testing::MakeJob("job-a", "a", "ua", "1s"));
  REQUIRE(job.ok());
  json answered = json::parse(*job);
  CHECK(answered == f.Get(f.jobs, "job-a"));
  CHECK(answered["spec"]["suspend"] == false);
  // A delete answers with the object as deleted: a newer resourceVersion.
  const std::string before = f.Get(f.wl, "a")["metadata"]["resourceVersion"];
  auto deleted = f.state.Delete(f.wl, "team-a", "a", "Background");
  REQUIRE(deleted.ok());
  json gone = json::parse(*deleted);
  CHECK(gone["metadata"]["name"] == "a");
  CHECK(std::stoll(gone["metadata"]["resourceVersion"].get<std::string>()) > std::stoll(before));
}

TEST_CASE("a patch's resourceVersion and uid, and a delete's preconditions, are checked as the API server does",
          "[sim][store]") {
  testing::ClusterFixture f;
  REQUIRE(f.state.Create(f.wl, "team-a", testing::MakeWorkload("a", 1, 1)).ok());
  const json seen = f.Get(f.wl, "a");
  const std::string uid = seen["metadata"]["uid"];
  const std::string rv = seen["metadata"]["resourceVersion"];
  auto label = [&](const std::string& value, json md) {
    md["labels"] = {{"step", value}};
    return f.state.Patch(f.wl, "team-a", "a", "merge", {{"metadata", std::move(md)}}, false);
  };
  // The version read: applied.
  auto fresh = label("1", {{"resourceVersion", rv}});
  REQUIRE(fresh.ok());
  CHECK((*fresh)["metadata"]["labels"]["step"] == "1");
  // That version again, now stale: refused, nothing changed.
  auto stale = label("2", {{"resourceVersion", rv}});
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.status().code() == Code::kConflict);
  CHECK(stale.status().message() ==
        "Operation cannot be fulfilled on workloads.kueue.x-k8s.io \"a\": the object has been modified; please "
        "apply your changes to the latest version and try again");
  CHECK(f.Get(f.wl, "a")["metadata"]["labels"]["step"] == "1");
  // Another uid on the main resource: immutable (422), nothing changed.
  auto other = label("3", {{"uid", "not-" + uid}});
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == Code::kInvalidArgument);
  CHECK(other.status().message().find("metadata.uid: Invalid value") != std::string::npos);
  CHECK(f.Get(f.wl, "a")["metadata"]["labels"]["step"] == "1");
  // Through the status subresource the stored metadata stands: the uid is
  // ignored, the resourceVersion is still a precondition.
  const std::string now_rv = f.Get(f.wl, "a")["metadata"]["resourceVersion"];
  json gate = {{"status", {{"preemptionGates", json::array()}}}};
  gate["metadata"] = {{"uid", "not-" + uid}, {"resourceVersion", now_rv}};
  auto status_patch = f.state.Patch(f.wl, "team-a", "a", "merge", gate, true);
  REQUIRE(status_patch.ok());
  CHECK((*status_patch)["metadata"]["uid"] == uid);
  CHECK(f.state.Patch(f.wl, "team-a", "a", "merge", gate, true).status().code() == Code::kConflict);
  // A delete of another incarnation leaves this one; of this one, deletes it.
  auto wrong = f.state.Delete(f.wl, "team-a", "a", "Background", {{"uid", "not-" + uid}});
  CHECK(wrong.status().code() == Code::kConflict);
  CHECK(wrong.status().message().find("the UID in the precondition (not-" + uid + ") does not match the UID in record") !=
        std::string::npos);
  auto old_version = f.state.Delete(f.wl, "team-a", "a", "Background", {{"resourceVersion", rv}});
  CHECK(old_version.status().code() == Code::kConflict);
  CHECK(f.Get(f.wl, "a")["metadata"]["uid"] == uid);
  CHECK(f.state.Delete(f.wl, "team-a", "a", "Background", {{"uid", uid}}).ok());
  CHECK(f.state.Get(f.wl, "team-a", "a").status().code() == Code::kNotFound);
}

TEST_CASE("Workload validation answers Invalid", "[sim][validation]") {
  testing::ClusterFixture f;
  ClusterState& state = f.state;
  const ResourceInfo& wl = f.wl;
  auto bad = [&](json w) { return state.Create(wl, "team-a", std::move(w)).status().code() == Code::kInvalidArgument; };
  auto w = testing::MakeWorkload("ok", 1, 1);
  CHECK(bad(testing::MakeWorkload("Not_DNS", 1, 1)));
  json no_queue = w;
  no_queue["spec"].erase("queueName");
  CHECK(bad(no_queue));
  json negative = w;
  negative["spec"]["podSets"][0]["count"] = -1;
  CHECK(bad(negative));
  json no_sets = w;
  no_sets["spec"]["podSets"] = json::array();
  CHECK(bad(no_sets));
  json too_many = w;
  for (int i = 0; i < 18; ++i) {
    json ps = w["spec"]["podSets"][0];
    ps["name"] = "p" + std::to_string(i);
    too_many["spec"]["podSets"].push_back(ps);
  }
  CHECK(bad(too_many));
  json bad_ps_name = w;
  bad_ps_name["spec"]["podSets"][0]["name"] = "Main";
  CHECK(bad(bad_ps_name));
  REQUIRE(state.Create(wl, "team-a", w).ok());
  REQUIRE(state.Patch(wl, "team-a", "ok", "merge", {{"status", {{"clusterName", "c1"}}}}, true).ok());
  auto changed = state.Patch(wl, "team-a", "ok", "merge", {{"status", {{"clusterName", "c2"}}}}, true);
  CHECK(changed.status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace gantry::sim
