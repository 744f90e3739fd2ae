#include "gantry/dispatch/remote_objects.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <set>

#include "crd_schema.h"
#include "gantry/common/names.h"

namespace gantry::dispatch {
namespace {

using inventory::KueueApiVersion;
using nlohmann::json;
using testing::Joined;
using testing::SchemaValidator;
using testing::WorkloadSchema;

// A gantry Job with what a real template carries: an init container, a
// GANTRY_EPOCH left from an earlier run, and pod template metadata the
// Workload CRD does not know (creationTimestamp).
constexpr const char* kJobDoc = R"(
apiVersion: gantry.dev/v1
kind: Job
metadata: {name: llama-ft, namespace: team-a}
spec:
  queue: team-a
  priority: 100
  onClusterLoss: Fail
  template:
    apiVersion: batch/v1
    kind: Job
    metadata:
      labels: {app: llama}
      annotations: {note: keep-me}
    spec:
      parallelism: 4
      completions: 4
      suspend: false
      template:
        metadata:
          labels: {role: trainer}
          creationTimestamp: null
        spec:
          restartPolicy: Never
          initContainers:
          - name: fetch
            image: fetch:1
            resources: {requests: {cpu: "1", memory: 1Gi}}
          containers:
          - name: trainer
            image: trainer:1
            env:
            - {name: GANTRY_EPOCH, value: "0"}
            - {name: OTHER, value: x}
            ports: [{containerPort: 8080, protocol: TCP}]
            resources:
              requests: {cpu: 8, memory: 64Gi, nvidia.com/gpu: 8}
              limits: {nvidia.com/gpu: 8}
          - name: sidecar
            image: logs:1
            resources: {requests: {cpu: 500m, memory: 1Gi}}
)";

constexpr const char* kJobSetDoc = R"(
apiVersion: gantry.dev/v1
kind: Job
metadata: {name: ddp}
spec:
  queue: research
  onClusterLoss: Wait
  template:
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    spec:
      replicatedJobs:
      - name: driver
        template:
          spec:
            template:
              spec:
                containers:
                - name: d
                  image: driver:1
                  resources: {requests: {cpu: 1, memory: 1Gi}}
      - name: workers
        replicas: 2
        template:
          spec:
            parallelism: 4
            template:
              spec:
                initContainers:
                - {name: warm, image: warm:1, resources: {requests: {cpu: 1, memory: 1Gi}}}
                containers:
                - name: w
                  image: worker:1
                  resources:
                    requests: {cpu: 2, memory: 8Gi}
                    limits: {nvidia.com/gpu: 1}
)";

constexpr const char* kTorchDoc = R"(
apiVersion: gantry.dev/v1
kind: Job
metadata: {name: torch}
spec:
  queue: research
  template:
    apiVersion: kubeflow.org/v1
    kind: PyTorchJob
    spec: {pytorchReplicaSpecs: {Master: {replicas: 1}}}
  podSets:
  - name: master
    template:
      spec:
        containers:
        - {name: m, resources: {requests: {cpu: 1, memory: 4Gi}}}
  - name: worker
    count: 3
    template:
      spec:
        containers:
        - {name: w, resources: {requests: {cpu: 4, memory: 16Gi, nvidia.com/gpu: 2}}}
)";

constexpr const char* kUid = "0B9D2A4E-1111-2222-3333-444455556666";

JobSpec MustParse(const char* yaml) {
  auto parsed = ParseJobDocument(yaml, DocumentFormat::kYaml, std::nullopt);
  if (auto* e = std::get_if<DocumentError>(&parsed)) FAIL("unexpected error: " << e->message);
  return std::get<JobSpec>(parsed);
}

json Workload(const JobSpec& spec, KueueApiVersion version = KueueApiVersion::kV1beta2, bool gate = false) {
  WorkloadParams p;
  p.spec = &spec;
  p.job_uid = kUid;
  p.epoch = 7;
  p.origin = "gantry-test";
  p.local_queue = "lq-a";
  p.version = version;
  p.preemption_gate = gate;
  return BuildWorkload(p);
}

json RemoteJob(const JobSpec& spec) {
  RemoteJobParams p;
  p.spec = &spec;
  p.job_uid = kUid;
  p.epoch = 7;
  p.origin = "gantry-test";
  p.local_queue = "lq-a";
  p.workload_name = RemoteName(spec.name, kUid);
  return BuildRemoteJob(p);
}

// Every container and init container of a pod template.
std::vector<json> Containers(const json& pod_template) {
  std::vector<json> out;
  for (const char* list : {"containers", "initContainers"}) {
    for (const json& c : pod_template["spec"].value(list, json::array())) out.push_back(c);
  }
  return out;
}

// The values of env entries named name in one container.
std::vector<json> EnvValues(const json& container, const std::string& name) {
  std::vector<json> out;
  for (const json& e : container.value("env", json::array())) {
    if (e.value("name", "") == name) out.push_back(e.value("value", json()));
  }
  return out;
}

