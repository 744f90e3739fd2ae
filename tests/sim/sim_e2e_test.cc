// End to end: the real gantry-sim process, spoken to over HTTPS with the CA
// and token from its kubeconfig, exactly as the daemon will.
#include <catch2/catch.hpp>

#include <yaml-cpp/yaml.h>

#include "kueue_controller.h"
#include "gantry/http/client.h"
#include "process.h"
#include "sim_e2e_util.h"
#include "sim_test_util.h"
#include "test_support.h"

namespace gantry::sim {
namespace {

using nlohmann::json;

const std::string kWorkloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";
const std::string kJobs = "/apis/batch/v1/namespaces/team-a/jobs";

// Two clusters; a short watch history so a resume can be too old.
const char* const kConfig = R"(clusters:
- {name: c1, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 4, historyLimit: 50}
- {name: c2, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 4, historyLimit: 50}
)";

bool HasCond(const json& o, const std::string& type) { return HasCondition(o, type); }

TEST_CASE("gantry-sim end to end over HTTPS", "[sim][e2e]") {
  SimProcess sim(2, kConfig);
  auto c1 = sim.Connect("c1");
  auto Do = [&](const std::string& method, const std::string& target, const json& body = nullptr) {
    auto r = c1.client->Do(method, target, body.is_null() ? "" : body.dump(),
                           {{"Authorization", "Bearer " + c1.token}, {"Content-Type", "application/json"}});
    REQUIRE(r.ok());
    return *r;
  };

  SECTION("401 without the token") {
    auto r = c1.client->Do("GET", kWorkloads);
    REQUIRE(r.ok());
    CHECK(r->status == 401);
    CHECK(json::parse(r->body)["kind"] == "Status");
  }

  SECTION("admission by quota, a prebuilt job runs and finishes, quota returns") {
    // c1: 4 nodes x 8 H100 = 32 GPUs.
    CHECK(Do("POST", kWorkloads, testing::MakeWorkload("fits", 3, 8)).status == 201);
    CHECK(Do("POST", kWorkloads, testing::MakeWorkload("too-big", 2, 8)).status == 201);
    auto get = [&](const std::string& path) { return json::parse(Do("GET", path).body); };
    REQUIRE(gantry::testing::WaitFor([&] { return HasCond(get(kWorkloads + "/fits"), "Admitted"); }));
    // "fits" may be admitted by a pass that ran before "too-big" existed:
    // wait for the pass that looks at it.
    json big;
    REQUIRE(gantry::testing::WaitFor([&] {
      big = get(kWorkloads + "/too-big");
      return big["status"].contains("conditions");
    }));
    CHECK_FALSE(HasCond(big, "QuotaReserved"));
    CHECK(big["status"]["conditions"][0]["reason"] == "Pending");
    // The pass that marked it Pending wrote the queue's status too (one tick).
    json cq = get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue");
    CHECK(cq["status"]["admittedWorkloads"] == 1);
    CHECK(cq["status"]["pendingWorkloads"] == 1);

    CHECK(Do("POST", kJobs, testing::MakeJob("fits", "fits", "uid-1", "200ms")).status == 201);
    REQUIRE(gantry::testing::WaitFor([&] { return HasCond(get(kJobs + "/fits"), "Complete"); }));
    CHECK(HasCond(get(kWorkloads + "/fits"), "Finished"));
    REQUIRE(gantry::testing::WaitFor([&] { return HasCond(get(kWorkloads + "/too-big"), "Admitted"); }));
  }

  SECTION("404, 409, 422 as Status objects") {
    auto missing = Do("GET", kWorkloads + "/nope");
    CHECK(missing.status == 404);
    // As the API server's: a missing object's NotFound names it; a path not
    // served answers a 404 that names nothing.
    CHECK(json::parse(missing.body)["details"] ==
          json({{"name", "nope"}, {"group", "kueue.x-k8s.io"}, {"kind", "workloads"}}));
    auto unserved = Do("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/nothings/nope");
    CHECK(unserved.status == 404);
    CHECK_FALSE(json::parse(unserved.body).contains("details"));
    CHECK(Do("POST", kWorkloads, testing::MakeWorkload("dup", 1, 1)).status == 201);
    auto again = Do("POST", kWorkloads, testing::MakeWorkload("dup", 1, 1));
    CHECK(again.status == 409);
    CHECK(json::parse(again.body)["reason"] == "AlreadyExists");
    auto invalid = Do("POST", kWorkloads, testing::MakeWorkload("Bad_Name", 1, 1));
    CHECK(invalid.status == 422);
    CHECK(json::parse(invalid.body)["reason"] == "Invalid");
    // DeleteOptions in the body: a precondition on another incarnation is a 409 Conflict.
    json opts = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"preconditions", {{"uid", "another"}}}};
    auto other = Do("DELETE", kWorkloads + "/dup", opts);
    CHECK(other.status == 409);
    CHECK(json::parse(other.body)["reason"] == "Conflict");
    CHECK(Do("DELETE", kWorkloads + "/dup?propagationPolicy=Background").status == 200);
    auto deleted_again = Do("DELETE", kWorkloads + "/dup");
    CHECK(deleted_again.status == 404);
    CHECK(json::parse(deleted_again.body)["details"]["name"] == "dup");
    CHECK(Do("PUT", kWorkloads + "/dup").status == 405);
    // A Job whose pods would restart Always (an unset restartPolicy's
    // default), as the API server refuses it; and OnFailure beside a
    // podFailurePolicy.
    json always = testing::MakeJob("always", "always", "uid-a", "1s");
    always["spec"]["template"]["spec"].erase("restartPolicy");
    auto refused = Do("POST", kJobs, always);
    CHECK(refused.status == 422);
    CHECK(json::parse(refused.body)["message"] ==
          "Job.batch \"always\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Always\": "
          "supported values: \"OnFailure\", \"Never\"");
    json on_failure = testing::MakeJob("on-failure", "on-failure", "uid-b", "1s");
    on_failure["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure";
    on_failure["spec"]["podFailurePolicy"] = {{"rules", json::array()}};
    auto with_policy = Do("POST", kJobs, on_failure);
    CHECK(with_policy.status == 422);
    CHECK_THAT(json::parse(with_policy.body)["message"].get<std::string>(),
               Catch::EndsWith("only \"Never\" is supported when podFailurePolicy is specified"));
    on_failure["spec"]["template"]["spec"]["restartPolicy"] = "Never";
    CHECK(Do("POST", kJobs, on_failure).status == 201);
  }

  SECTION("the JobSet webhook refuses names its controller could not derive (403)") {
    const std::string jobsets = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets";
    auto jobset = [](const std::string& name, const std::string& rj, int replicas) {
      json pod = {{"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
      return json{{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
                  {"kind", "JobSet"},
                  {"metadata", {{"name", name}}},
                  {"spec",
                   {{"suspend", true},
                    {"replicatedJobs",
                     {{{"name", rj}, {"replicas", replicas}, {"template", {{"spec", {{"template", pod}}}}}}}}}}};
    };
    // <name>-workers-1 is 63 characters: accepted; 64: refused.
    CHECK(Do("POST", jobsets, jobset(std::string(53, 'a'), "workers", 2)).status == 201);
    auto too_long = Do("POST", jobsets, jobset(std::string(54, 'a'), "workers", 2));
    CHECK(too_long.status == 403);
    CHECK_THAT(json::parse(too_long.body)["message"].get<std::string>(),
               Catch::Contains("admission webhook \"vjobset.kb.io\" denied the request: JobSet name is too long"));
    auto digit = Do("POST", jobsets, jobset("7b", "workers", 1));
    CHECK(digit.status == 403);
    CHECK_THAT(json::parse(digit.body)["message"].get<std::string>(), Catch::Contains("DNS-1035"));
  }

  SECTION("injected errors can be limited to some verbs, sparing the rest") {
    auto ctl = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {GANTRY_BIN_DIR "/gantry-sim", "ctl", "--out-dir", sim.dir()});
      return gantry::testing::Run(args).code;
    };
    REQUIRE(ctl({"errors", "c1", "1", "503", "create"}) == 0);
    auto refused = Do("POST", kWorkloads, testing::MakeWorkload("erred", 1, 1));
    CHECK(refused.status == 503);
    CHECK(json::parse(refused.body)["reason"] == "ServiceUnavailable");
    CHECK(Do("GET", kWorkloads).status == 200);
    CHECK(Do("GET", "/readyz").status == 200);
    REQUIRE(ctl({"errors", "c1", "0"}) == 0);
    CHECK(Do("POST", kWorkloads, testing::MakeWorkload("erred", 1, 1)).status == 201);
  }

  SECTION("watch sees ADDED and MODIFIED; an old resourceVersion gets 410") {
    json list = json::parse(Do("GET", kWorkloads + "?labelSelector=kueue.x-k8s.io%2Fmultikueue-origin%3Dgantry").body);
    std::string rv = list["metadata"]["resourceVersion"];
    CHECK(Do("POST", kWorkloads, testing::MakeWorkload("watched", 1, 1)).status == 201);
    // The server ends the stream after timeoutSeconds; the client reads it whole.
    auto w = Do("GET", kWorkloads + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=" + rv +
                           "&labelSelector=kueue.x-k8s.io%2Fmultikueue-origin%3Dgantry");
    CHECK(w.status == 200);
    CHECK(w.body.find("{\"type\":\"ADDED\"") != std::string::npos);
    CHECK(w.body.find("{\"type\":\"MODIFIED\"") != std::string::npos);
    // Far more changes than the history keeps, then resume from the start.
    for (int i = 0; i < 60; ++i) Do("POST", kWorkloads, testing::MakeWorkload("w" + std::to_string(i), 0, 0));
    SimProcess::Admin(sim.dir(), "POST", "/clusters/c1/kill-watches");
    auto old = Do("GET", kWorkloads + "?watch=1&resourceVersion=1&timeoutSeconds=1");
    CHECK(old.body.find("\"type\":\"ERROR\"") != std::string::npos);
    CHECK(old.body.find("\"code\":410") != std::string::npos);
  }

  SECTION("ctl check catches a double run across clusters") {
    auto c2 = sim.Connect("c2");
    auto post2 = [&](const std::string& path, const json& body) {
      return c2.client->Do("POST", path, body.dump(), {{"Authorization", "Bearer " + c2.token}})->status;
    };
    CHECK(Do("POST", kWorkloads, testing::MakeWorkload("twice", 1, 1)).status == 201);
    CHECK(post2(kWorkloads, testing::MakeWorkload("twice", 1, 1)) == 201);
    auto clean = gantry::testing::Run({GANTRY_BIN_DIR "/gantry-sim", "ctl", "--out-dir", sim.dir(), "check"});
    CHECK(clean.code == 0);
    CHECK(clean.out == "ok: no job ran in two places at once, and no at-most-once job ran twice (0 jobs ran)\n");
    REQUIRE(gantry::testing::WaitFor([&] { return HasCond(json::parse(Do("GET", kWorkloads + "/twice").body), "Admitted"); }));
    CHECK(Do("POST", kJobs, testing::MakeJob("twice", "twice", "uid-double", "30s")).status == 201);
    // Created once: a second POST would be a 409, so the wait is for the run only.
    REQUIRE(post2(kJobs, testing::MakeJob("twice", "twice", "uid-double", "30s")) == 201);
    REQUIRE(gantry::testing::WaitFor([&] {
      return gantry::testing::Run({GANTRY_BIN_DIR "/gantry-sim", "ctl", "--out-dir", sim.dir(), "journal"}).out.find("\"c2\"") !=
             std::string::npos;
    }));
    auto check = gantry::testing::Run({GANTRY_BIN_DIR "/gantry-sim", "ctl", "--out-dir", sim.dir(), "check"});
    CHECK(check.code != 0);
    CHECK(check.out.find("uid-double") != std::string::npos);
  }
}

}  // namespace
}  // namespace gantry::sim