TEST_CASE("NotFoundNames: only a NotFound that names the object says it is not there") {
  const nlohmann::json object_missing = {{"kind", "Status"},
                                         {"reason", "NotFound"},
                                         {"code", 404},
                                         {"details", {{"name", "train-1a2b3c4d"}, {"group", "batch"}, {"kind", "jobs"}}}};
  CHECK(NotFoundNames(object_missing, "train-1a2b3c4d"));
  CHECK_FALSE(NotFoundNames(object_missing, "train-ffffffff"));  // another object's
  // A path not served: a Status that names nothing, or no JSON at all.
  const nlohmann::json unserved = {{"kind", "Status"},
                                   {"reason", "NotFound"},
                                   {"code", 404},
                                   {"message", "the server could not find the requested resource"},
                                   {"details", nlohmann::json::object()}};
  CHECK_FALSE(NotFoundNames(unserved, "train-1a2b3c4d"));
  CHECK_FALSE(NotFoundNames({{"kind", "Status"}, {"code", 404}}, "train-1a2b3c4d"));
  CHECK_FALSE(NotFoundNames(nullptr, "train-1a2b3c4d"));
  CHECK_FALSE(NotFoundNames({{"details", "train-1a2b3c4d"}}, "train-1a2b3c4d"));
  CHECK_FALSE(NotFoundNames({{"details", {{"name", 7}}}}, "7"));
}

TEST_CASE("DeletableEpoch: only the job's own object, made by gantry, at an epoch no newer than the row's") {
  const std::string uid = "0123abcd-0000-4000-8000-000000000001";
  auto object = [&](const std::string& origin, const std::string& job_uid, const std::string& epoch) {
    json o = {{"metadata",
               {{"name", "train-00000001"},
                {"uid", "k8s-1"},
                {"labels", {{kOriginLabel, origin}, {kJobUidLabel, job_uid}}},
                {"annotations", {{kEpochAnnotation, epoch}}}}}};
    return o;
  };
  CHECK(DeletableEpoch(object("gantry", uid, "2"), uid, "gantry", 2) == std::optional<int64_t>(2));
  CHECK(DeletableEpoch(object("gantry", uid, "1"), uid, "gantry", 2) == std::optional<int64_t>(1));
  CHECK_FALSE(DeletableEpoch(object("gantry", uid, "3"), uid, "gantry", 2));  // a newer epoch's
  CHECK_FALSE(DeletableEpoch(object("gantry", "another-uid", "1"), uid, "gantry", 2));  // another job's
  CHECK_FALSE(DeletableEpoch(object("other-origin", uid, "1"), uid, "gantry", 2));  // another dispatcher's
  CHECK_FALSE(DeletableEpoch(object("gantry", uid, ""), uid, "gantry", 2));       // no epoch
  CHECK_FALSE(DeletableEpoch(object("gantry", uid, "0"), uid, "gantry", 2));
  CHECK_FALSE(DeletableEpoch(object("gantry", uid, "2x"), uid, "gantry", 2));
  json no_uid = object("gantry", uid, "1");
  no_uid["metadata"].erase("uid");
  CHECK_FALSE(DeletableEpoch(no_uid, uid, "gantry", 2));  // nothing to hold the delete to
  json no_labels = {{"metadata", {{"name", "train-00000001"}, {"uid", "k8s-1"}}}};
  CHECK_FALSE(DeletableEpoch(no_labels, uid, "gantry", 2));  // someone else's, same name
}

TEST_CASE("RemoteName is <name>-<8 hex of the uid>, a DNS-1123 label of at most 63") {
  struct Row {
    std::string name, uid, want;
  };
  const std::string long54(54, 'a');
  auto row = GENERATE_COPY(values<Row>({
      {"llama-ft", "0b9d2a4e-1111-2222-3333-444455556666", "llama-ft-0b9d2a4e"},
      {"llama-ft", "0B9D2A4E-1111-2222-3333-444455556666", "llama-ft-0b9d2a4e"},
      {"x", "12-34-56-78-9a", "x-12345678"},  // dashes anywhere are skipped
      {long54, "abcdef01-2345", long54 + "-abcdef01"},
      {std::string(80, 'b'), "abcdef01-2345", std::string(54, 'b') + "-abcdef01"},
      // Version 7: the time comes first, so the random last 8 hex are used.
      {"llama-ft", "0193a5b2-7c4d-7e1f-8a2b-3c4d5e6f7a8b", "llama-ft-5e6f7a8b"},
      {"llama-ft", "0193A5B2-7C4D-7E1F-8A2B-3C4D5E6F7A8B", "llama-ft-5e6f7a8b"},
  }));
  CAPTURE(row.name, row.uid);
  std::string got = RemoteName(row.name, row.uid);
  CHECK(got == row.want);
  CHECK(got.size() <= 63);
  CHECK(CheckDns1123Label(got) == "");
  CHECK(RemoteName(row.name, row.uid) == got);
}

TEST_CASE("RemoteName differs by uid") {
  CHECK(RemoteName("a", "11111111-0") != RemoteName("a", "22222222-0"));
}

TEST_CASE("RemoteName differs for same-named jobs made in the same millisecond") {
  // Their uids share the first 12 hex digits (the time); the names must not.
  std::set<std::string> names;
  for (int i = 0; i < 1000; ++i) names.insert(RemoteName("train", NewUid(1'764'000'000'000)));
  CHECK(names.size() == 1000);
}

TEST_CASE("Workload paths for both Kueue versions") {
  CHECK(KueueVersionString(KueueApiVersion::kV1beta2) == "v1beta2");
  CHECK(KueueVersionString(KueueApiVersion::kV1beta1) == "v1beta1");
  CHECK(WorkloadPath(KueueApiVersion::kV1beta2, "team-a") ==
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads");
  CHECK(WorkloadPath(KueueApiVersion::kV1beta1, "team-a", "x-1") ==
        "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads/x-1");
  CHECK(AllWorkloadsPath(KueueApiVersion::kV1beta2) == "/apis/kueue.x-k8s.io/v1beta2/workloads");
  CHECK(AllWorkloadsPath(KueueApiVersion::kV1beta1) == "/apis/kueue.x-k8s.io/v1beta1/workloads");
}

TEST_CASE("JobPath maps a template's kind to its REST path") {
  struct Row {
    std::string api, kind, name, want;
  };
  auto row = GENERATE(values<Row>({
      {"batch/v1", "Job", "", "/apis/batch/v1/namespaces/ns/jobs"},
      {"batch/v1", "Job", "j-1", "/apis/batch/v1/namespaces/ns/jobs/j-1"},
      {"jobset.x-k8s.io/v1alpha2", "JobSet", "",
       "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets"},
      {"kubeflow.org/v1", "PyTorchJob", "t", "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/t"},
      {"v1", "Pod", "p", "/api/v1/namespaces/ns/pods/p"},
      {"example.com/v1", "Policy", "", "/apis/example.com/v1/namespaces/ns/policies"},
  }));
  auto path = JobPath({{"apiVersion", row.api}, {"kind", row.kind}}, "ns", row.name);
  REQUIRE(path.ok());
  CHECK(*path == row.want);
}

TEST_CASE("JobPath refuses a template that cannot name a resource") {
  auto object = GENERATE(values<json>({
      json::object(),
      {{"kind", "Job"}},
      {{"apiVersion", "batch/v1"}},
      {{"apiVersion", "batch/v1"}, {"kind", 5}},
      {{"apiVersion", "../v1"}, {"kind", "Job"}},
      {{"apiVersion", "a/b/c"}, {"kind", "Job"}},
      {{"apiVersion", "batch/v1"}, {"kind", "Jobs/x"}},
  }));
  CAPTURE(object.dump());
  auto path = JobPath(object, "ns");
  REQUIRE_FALSE(path.ok());
  CHECK(path.status().code() == Code::kInvalidArgument);
}

TEST_CASE("BuildWorkload: metadata, queue, priority and pod sets of a Job") {
  JobSpec spec = MustParse(kJobDoc);
  auto version = GENERATE(KueueApiVersion::kV1beta1, KueueApiVersion::kV1beta2);
  json wl = Workload(spec, version);
  CHECK(wl["apiVersion"] == "kueue.x-k8s.io/" + KueueVersionString(version));
  CHECK(wl["kind"] == "Workload");
  CHECK(wl["metadata"]["name"] == "llama-ft-0b9d2a4e");
  CHECK(wl["metadata"]["namespace"] == "team-a");
  CHECK(wl["metadata"]["labels"] == json({{kOriginLabel, "gantry-test"}, {kJobUidLabel, kUid}}));
  CHECK(wl["metadata"]["annotations"] == json({{kEpochAnnotation, "7"}}));
  CHECK(wl["spec"]["queueName"] == "lq-a");
  CHECK(wl["spec"]["priority"] == 100);
  REQUIRE(wl["spec"]["podSets"].size() == 1);
  const json& ps = wl["spec"]["podSets"][0];
  CHECK(ps["name"] == "main");
  CHECK(ps["count"] == 4);
  // The pod spec is the job's, plus the epoch env the job's pods get too.
  CHECK(ps["template"]["metadata"] == json({{"labels", {{"role", "trainer"}}}}));
  const json& want = spec.pod_sets[0].pod_template;
  std::vector<json> got_containers = Containers(ps["template"]);
  std::vector<json> want_containers = Containers(want);
  REQUIRE(got_containers.size() == 3);
  REQUIRE(got_containers.size() == want_containers.size());
  for (std::size_t i = 0; i < got_containers.size(); ++i) {
    CHECK(got_containers[i]["resources"] == want_containers[i]["resources"]);
    CHECK(EnvValues(got_containers[i], kEpochEnv) == std::vector<json>{"7"});
  }
  CHECK(ps["template"]["spec"]["restartPolicy"] == "Never");
}

TEST_CASE("BuildWorkload: pod sets of a JobSet and of explicit podSets") {
  JobSpec jobset = MustParse(kJobSetDoc);
  json wl = Workload(jobset);
  REQUIRE(wl["spec"]["podSets"].size() == 2);
  CHECK(wl["spec"]["podSets"][0]["name"] == "driver");
  CHECK(wl["spec"]["podSets"][0]["count"] == 1);
  CHECK(wl["spec"]["podSets"][1]["name"] == "workers");
  CHECK(wl["spec"]["podSets"][1]["count"] == 8);
  CHECK(wl["spec"]["priority"] == 0);

  // No adapter reaches the real job's pods, so the templates stay as given.
  JobSpec torch = MustParse(kTorchDoc);
  wl = Workload(torch);
  REQUIRE(wl["spec"]["podSets"].size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(wl["spec"]["podSets"][i]["name"] == torch.pod_sets[i].name);
    CHECK(wl["spec"]["podSets"][i]["count"] == torch.pod_sets[i].count);
    CHECK(wl["spec"]["podSets"][i]["template"] == torch.pod_sets[i].pod_template);
  }
  CHECK(wl["spec"]["podSets"][1]["count"] == 3);
}

TEST_CASE("BuildWorkload falls back to the gantry queue without a LocalQueue") {
  JobSpec spec = MustParse(kJobSetDoc);
  WorkloadParams p;
  p.spec = &spec;
  p.job_uid = kUid;
  CHECK(BuildWorkload(p)["spec"]["queueName"] == "research");
  CHECK(BuildWorkload(p)["metadata"]["labels"][kOriginLabel] == "gantry");
  CHECK(BuildWorkload(p)["metadata"]["annotations"][kEpochAnnotation] == "1");
}

TEST_CASE("BuildRemoteJob: a suspended Job with gantry's labels, annotations and epoch env") {
  JobSpec spec = MustParse(kJobDoc);
  json job = RemoteJob(spec);
  CHECK(job["apiVersion"] == "batch/v1");
  CHECK(job["kind"] == "Job");
  CHECK(job["metadata"]["name"] == "llama-ft-0b9d2a4e");
  CHECK(job["metadata"]["namespace"] == "team-a");
  CHECK(job["spec"]["suspend"] == true);
  CHECK(job["spec"]["parallelism"] == 4);
  CHECK(job["metadata"]["labels"] == json({{"app", "llama"},
                                           {kOriginLabel, "gantry-test"},
                                           {kJobUidLabel, kUid},
                                           {kQueueNameLabel, "lq-a"},
                                           {kPrebuiltWorkloadAnnotation, "llama-ft-0b9d2a4e"}}));
  CHECK(job["metadata"]["annotations"] == json({{"note", "keep-me"},
                                                {kEpochAnnotation, "7"},
                                                {kPrebuiltWorkloadAnnotation, "llama-ft-0b9d2a4e"},
                                                {kAtMostOnceAnnotation, "true"}}));
  const json& pod_template = job["spec"]["template"];
  CHECK(pod_template["metadata"]["labels"] == json({{"role", "trainer"}}));
  std::vector<json> containers = Containers(pod_template);
  REQUIRE(containers.size() == 3);
  for (const json& c : containers) {
    INFO(c["name"].dump());
    CHECK(EnvValues(c, kEpochEnv) == std::vector<json>{"7"});
  }
  // The stale entry is replaced in place; the other variables are kept.
  CHECK(containers[0]["env"] == json::parse(R"([{"name":"GANTRY_EPOCH","value":"7"},
                                                {"name":"OTHER","value":"x"}])"));
}

TEST_CASE("BuildRemoteJob: at-most-once only for onClusterLoss Fail and Wait") {
  JobSpec spec = MustParse(kJobDoc);
  auto [policy, want] = GENERATE(table<OnClusterLoss, bool>({{OnClusterLoss::kRequeue, false},
                                                             {OnClusterLoss::kFail, true},
                                                             {OnClusterLoss::kWait, true}}));
  spec.on_cluster_loss = policy;
  // A copy of the marker in the template must not survive a Requeue job.
  spec.template_object["metadata"]["annotations"][kAtMostOnceAnnotation] = "true";
  json annotations = RemoteJob(spec)["metadata"]["annotations"];
  CHECK(annotations.contains(kAtMostOnceAnnotation) == want);
  if (want) CHECK(annotations[kAtMostOnceAnnotation] == "true");
}

TEST_CASE("BuildRemoteJob: GANTRY_EPOCH in every container of every JobSet pod template") {
  JobSpec spec = MustParse(kJobSetDoc);
  json job = RemoteJob(spec);
  CHECK(job["spec"]["suspend"] == true);
  CHECK(job["metadata"]["annotations"][kAtMostOnceAnnotation] == "true");
  const json& jobs = job["spec"]["replicatedJobs"];
  REQUIRE(jobs.size() == 2);
  std::size_t seen = 0;
  for (const json& rj : jobs) {
    for (const json& c : Containers(rj["template"]["spec"]["template"])) {
      INFO(rj["name"].dump() + " " + c["name"].dump());
      CHECK(EnvValues(c, kEpochEnv) == std::vector<json>{"7"});
      ++seen;
    }
  }
  CHECK(seen == 3);
}

TEST_CASE("BuildRemoteJob: other kinds get labels, annotations and suspend only") {
  JobSpec spec = MustParse(kTorchDoc);
  json job = RemoteJob(spec);
  CHECK(job["kind"] == "PyTorchJob");
  CHECK(job["spec"]["suspend"] == true);
  CHECK(job["spec"]["pytorchReplicaSpecs"] == spec.template_object["spec"]["pytorchReplicaSpecs"]);
  CHECK(job["metadata"]["labels"][kJobUidLabel] == kUid);
  CHECK(job["metadata"]["annotations"][kEpochAnnotation] == "7");
  CHECK_FALSE(job["metadata"]["annotations"].contains(kAtMostOnceAnnotation));
  CHECK(job.dump().find(kEpochEnv) == std::string::npos);
}

TEST_CASE("BuildRemoteJob drops the template's finalizers at every level: they would hold gantry's deletes") {
  const json keep = json::array({"example.com/keep"});
  SECTION("a Job and its pods") {
    JobSpec spec = MustParse(kJobDoc);
    spec.template_object["metadata"]["finalizers"] = keep;
    spec.template_object["spec"]["template"]["metadata"]["finalizers"] = keep;
    const json job = RemoteJob(spec);
    CHECK_FALSE(job["metadata"].contains("finalizers"));
    CHECK_FALSE(job["spec"]["template"]["metadata"].contains("finalizers"));
    CHECK(job["metadata"]["labels"][kJobUidLabel] == kUid);  // the rest of the metadata kept
  }
  SECTION("a JobSet, its Jobs and their pods") {
    JobSpec spec = MustParse(kJobSetDoc);
    spec.template_object["metadata"]["finalizers"] = keep;
    json& rj = spec.template_object["spec"]["replicatedJobs"][0];
    rj["template"]["metadata"]["finalizers"] = keep;
    rj["template"]["metadata"]["labels"] = {{"a", "b"}};
    rj["template"]["spec"]["template"]["metadata"]["finalizers"] = keep;
    const json job = RemoteJob(spec);
    CHECK(job.dump().find("example.com/keep") == std::string::npos);
    CHECK(job["spec"]["replicatedJobs"][0]["template"]["metadata"]["labels"]["a"] == "b");
  }
  SECTION("another kind, at its top") {
    JobSpec spec = MustParse(kTorchDoc);
    spec.template_object["metadata"]["finalizers"] = keep;
    CHECK_FALSE(RemoteJob(spec)["metadata"].contains("finalizers"));
  }
}

TEST_CASE("BuildRemoteJob drops what the API server set on a template read back from a cluster") {
  JobSpec spec = MustParse(kJobDoc);
  json& t = spec.template_object;
  t["status"] = {{"active", 1}};
  t["metadata"]["uid"] = "old-uid";
  t["metadata"]["resourceVersion"] = "123";
  t["metadata"]["ownerReferences"] = json::array({{{"uid", "x"}}});
  t["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  t["spec"]["selector"] = {{"matchLabels", {{"batch.kubernetes.io/controller-uid", "old-uid"}}}};
  t["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = "old-uid";
  t["spec"]["template"]["metadata"]["labels"]["controller-uid"] = "old-uid";
  json job = RemoteJob(spec);
  CHECK_FALSE(job.contains("status"));
  for (const char* key : {"uid", "resourceVersion", "ownerReferences"}) {
    CAPTURE(key);
    CHECK_FALSE(job["metadata"].contains(key));
  }
  CHECK_FALSE(job["spec"].contains("managedBy"));
  CHECK_FALSE(job["spec"].contains("selector"));
  CHECK(job["spec"]["template"]["metadata"]["labels"] == json({{"role", "trainer"}}));

  t["spec"]["manualSelector"] = true;  // the user's own selector is theirs to keep
  CHECK(RemoteJob(spec)["spec"].contains("selector"));
}

// The worker's TTL controller would delete a finished job and, with it, the
// Workload Kueue made it own, before gantry may have seen it finish: a job
// whose objects vanished is dispatched again. The engine keeps them that
// long instead (its retention), and the field never reaches a worker.
TEST_CASE("BuildRemoteJob never sends ttlSecondsAfterFinished, which the engine keeps as the retention instead") {
  JobSpec job_spec = MustParse(kJobDoc);
  CHECK_FALSE(TemplateTtlSeconds(job_spec.template_object));
  job_spec.template_object["spec"]["ttlSecondsAfterFinished"] = 600;
  CHECK(TemplateTtlSeconds(job_spec.template_object) == 600);
  CHECK_FALSE(RemoteJob(job_spec)["spec"].contains("ttlSecondsAfterFinished"));
  job_spec.template_object["spec"]["ttlSecondsAfterFinished"] = 0;
  CHECK(TemplateTtlSeconds(job_spec.template_object) == 0);
  job_spec.template_object["spec"]["ttlSecondsAfterFinished"] = "600";  // not a number: no retention from it
  CHECK_FALSE(TemplateTtlSeconds(job_spec.template_object));
  CHECK_FALSE(RemoteJob(job_spec)["spec"].contains("ttlSecondsAfterFinished"));

  JobSpec jobset = MustParse(kJobSetDoc);
  jobset.template_object["spec"]["ttlSecondsAfterFinished"] = 30;
  CHECK(TemplateTtlSeconds(jobset.template_object) == 30);
  CHECK_FALSE(RemoteJob(jobset)["spec"].contains("ttlSecondsAfterFinished"));

  // Another kind's field of that name means what that kind says: left as it is.
  JobSpec torch = MustParse(kTorchDoc);
  torch.template_object["spec"]["ttlSecondsAfterFinished"] = 30;
  CHECK_FALSE(TemplateTtlSeconds(torch.template_object));
  CHECK(RemoteJob(torch)["spec"]["ttlSecondsAfterFinished"] == 30);
}

// ---------------------------------------------------------------------------
// Validation against the Workload CRD's openAPIV3Schema (crd_schema.h).

TEST_CASE("BuildWorkload writes Workloads the CRD schema accepts") {
  auto version = GENERATE(KueueApiVersion::kV1beta1, KueueApiVersion::kV1beta2);
  auto doc = GENERATE(kJobDoc, kJobSetDoc, kTorchDoc);
  JobSpec spec = MustParse(doc);
  CAPTURE(KueueVersionString(version), spec.name);
  const bool gate = GENERATE(false, true);
  CAPTURE(gate);
  SchemaValidator validator;
  json wl = Workload(spec, version, gate);
  std::vector<std::string> errors = validator.Validate(wl, WorkloadSchema(KueueVersionString(version)));
  CHECK(Joined(errors) == "");
  CHECK(validator.skipped_patterns().empty());
  // v1beta1 has no gates: such a copy may preempt at once.
  const bool gated = gate && version == KueueApiVersion::kV1beta2;
  CHECK(wl["spec"].contains("preemptionGates") == gated);
  if (gated) {
    CHECK(wl["spec"]["preemptionGates"] == json::array({{{"name", kPreemptionGate}}}));
    // The status the gate's opening patch leaves is valid too, beside
    // another controller's gate.
    const json other = {{"name", "example.com/other"}, {"position", "Open"},
                        {"lastTransitionTime", "2023-11-14T22:00:00Z"}};
    wl["status"]["preemptionGates"] = json::array({other});
    json patch = OpenGatePatch(1'700'000'000'000, "42", json::array({other}));
    patch.erase("metadata");  // a precondition, read against the stored object (the sim's tests)
    wl.merge_patch(patch);
    CHECK(wl["status"]["preemptionGates"].size() == 2);
    CHECK(wl["status"]["preemptionGates"][0] == other);
    CHECK(wl["status"]["preemptionGates"][1]["name"] == kPreemptionGate);
    CHECK(wl["status"]["preemptionGates"][1]["position"] == "Open");
    CHECK(Joined(validator.Validate(wl, WorkloadSchema("v1beta2"))) == "");
  }
}

// The Workload CRD's quantities are int-or-string: 0.5 is refused.
TEST_CASE("BuildWorkload writes fractional quantities as strings the CRD accepts") {
  auto version = GENERATE(KueueApiVersion::kV1beta1, KueueApiVersion::kV1beta2);
  CAPTURE(KueueVersionString(version));
  std::string doc = kJobDoc;
  doc.replace(doc.find("cpu: 500m"), 9, "cpu: 0.5");
  JobSpec spec = MustParse(doc.c_str());
  // And a job stored before submission turned such numbers into strings.
  JobSpec stored = MustParse(kJobDoc);
  stored.pod_sets[0].pod_template["spec"]["containers"][1]["resources"]["requests"]["cpu"] = 0.5;
  for (const JobSpec* s : {&spec, &stored}) {
    json wl = Workload(*s, version);
    const json& sidecar = wl["spec"]["podSets"][0]["template"]["spec"]["containers"][1];
    CHECK(sidecar["resources"]["requests"]["cpu"] == "500m");
    SchemaValidator validator;
    CHECK(Joined(validator.Validate(wl, WorkloadSchema(KueueVersionString(version)))) == "");
  }
}

// Kueue finishes a prebuilt Workload as OutOfSync when this differs from
// the job's kueue.x-k8s.io/max-exec-time-seconds label.
TEST_CASE("BuildWorkload copies the job's max-exec-time label into maximumExecutionTimeSeconds") {
  auto version = GENERATE(KueueApiVersion::kV1beta1, KueueApiVersion::kV1beta2);
  CAPTURE(KueueVersionString(version));
  std::string doc = kJobDoc;
  doc.replace(doc.find("labels: {app: llama}"), 20,
              "labels: {app: llama, kueue.x-k8s.io/max-exec-time-seconds: \"7200\"}");
  json wl = Workload(MustParse(doc.c_str()), version);
  CHECK(wl["spec"]["maximumExecutionTimeSeconds"] == 7200);
  SchemaValidator validator;
  CHECK(Joined(validator.Validate(wl, WorkloadSchema(KueueVersionString(version)))) == "");
  CHECK_FALSE(Workload(MustParse(kJobDoc), version)["spec"].contains("maximumExecutionTimeSeconds"));
  // The real job keeps the label, so the two agree.
  CHECK(RemoteJob(MustParse(doc.c_str()))["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] ==
        "7200");
}

// Kueue sets a Workload's priority from the job's WorkloadPriorityClass
// label only when it builds the Workload itself, never for a prebuilt one:
// the copy carries the class and its value in that cluster.
TEST_CASE("BuildWorkload names the job's WorkloadPriorityClass and carries its value as the priority") {
  auto version = GENERATE(KueueApiVersion::kV1beta1, KueueApiVersion::kV1beta2);
  CAPTURE(KueueVersionString(version));
  std::string doc = kJobDoc;
  doc.replace(doc.find("labels: {app: llama}"), 20, "labels: {app: llama, kueue.x-k8s.io/priority-class: prod}");
  const JobSpec spec = MustParse(doc.c_str());
  WorkloadParams p;
  p.spec = &spec;
  p.job_uid = kUid;
  p.local_queue = "lq-a";
  p.version = version;
  p.priority_class_value = 50000;
  const json wl = BuildWorkload(p);
  CHECK(wl["spec"]["priority"] == 50000);
  if (version == KueueApiVersion::kV1beta2) {
    CHECK(wl["spec"]["priorityClassRef"] ==
          json({{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "prod"}}));
    CHECK_FALSE(wl["spec"].contains("priorityClassName"));
  } else {
    CHECK(wl["spec"]["priorityClassName"] == "prod");
    CHECK(wl["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass");
    CHECK_FALSE(wl["spec"].contains("priorityClassRef"));
  }
  SchemaValidator validator;
  CHECK(Joined(validator.Validate(wl, WorkloadSchema(KueueVersionString(version)))) == "");
  // Without a value the copy names no class (the engine sends none then).
  p.priority_class_value.reset();
  const json plain = BuildWorkload(p);
  CHECK(plain["spec"]["priority"] == spec.priority);
  CHECK_FALSE(plain["spec"].contains("priorityClassRef"));
  CHECK_FALSE(plain["spec"].contains("priorityClassName"));
  // The real job keeps the label, as the user wrote it.
  CHECK(RemoteJob(spec)["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "prod");
}

// A Job takes env with a name twice (the last wins), the Workload CRD keys
// env by name: every worker refused the copy. gantry writes each key once,
// in the copy and in the real job alike, so Kueue finds them equal.
constexpr const char* kRepeatedKeysDoc = R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: repeats
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  template:
    spec:
      restartPolicy: Never
      imagePullSecrets: [{name: regcred}, {name: other}, {name: regcred}]
      hostAliases:
      - {ip: 10.0.0.1, hostnames: [db]}
      - {ip: 10.0.0.1, hostnames: [db]}
      initContainers:
      - name: init
        image: init:1
        env: [{name: X, value: "1"}, {name: X, value: "2"}]
        resources: {requests: {cpu: 1, memory: 1Gi}}
      containers:
      - name: main
        image: main:1
        env:
        - {name: A, value: "1"}
        - {name: B, value: "x"}
        - {name: GANTRY_EPOCH, value: "3"}
        - {name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: GANTRY_EPOCH, value: "4"}
        ports:
        - {containerPort: 8080}
        - {containerPort: 8080, protocol: UDP}
        - {containerPort: 8080, protocol: TCP}
        resources: {requests: {cpu: 1, memory: 1Gi}}
)";

TEST_CASE("BuildWorkload and BuildRemoteJob write each key of a keyed list once, alike") {
  auto version = GENERATE(KueueApiVersion::kV1beta1, KueueApiVersion::kV1beta2);
  CAPTURE(KueueVersionString(version));
  JobSpec spec = MustParse(kRepeatedKeysDoc);
  json wl = Workload(spec, version);
  SchemaValidator validator;
  CHECK(Joined(validator.Validate(wl, WorkloadSchema(KueueVersionString(version)))) == "");
  const json& pod = wl["spec"]["podSets"][0]["template"]["spec"];
  const json& main = pod["containers"][0];
  CHECK(main["env"] == json::parse(R"([{"name": "B", "value": "x"},
      {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
      {"name": "GANTRY_EPOCH", "value": "7"}])"));
  CHECK(main["ports"] == json::parse(R"([{"containerPort": 8080}, {"containerPort": 8080, "protocol": "UDP"}])"));
  CHECK(pod["initContainers"][0]["env"] == json::parse(R"([{"name": "X", "value": "2"}, {"name": "GANTRY_EPOCH", "value": "7"}])"));
  CHECK(pod["imagePullSecrets"] == json::parse(R"([{"name": "regcred"}, {"name": "other"}])"));
  CHECK(pod["hostAliases"].size() == 1);
  // The real job's pods are the same.
  const json job_pod = RemoteJob(spec)["spec"]["template"]["spec"];
  for (const char* field : {"containers", "initContainers", "imagePullSecrets", "hostAliases"}) {
    CAPTURE(field);
    CHECK(job_pod[field] == pod[field]);
  }
}

TEST_CASE("the gate's opening patch carries its precondition and keeps other gates") {
  const json other = {{"name", "example.com/other"}, {"position", "Closed"}};
  const json stale_ours = {{"name", kPreemptionGate}, {"position", "Closed"}};
  json patch = OpenGatePatch(1'700'000'000'000, "42", json::array({other, stale_ours}));
  CHECK(patch["metadata"] == json({{"resourceVersion", "42"}}));
  const json& states = patch["status"]["preemptionGates"];
  REQUIRE(states.size() == 2);  // gantry's entry once, open
  CHECK(states[0] == other);
  CHECK(states[1]["name"] == kPreemptionGate);
  CHECK(states[1]["position"] == "Open");
  CHECK(states[1]["lastTransitionTime"] == "2023-11-14T22:13:20Z");
  // No other gates shown: gantry's entry alone.
  CHECK(OpenGatePatch(1'700'000'000'000, "42", json())["status"]["preemptionGates"].size() == 1);
}

json& FirstContainer(json& wl) {
  return wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0];
}

TEST_CASE("the schema validator refuses what the API server would") {
  const std::string c0 = "spec.podSets[0].template.spec.containers[0].";
  struct Row {
    std::string what;
    std::function<void(json&)> mutate;
    std::string want;                     // the start of one error ("path: message"); "" = valid
    std::optional<KueueApiVersion> only;  // the one version that refuses it
  };
  auto row = GENERATE_COPY(values<Row>({
      {"unchanged", [](json&) {}, "", {}},
      // count has a default, but only v1beta1 lists it as required.
      {"no count", [](json& w) { w["spec"]["podSets"][0].erase("count"); },
       "spec.podSets[0].count: Required value", KueueApiVersion::kV1beta1},
      {"string priority",
       [](json& w) { w["spec"]["priority"] = "100"; },
       "spec.priority: must be of type integer",
       {}},
      {"no template",
       [](json& w) { w["spec"]["podSets"][0].erase("template"); },
       "spec.podSets[0].template: Required value",
       {}},
      {"unknown pod set field",
       [](json& w) { w["spec"]["podSets"][0]["size"] = 1; },
       "spec.podSets[0].size: unknown field",
       {}},
      {"v1beta1-only field", [](json& w) { w["spec"]["priorityClassSource"] = ""; },
       "spec.priorityClassSource: unknown field", KueueApiVersion::kV1beta2},
      {"v1beta2-only field", [](json& w) { w["spec"]["preemptionGates"] = json::array(); },
       "spec.preemptionGates: unknown field", KueueApiVersion::kV1beta1},
      {"upper-case pod set name",
       [](json& w) { w["spec"]["podSets"][0]["name"] = "Main"; },
       "spec.podSets[0].name: Invalid value",
       {}},
      {"negative count",
       [](json& w) { w["spec"]["podSets"][0]["count"] = -1; },
       "spec.podSets[0].count: should be greater",
       {}},
      {"count beyond int32",
       [](json& w) { w["spec"]["podSets"][0]["count"] = 1LL << 31; },
       "spec.podSets[0].count: out of the int32 range",
       {}},
      {"19 pod sets",
       [](json& w) {
         json& sets = w["spec"]["podSets"];
         for (int i = 1; i < 19; ++i) {
           sets.push_back(sets[0]);
           sets.back()["name"] = "p" + std::to_string(i);
         }
       },
       "spec.podSets: Too many: 19",
       {}},
      {"duplicate pod set",
       [](json& w) { w["spec"]["podSets"].push_back(w["spec"]["podSets"][0]); },
       "spec.podSets[1]: Duplicate value",
       {}},
      {"container without a name",
       [](json& w) { FirstContainer(w).erase("name"); },
       c0 + "name: Required value",
       {}},
      {"bad quantity",
       [](json& w) { FirstContainer(w)["resources"]["requests"]["cpu"] = "8x"; },
       c0 + "resources.requests.cpu: Invalid value",
       {}},
      {"fractional number as a quantity",
       [](json& w) { FirstContainer(w)["resources"]["requests"]["cpu"] = 0.5; },
       c0 + "resources.requests.cpu: must be an integer or a string",
       {}},
      {"boolean quantity",
       [](json& w) { FirstContainer(w)["resources"]["requests"]["cpu"] = true; },
       c0 + "resources.requests.cpu: must be an integer or a string",
       {}},
      {"string container port",
       [](json& w) { FirstContainer(w)["ports"][0]["containerPort"] = "80"; },
       c0 + "ports[0].containerPort: must be of type integer",
       {}},
      {"duplicate env",
       [](json& w) { FirstContainer(w)["env"].push_back(FirstContainer(w)["env"][0]); },
       c0 + "env[2]: Duplicate value",
       {}},
      {"duplicate port, its protocol defaulted",
       [](json& w) { FirstContainer(w)["ports"].push_back({{"containerPort", 8080}}); },
       c0 + "ports[1]: Duplicate value",
       {}},
      // Why BuildWorkload keeps only the template metadata the CRD knows.
      {"pod template creationTimestamp",
       [](json& w) { w["spec"]["podSets"][0]["template"]["metadata"]["creationTimestamp"] = "x"; },
       "spec.podSets[0].template.metadata.creationTimestamp: unknown field",
       {}},
      {"null queue name",
       [](json& w) { w["spec"]["queueName"] = nullptr; },
       "spec.queueName: must not be null",
       {}},
      {"name too long",
       [](json& w) { w["metadata"]["name"] = std::string(254, 'a'); },
       "metadata.name: Too long",
       {}},
  }));
  auto version = GENERATE(KueueApiVersion::kV1beta1, KueueApiVersion::kV1beta2);
  CAPTURE(row.what, KueueVersionString(version));
  JobSpec spec = MustParse(kJobDoc);
  json wl = Workload(spec, version);
  row.mutate(wl);
  SchemaValidator validator;
  std::vector<std::string> errors = validator.Validate(wl, WorkloadSchema(KueueVersionString(version)));
  CAPTURE(Joined(errors));
  if (row.want.empty() || (row.only && *row.only != version)) {
    CHECK(errors.empty());
  } else {
    CHECK(std::any_of(errors.begin(), errors.end(),
                      [&](const std::string& e) { return e.starts_with(row.want); }));
  }
}

}  // namespace
}  // namespace gantry::dispatch

#include "gantry/job/template_fields.h"

namespace gantry::dispatch {

// The fields submission warns of as unknown (template_fields.h) are checked
// against what the Workload CRD's pod template says Kubernetes knows: a
// field the CRD has and gantry's list lacks would be warned of wrongly.
TEST_CASE("the pod template fields gantry knows include every one of the Workload CRD's", "[dispatch][crd]") {
  for (const char* version : {"v1beta1", "v1beta2"}) {
    INFO(version);
    const nlohmann::json& schema = testing::WorkloadSchema(version);
    const nlohmann::json& pod_spec =
        schema.at(nlohmann::json::json_pointer("/properties/spec/properties/podSets/items/properties/template/"
                                               "properties/spec/properties"));
    REQUIRE(pod_spec.size() > 30);
    for (const auto& [field, _] : pod_spec.items()) {
      INFO(field);
      CHECK(std::count(KnownPodSpecFields().begin(), KnownPodSpecFields().end(), field) == 1);
    }
    const nlohmann::json& container = pod_spec.at(nlohmann::json::json_pointer("/containers/items/properties"));
    REQUIRE(container.size() > 15);
    for (const auto& [field, _] : container.items()) {
      INFO(field);
      CHECK(std::count(KnownContainerFields().begin(), KnownContainerFields().end(), field) == 1);
    }
  }
}

}  // namespace gantry::dispatch
