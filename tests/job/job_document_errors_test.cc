#include <catch2/catch.hpp>
#include <functional>

#include "gantry/job/job_document.h"
#include "job_fixtures.h"

namespace gantry {
namespace {

using nlohmann::json;
using Mutation = std::function<void(json&)>;

Mutation Set(std::string pointer, json value) {
  return [=](json& doc) { doc[json::json_pointer(pointer)] = value; };
}
Mutation Erase(std::string pointer, std::string key) {
  return [=](json& doc) { doc[json::json_pointer(pointer)].erase(key); };
}

json Base(const char* yaml) { return std::get<json>(YamlToJson(yaml)); }

const std::string kC0 = "/spec/template/spec/template/spec/containers/0";
const std::string kC0Path = "spec.template.spec.template.spec.containers[0]";
const std::string kC1Path = "spec.template.spec.template.spec.containers[1]";

struct BadCase {
  const char* name;
  const char* base;  // YAML of the document before the mutation
  Mutation mutate;
  std::string want_field;
  const char* want_message_part = "";
  std::optional<std::string_view> path_namespace = std::nullopt;
};

TEST_CASE("ParseJobJson refuses bad documents with the field path (422)", "[job][errors]") {
  const char* g = testing::kGantryJobYaml;
  const char* m = testing::kBatchManifestYaml;
  const char* js = testing::kJobSetYaml;
  const char* pt = testing::kPyTorchJobYaml;
  const std::string long_name(kMaxJobNameLength + 1, 'a');
  const BadCase cases[] = {
      {"no apiVersion", g, Erase("", "apiVersion"), "apiVersion", "Required value"},
      {"unknown apiVersion", g, Set("/apiVersion", "v1"), "apiVersion", "Unsupported value"},
      {"wrong kind", g, Set("/kind", "Pod"), "kind", "Unsupported value"},
      {"unknown top-level field", g, Set("/statuses", json::object()), "statuses", "unknown field"},
      {"a metadata field gantry does not take", g, Set("/metadata/resourceVersion", "5"), "metadata.resourceVersion",
       "unknown field"},
      {"metadata not an object", g, Set("/metadata", "x"), "metadata", "must be an object"},
      {"no name", g, Erase("/metadata", "name"), "metadata.name", "Required value"},
      {"name too long", g, Set("/metadata/name", long_name), "metadata.name", "at most 54"},
      {"name not DNS-1123", g, Set("/metadata/name", "Llama_FT"), "metadata.name"},
      {"unknown metadata field", g, Set("/metadata/generateName", "x-"), "metadata.generateName",
       "unknown field"},
      {"bad namespace", g, Set("/metadata/namespace", "Team_A"), "metadata.namespace"},
      {"namespace differs from URL", g, [](json&) {}, "metadata.namespace", "URL", "team-b"},
      {"bad label value", g, Set("/metadata/labels/team", "n l p"), "metadata.labels[team]"},
      {"bad label key", g, Set("/metadata/labels/-x", "v"), "metadata.labels[-x]"},
      {"no spec", g, Erase("", "spec"), "spec", "Required value"},
      {"no queue", g, Erase("/spec", "queue"), "spec.queue", "Required value"},
      {"queue not DNS-1123", g, Set("/spec/queue", "Team A"), "spec.queue"},
      {"queue not a string", g, Set("/spec/queue", 5), "spec.queue", "must be a string"},
      {"priority a string", g, Set("/spec/priority", "high"), "spec.priority",
       "must be an integer"},
      {"priority a float", g, Set("/spec/priority", 1.5), "spec.priority", "must be an integer"},
      {"priority beyond int32", g, Set("/spec/priority", 3000000000u), "spec.priority"},
      {"unknown spec field", g, Set("/spec/placment", json::object()), "spec.placment",
       "unknown field"},
      {"unknown placement field", g, Set("/spec/placement/zones", json::array()),
       "spec.placement.zones", "unknown field"},
      {"bad interconnect", g, Set("/spec/placement/accelerator/interconnect", "infiniband"),
       "spec.placement.accelerator.interconnect", "Unsupported value"},
      {"minMemoryGiB 0", g, Set("/spec/placement/accelerator/minMemoryGiB", 0),
       "spec.placement.accelerator.minMemoryGiB", "between 1 and 4096"},
      {"minMemoryGiB a whole float", g, Set("/spec/placement/accelerator/minMemoryGiB", 80.0),
       "spec.placement.accelerator.minMemoryGiB", "must be an integer"},
      {"minMemoryGiB past 64 bits", g, Set("/spec/placement/accelerator/minMemoryGiB", 1180591620717411303424.0),
       "spec.placement.accelerator.minMemoryGiB", "between 1 and 4096"},
      {"unknown accelerator field", g, Set("/spec/placement/accelerator/count", 8),
       "spec.placement.accelerator.count", "unknown field"},
      {"price 0", g, Set("/spec/placement/maxPricePerGPUHour", 0),
       "spec.placement.maxPricePerGPUHour", "positive"},
      {"price a string", g, Set("/spec/placement/maxPricePerGPUHour", "4.5"),
       "spec.placement.maxPricePerGPUHour", "must be a number"},
      {"region with a line break", g, Set("/spec/placement/regions", {"eu", "r\n2026 warning forged"}),
       "spec.placement.regions[1]", "must not contain control characters"},
      {"dataset with an escape", g, Set("/spec/placement/datasets", {"s3://d\x1b[31m"}),
       "spec.placement.datasets[0]", "must not contain control characters"},
      {"model with a bidi override", g, Set("/spec/placement/accelerator/model", "H100\u202e"),
       "spec.placement.accelerator.model", "must not contain control characters"},
      {"duplicate region", g, Set("/spec/placement/regions", {"eu", "us", "eu"}),
       "spec.placement.regions[2]", "Duplicate value: \"eu\" (same as index 0)"},
      {"empty cluster name", g, Set("/spec/placement/clusters", {""}), "spec.placement.clusters[0]",
       "must not be empty"},
      {"clusters not a list", g, Set("/spec/placement/clusters", "a,b"), "spec.placement.clusters",
       "must be a list"},
      {"bad selector label", g, Set("/spec/placement/clusterSelector/matchLabels/tier", "a b"),
       "spec.placement.clusterSelector.matchLabels[tier]"},
      {"bad dispatch mode", g, Set("/spec/dispatch/mode", "Sometimes"), "spec.dispatch.mode",
       "supported values: \"AllAtOnce\", \"Incremental\""},
      {"stepSize 0", g, Set("/spec/dispatch/stepSize", 0), "spec.dispatch.stepSize"},
      {"roundSeconds too long", g, Set("/spec/dispatch/roundSeconds", 86401),
       "spec.dispatch.roundSeconds"},
      {"timeoutSeconds 0", g, Set("/spec/dispatch/timeoutSeconds", 0),
       "spec.dispatch.timeoutSeconds"},
      {"unknown dispatch field", g, Set("/spec/dispatch/rounds", 2), "spec.dispatch.rounds",
       "unknown field"},
      {"bad onClusterLoss", g, Set("/spec/onClusterLoss", "Retry"), "spec.onClusterLoss"},
      {"finishedRetentionSeconds negative", g, Set("/spec/finishedRetentionSeconds", -1),
       "spec.finishedRetentionSeconds"},
      {"finishedRetentionSeconds over 7 days", g, Set("/spec/finishedRetentionSeconds", 604801),
       "spec.finishedRetentionSeconds"},
      {"finishedRetentionSeconds a string", g, Set("/spec/finishedRetentionSeconds", "1h"),
       "spec.finishedRetentionSeconds"},
      {"no template", g, Erase("/spec", "template"), "spec.template", "Required value"},
      {"template not an object", g, Set("/spec/template", "job.yaml"), "spec.template",
       "must be an object"},
      {"template without kind", g, Erase("/spec/template", "kind"), "spec.template.kind",
       "Required value"},
      {"container without resources", g, Erase(kC0, "resources"), kC0Path + ".resources.requests",
       "cpu and memory requests are required (missing: cpu, memory)"},
      {"container without memory", g, Erase(kC0 + "/resources/requests", "memory"),
       kC0Path + ".resources.requests", "(missing: memory)"},
      {"bad memory quantity", g,
       Set("/spec/template/spec/template/spec/containers/1/resources/requests/memory", "lots"),
       kC1Path + ".resources.requests.memory", "invalid quantity"},
      {"negative cpu", g, Set(kC0 + "/resources/requests/cpu", "-1"),
       kC0Path + ".resources.requests.cpu", "negative"},
      {"fractional GPU", g, Set(kC0 + "/resources/limits/nvidia.com~1gpu", "0.5"),
       kC0Path + ".resources.limits.nvidia.com/gpu", "whole numbers"},
      {"GPU request differs from limit", g, Set(kC0 + "/resources/limits/nvidia.com~1gpu", 4),
       kC0Path + ".resources.requests.nvidia.com/gpu", "must equal the nvidia.com/gpu limit"},
      {"GPU request without a limit", g, Erase(kC0 + "/resources", "limits"),
       kC0Path + ".resources.limits.nvidia.com/gpu", "Required value: Kubernetes does not overcommit"},
      {"hugepages request without a limit", g, Set(kC0 + "/resources/requests/hugepages-2Mi", "4Mi"),
       kC0Path + ".resources.limits.hugepages-2Mi", "Required value"},
      {"hugepages request differs from limit", g,
       [](json& d) {
         d[json::json_pointer(kC0 + "/resources/requests/hugepages-2Mi")] = "4Mi";
         d[json::json_pointer(kC0 + "/resources/limits/hugepages-2Mi")] = "8Mi";
       },
       kC0Path + ".resources.requests.hugepages-2Mi", "must equal the hugepages-2Mi limit"},
      {"init container extended request without a limit", m,
       Set("/spec/template/spec/initContainers/0/resources/requests/example.com~1fpga", 1),
       "spec.template.spec.initContainers[0].resources.limits.example.com/fpga", "Required value"},
      // What Kubernetes refuses in a Job's pods, after the lease were it not
      // refused here.
      {"Job's pods without a restartPolicy", g, Erase("/spec/template/spec/template/spec", "restartPolicy"),
       "spec.template.spec.template.spec.restartPolicy", "Required value: OnFailure or Never"},
      {"Job's pods restarting Always", m, Set("/spec/template/spec/restartPolicy", "Always"),
       "spec.template.spec.restartPolicy", "Unsupported value: \"Always\""},
      {"a podFailurePolicy with pods restarting OnFailure", m,
       [](json& d) {
         d["spec"]["podFailurePolicy"] = {{"rules", json::array()}};
         d[json::json_pointer("/spec/template/spec/restartPolicy")] = "OnFailure";
       },
       "spec.template.spec.restartPolicy",
       "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"},
      {"JobSet's pods restarting Always", js,
       Set("/spec/template/spec/replicatedJobs/1/template/spec/template/spec/restartPolicy", "Always"),
       "spec.template.spec.replicatedJobs[1].template.spec.template.spec.restartPolicy", "Unsupported value"},
      {"container without an image", g, Erase(kC0, "image"), kC0Path + ".image", "Required value"},
      {"a topology request", g,
       Set("/spec/template/spec/template/metadata/annotations/kueue.x-k8s.io~1podset-required-topology",
           "cloud.provider.com/topology-rack"),
       "spec.template.spec.template.metadata.annotations[kueue.x-k8s.io/podset-required-topology]",
       "topology requests"},

      {"init container with an empty image", m, Set("/spec/template/spec/initContainers/0/image", ""),
       "spec.template.spec.initContainers[0].image", "non-empty"},
      {"JobSet GPU request without a limit", js,
       Set("/spec/template/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources/"
           "requests/nvidia.com~1gpu",
           1),
       "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits."
       "nvidia.com/gpu",
       "Required value"},
      {"resource name without a domain", g, Set(kC0 + "/resources/requests/gpu", 1),
       kC0Path + ".resources.requests.gpu", "must be a standard resource for containers"},
      {"cpu request above limit", g, Set(kC0 + "/resources/limits/cpu", "1"),
       kC0Path + ".resources.requests.cpu", "less than or equal"},
      {"no containers", g, Set("/spec/template/spec/template/spec/containers", json::array()),
       "spec.template.spec.template.spec.containers", "at least one container"},
      {"container without name", g, Erase(kC0, "name"), kC0Path + ".name", "Required value"},
      {"duplicate container names", g,
       Set("/spec/template/spec/template/spec/containers/1/name", "trainer"), kC1Path + ".name",
       "Duplicate value"},
      {"parallelism 0", g, Set("/spec/template/spec/parallelism", 0),
       "spec.template.spec.parallelism", "between 1 and 10000"},
      {"parallelism too large", g, Set("/spec/template/spec/parallelism", 10001),
       "spec.template.spec.parallelism"},
      {"Job without pod template", g, Erase("/spec/template/spec", "template"),
       "spec.template.spec.template", "Required value"},
      {"podSets for kind Job", g, Set("/spec/podSets", json::array()), "spec.podSets",
       "must not be set for kind Job; derived from the template"},
      {"custom kind without podSets", pt, Erase("/spec", "podSets"), "spec.podSets",
       "required for kind PyTorchJob"},
      {"custom kind's spec a list", pt, Set("/spec/template/spec", {1, 2}), "spec.template.spec",
       "must be an object (gantry sets its suspend), got list"},
      {"custom kind's spec a string", pt, Set("/spec/template/spec", "str"), "spec.template.spec",
       "must be an object"},
      {"19 podSets", pt,
       [](json& d) {
         d["spec"]["podSets"] = json::array();
         for (int i = 0; i < 19; ++i) d["spec"]["podSets"].push_back(d["spec"]["podSets"].size());
       },
       "spec.podSets", "between 1 and 18"},
      {"duplicate podSet names", pt, Set("/spec/podSets/1/name", "master"), "spec.podSets[1].name",
       "Duplicate value"},
      {"podSet count 0", pt, Set("/spec/podSets/0/count", 0), "spec.podSets[0].count"},
      {"podSet minCount", pt, Set("/spec/podSets/0/minCount", 1), "spec.podSets[0].minCount",
       "unknown field"},
      {"podSet template without cpu", pt,
       Erase("/spec/podSets/1/template/spec/containers/0/resources/requests", "cpu"),
       "spec.podSets[1].template.spec.containers[0].resources.requests", "(missing: cpu)"},
      {"JobSet without replicatedJobs", js, Erase("/spec/template/spec", "replicatedJobs"),
       "spec.template.spec.replicatedJobs", "Required value"},
      {"JobSet bad replicatedJob name", js,
       Set("/spec/template/spec/replicatedJobs/0/name", "Driver"),
       "spec.template.spec.replicatedJobs[0].name"},
      {"JobSet duplicate names", js, Set("/spec/template/spec/replicatedJobs/1/name", "driver"),
       "spec.template.spec.replicatedJobs[1].name", "Duplicate value"},
      {"JobSet container without memory", js,
       Erase("/spec/template/spec/replicatedJobs/1/template/spec/template/spec/containers/0/"
             "resources/requests",
             "memory"),
       "spec.template.spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources."
       "requests"},
      {"manifest without queue label", m, Set("/metadata/labels", json::object()),
       "metadata.labels[kueue.x-k8s.io/queue-name]", "Required value"},
      {"manifest region with a line break", m, Set("/metadata/annotations/gantry.dev~1regions", "eu,\nus"),
       "metadata.annotations[gantry.dev/regions]", "must not contain control characters"},
      {"manifest bad priority", m, Set("/metadata/annotations/gantry.dev~1priority", "high"),
       "metadata.annotations[gantry.dev/priority]", "32-bit integer"},
      {"manifest unknown gantry annotation", m, Set("/metadata/annotations/gantry.dev~1prio", "1"),
       "metadata.annotations[gantry.dev/prio]", "unknown gantry annotation"},
      {"manifest empty region", m, Set("/metadata/annotations/gantry.dev~1regions", "eu,,us"),
       "metadata.annotations[gantry.dev/regions]", "non-empty"},
      {"manifest bad dispatch mode", m, Set("/metadata/annotations/gantry.dev~1dispatch-mode", "x"),
       "metadata.annotations[gantry.dev/dispatch-mode]", "Unsupported value"},
      {"manifest bad retention", m, Set("/metadata/annotations/gantry.dev~1finished-retention-seconds", "1h"),
       "metadata.annotations[gantry.dev/finished-retention-seconds]", "0..604800"},
      {"manifest retention over 7 days", m,
       Set("/metadata/annotations/gantry.dev~1finished-retention-seconds", "604801"),
       "metadata.annotations[gantry.dev/finished-retention-seconds]", "0..604800"},
      {"manifest container without cpu", m,
       Erase("/spec/template/spec/containers/0/resources/requests", "cpu"),
       "spec.template.spec.containers[0].resources.requests", "(missing: cpu)"},
      {"max-exec-time label not seconds", g,
       Set("/spec/template/metadata/labels/kueue.x-k8s.io~1max-exec-time-seconds", "1h"),
       "spec.template.metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]",
       "Invalid value: \"1h\": must be a whole number of seconds from 1 to 2147483647"},
      {"max-exec-time label 0", m, Set("/metadata/labels/kueue.x-k8s.io~1max-exec-time-seconds", "0"),
       "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]", "whole number of seconds"},
      {"max-exec-time label beyond int32", m,
       Set("/metadata/labels/kueue.x-k8s.io~1max-exec-time-seconds", "2147483648"),
       "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]", "whole number of seconds"},
      {"max-exec-time label a number", g,
       Set("/spec/template/metadata/labels/kueue.x-k8s.io~1max-exec-time-seconds", 60),
       "spec.template.metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]", "Invalid value: 60"},
      {"priority class not an object name", m, Set("/metadata/labels/kueue.x-k8s.io~1priority-class", "Prod_1"),
       "metadata.labels[kueue.x-k8s.io/priority-class]", "Invalid value: \"Prod_1\": "},
      {"priority class longer than a label value", g,
       Set("/spec/template/metadata/labels/kueue.x-k8s.io~1priority-class", std::string(64, 'p')),
       "spec.template.metadata.labels[kueue.x-k8s.io/priority-class]", "63"},
      {"priority class not a string", g, Set("/spec/template/metadata/labels/kueue.x-k8s.io~1priority-class", 5),
       "spec.template.metadata.labels[kueue.x-k8s.io/priority-class]",
       "Invalid value: 5: must be a string (it names a WorkloadPriorityClass)"},
      {"partial admission asked of a Job", m,
       Set("/metadata/annotations/kueue.x-k8s.io~1job-min-parallelism", "2"),
       "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]", "Forbidden: gantry dispatches"},
      {"partial admission asked in a gantry Job's template", g,
       Set("/spec/template/metadata/annotations/kueue.x-k8s.io~1job-min-parallelism", "1"),
       "spec.template.metadata.annotations[kueue.x-k8s.io/job-min-parallelism]", "Forbidden"},
      {"env value refers to a name defined twice", g,
       Set(kC0 + "/env",
           json::parse(R"j([{"name": "P", "value": "/a"}, {"name": "P", "value": "$(P):/b"}])j")),
       kC0Path + ".env[1].value", "refers to $(P), which this container's env defines 2 times"},
      {"same port key, different entries", g,
       Set(kC0 + "/ports",
           json::parse(R"([{"containerPort": 80, "name": "http"}, {"containerPort": 80, "protocol": "TCP"}])")),
       kC0Path + ".ports[1]", "Duplicate value: the same containerPort and protocol as "
       "spec.template.spec.template.spec.containers[0].ports[0]"},
      {"same host alias ip, different hostnames", m,
       Set("/spec/template/spec/hostAliases",
           json::parse(R"([{"ip": "10.0.0.1", "hostnames": ["a"]}, {"ip": "10.0.0.1", "hostnames": ["b"]}])")),
       "spec.template.spec.hostAliases[1]", "Duplicate value: the same ip"},
      // What the worker's API server would refuse of the pod template, refused before any lease.
      {"container name not DNS-1123", g, Set(kC0 + "/name", "Main"), kC0Path + ".name", "a container's name"},
      {"env name with '='", g, Set(kC0 + "/env", json::parse(R"([{"name": "1BAD=x", "value": "v"}])")),
       kC0Path + ".env[0].name", "except '='"},
      {"containerPort out of range", g, Set(kC0 + "/ports", json::parse(R"([{"containerPort": 70000}])")),
       kC0Path + ".ports[0].containerPort", "between 1 and 65535"},
      {"port name not IANA_SVC_NAME", g,
       Set(kC0 + "/ports", json::parse(R"([{"containerPort": 80, "name": "HTTP_1"}])")),
       kC0Path + ".ports[0].name", "alpha-numeric"},
      {"port name twice in a container", g,
       Set(kC0 + "/ports",
           json::parse(R"([{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}])")),
       kC0Path + ".ports[1].name", "Duplicate value: \"http\""},
      {"volumeMount of no volume", g,
       Set(kC0 + "/volumeMounts", json::parse(R"([{"name": "data", "mountPath": "/data"}])")),
       kC0Path + ".volumeMounts[0].name", "Not found: \"data\""},
      {"image with surrounding spaces", g, Set(kC0 + "/image", " busybox "), kC0Path + ".image",
       "leading or trailing whitespace"},
      {"pod label value too long", g, Set("/spec/template/spec/template/metadata/labels/app", std::string(64, 'a')),
       "spec.template.spec.template.metadata.labels[app]", "at most 63"},
      {"pod label key with a space", g, Set("/spec/template/spec/template/metadata/labels/bad key!", "v"),
       "spec.template.spec.template.metadata.labels[bad key!]", "Invalid label key"},
      {"hostPort out of range", g,
       Set(kC0 + "/ports", json::parse(R"([{"containerPort": 80, "hostPort": 70000}])")),
       kC0Path + ".ports[0].hostPort", "between 1 and 65535"},
      {"protocol in lower case", g, Set(kC0 + "/ports", json::parse(R"([{"containerPort": 80, "protocol": "tcp"}])")),
       kC0Path + ".ports[0].protocol", "Unsupported value"},
      {"a named port without containerPort", g, Set(kC0 + "/ports", json::parse(R"([{"name": "http"}])")),
       kC0Path + ".ports[0].containerPort", "Required value"},
      {"containerPort a string", g, Set(kC0 + "/ports", json::parse(R"([{"containerPort": "8080"}])")),
       kC0Path + ".ports[0].containerPort", "must be an integer"},
      {"imagePullPolicy unknown", g, Set(kC0 + "/imagePullPolicy", "Sometimes"), kC0Path + ".imagePullPolicy",
       "Unsupported value"},
      {"env with value and valueFrom", g,
       Set(kC0 + "/env", json::parse(R"([{"name": "A", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}])")),
       kC0Path + ".env[0].valueFrom", "may not be specified"},
      {"volumeMount without mountPath", g,
       [](json& d) {
         d[json::json_pointer(kC0 + "/volumeMounts")] = json::parse(R"([{"name": "data"}])");
         d[json::json_pointer("/spec/template/spec/template/spec/volumes")] =
             json::parse(R"([{"name": "data", "emptyDir": {}}])");
       },
       kC0Path + ".volumeMounts[0].mountPath", "Required value"},
      {"two volumes of one name", g,
       Set("/spec/template/spec/template/spec/volumes",
           json::parse(R"([{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}])")),
       "spec.template.spec.template.spec.volumes[1].name", "Duplicate value"},
      {"volume name not DNS-1123", g,
       Set("/spec/template/spec/template/spec/volumes", json::parse(R"([{"name": "Bad_Vol", "emptyDir": {}}])")),
       "spec.template.spec.template.spec.volumes[0].name", "a volume's name"},
      {"nodeSelector key with a space", g, Set("/spec/template/spec/template/spec/nodeSelector/bad key!", "x"),
       "spec.template.spec.template.spec.nodeSelector[bad key!]", "Invalid label key"},
      {"serviceAccountName not DNS-1123", g, Set("/spec/template/spec/template/spec/serviceAccountName", "Bad_SA"),
       "spec.template.spec.template.spec.serviceAccountName", "Invalid value"},
      {"annotation value an integer", g, Set("/spec/template/spec/template/metadata/annotations/a", 5),
       "spec.template.spec.template.metadata.annotations[a]", "must be a string"},
      {"the Job template's label an integer", g, Set("/spec/template/metadata/labels/x", 1),
       "spec.template.metadata.labels[x]", "must be a string, got integer"},
      {"the Job template's annotation a list", g, Set("/spec/template/metadata/annotations/y", json::array({"a"})),
       "spec.template.metadata.annotations[y]", "must be a string, got list"},
      {"env value a number", g, Set(kC0 + "/env", json::parse(R"([{"name": "A", "value": 5}])")),
       kC0Path + ".env[0].value", "must be a string, got integer"},
      {"command a string", g, Set(kC0 + "/command", "sleep 5"), kC0Path + ".command",
       "must be a list of strings, got string"},
      {"an arg a number", g, Set(kC0 + "/args", json::array({"--steps", 100})), kC0Path + ".args[1]",
       "must be a string, got integer"},
      {"an arg null (`- ` in YAML): the Workload copy's schema refuses it", g,
       Set(kC0 + "/args", json::array({"--steps", nullptr})), kC0Path + ".args[1]", "must be a string, got null"},
      {"pod annotations over 256 KiB", g,
       Set("/spec/template/spec/template/metadata/annotations/notes", std::string(300 << 10, 'x')),
       "spec.template.spec.template.metadata.annotations", "Too long"},
      {"manifest unknown top-level field", m, Set("/extra", 1), "extra", "unknown field"},
      {"manifest namespace differs from URL", m, [](json&) {}, "metadata.namespace", "URL",
       "team-a"},
      {"JobSet manifest v1alpha1", m,
       [](json& d) {
         d["apiVersion"] = "jobset.x-k8s.io/v1alpha1";
         d["kind"] = "JobSet";
       },
       "apiVersion", "Unsupported value"},
  };
  STATIC_REQUIRE(sizeof(cases) / sizeof(cases[0]) >= 30);
  for (const BadCase& c : cases) {
    INFO(c.name);
    json doc = Base(c.base);
    c.mutate(doc);
    auto parsed = ParseJobJson(doc, c.path_namespace);
    REQUIRE(std::holds_alternative<DocumentError>(parsed));
    const DocumentError& e = std::get<DocumentError>(parsed);
    CHECK(e.code == 422);
    REQUIRE_FALSE(e.causes.empty());
    INFO(e.message);
    bool found = false;
    for (const FieldError& cause : e.causes) {
      if (cause.field == c.want_field &&
          cause.message.find(c.want_message_part) != std::string::npos) {
        found = true;
      }
    }
    CHECK(found);
    CHECK(e.causes.front().field == c.want_field);  // the expected cause is the first one
  }
}

TEST_CASE("a pod template's ports, mounts, env and labels as the API server takes them are accepted", "[job][errors]") {
  json doc = Base(testing::kGantryJobYaml);
  doc[json::json_pointer(kC0 + "/ports")] =
      json::parse(R"([{"containerPort": 8080, "name": "http-1", "protocol": "TCP"},
                      {"containerPort": 9090, "name": "metrics", "hostPort": 0},
                      {"containerPort": 9090, "protocol": "UDP", "hostPort": 9090}])");
  doc[json::json_pointer(kC0 + "/env")] = json::parse(R"([{"name": "1GOOD.name-x", "value": "v"}])");
  doc[json::json_pointer(kC0 + "/volumeMounts")] =
      json::parse(R"([{"name": "data", "mountPath": "/data"}, {"name": "data", "mountPath": "/cache", "subPath": "c"}])");
  doc[json::json_pointer(kC0 + "/imagePullPolicy")] = "IfNotPresent";
  doc[json::json_pointer("/spec/template/spec/template/spec/nodeSelector")] =
      json::parse(R"({"kubernetes.io/arch": "amd64", "example.com/pool": ""})");
  doc[json::json_pointer("/spec/template/spec/template/spec/serviceAccountName")] = "trainer.sa";
  doc[json::json_pointer("/spec/template/spec/template/spec/volumes")] =
      json::parse(R"([{"name": "data", "emptyDir": {}}])");
  doc[json::json_pointer("/spec/template/spec/template/metadata/labels/example.com~1tier")] = "gpu_A-1.x";
  doc[json::json_pointer("/spec/template/spec/template/metadata/annotations/notes")] = std::string(200 << 10, 'x');
  doc[json::json_pointer("/spec/template/spec/template/metadata/annotations/Example.COM~1owner")] = "ml";
  doc[json::json_pointer("/spec/template/spec/template/metadata/labels/team")] = nullptr;  // `team:` in YAML
  doc[json::json_pointer("/spec/template/metadata/labels/app")] = "trainer";  // the Job's own
  doc[json::json_pointer("/spec/template/metadata/annotations/note")] = "nightly";
  doc[json::json_pointer(kC0 + "/command")] = json::parse(R"(["python", "train.py"])");
  doc[json::json_pointer(kC0 + "/args")] = json::parse(R"(["--steps", "100"])");
  // A name repeated in another container (the API server's warning), and an entry repeated whole.
  doc[json::json_pointer("/spec/template/spec/template/spec/initContainers")] = json::parse(
      R"([{"name": "proxy", "image": "proxy:1", "restartPolicy": "Always",
           "ports": [{"containerPort": 9090, "name": "metrics"}, {"containerPort": 9090, "name": "metrics"}]}])");
  auto parsed = ParseJobJson(doc, std::nullopt);
  if (auto* e = std::get_if<DocumentError>(&parsed)) FAIL(e->message);
}

TEST_CASE("ParseJobDocument refuses unparseable bodies (400)", "[job][errors]") {
  struct RawCase {
    const char* name;
    const char* body;
    DocumentFormat format;
    const char* want_message_part;
  };
  const RawCase cases[] = {
      {"JSON syntax error", "{\"apiVersion\": }", DocumentFormat::kJson, "line 1, column 16"},
      {"JSON top-level array", "[1, 2]", DocumentFormat::kJson, "must be an object, got list"},
      {"JSON string", "\"job\"", DocumentFormat::kJson, "must be an object, got string"},
      {"JSON duplicate key", R"({"kind": "Job", "kind": "Job"})", DocumentFormat::kJson,
       "duplicate key \"kind\""},
      {"empty JSON body", "", DocumentFormat::kJson, "invalid JSON"},
      {"YAML syntax error", "apiVersion: gantry.dev/v1\nkind: Job\nspec: [a, b\n",
       DocumentFormat::kYaml, "line 4"},
      {"YAML bad indentation", "metadata:\n  name: a\n name: b\n", DocumentFormat::kYaml, "line 3"},
      {"multi-document YAML", "kind: Job\n---\nkind: Job\n", DocumentFormat::kYaml,
       "exactly one YAML document, got 2"},
      {"YAML top-level list", "- a\n- b\n", DocumentFormat::kYaml, "got list"},
      {"YAML scalar", "hello\n", DocumentFormat::kYaml, "got string"},
      {"empty YAML body", "", DocumentFormat::kYaml, "no document"},
      {"YAML duplicate key", "kind: Job\nkind: JobSet\n", DocumentFormat::kYaml,
       "line 2, column 1: duplicate key"},
      {"YAML NaN", "spec:\n  priority: .nan\n", DocumentFormat::kYaml, "line 2, column 13"},
  };
  const std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  const std::string deep_yaml = std::string(100000, '[') + std::string(100000, ']');
  for (const RawCase& c :
       {RawCase{"deep JSON", deep_json.c_str(), DocumentFormat::kJson, "deep"},
        RawCase{"deep YAML", deep_yaml.c_str(), DocumentFormat::kYaml, "deep"}}) {
    INFO(c.name);
    auto parsed = ParseJobDocument(c.body, c.format, std::nullopt);
    REQUIRE(std::holds_alternative<DocumentError>(parsed));
    CHECK(std::get<DocumentError>(parsed).code == 400);
  }
  for (const RawCase& c : cases) {
    INFO(c.name);
    auto parsed = ParseJobDocument(c.body, c.format, std::nullopt);
    REQUIRE(std::holds_alternative<DocumentError>(parsed));
    const DocumentError& e = std::get<DocumentError>(parsed);
    CHECK(e.code == 400);
    CHECK_THAT(e.message, Catch::Contains(c.want_message_part));
  }
}

TEST_CASE("Every cause is reported, and the message summarizes them", "[job][errors]") {
  json doc = testing::GantryJobJson();
  doc["metadata"].erase("name");
  doc["spec"]["queue"] = "Q";
  doc["spec"]["priority"] = "x";
  doc["spec"]["dispatch"]["stepSize"] = 0;
  auto parsed = ParseJobJson(doc, std::nullopt);
  REQUIRE(std::holds_alternative<DocumentError>(parsed));
  const DocumentError& e = std::get<DocumentError>(parsed);
  REQUIRE(e.causes.size() == 4);
  CHECK(e.causes[0].field == "metadata.name");
  CHECK(e.causes[1].field == "spec.queue");
  CHECK(e.causes[2].field == "spec.priority");
  CHECK(e.causes[3].field == "spec.dispatch.stepSize");
  CHECK_THAT(e.message,
             Catch::StartsWith("job document is invalid: metadata.name: Required value"));
}

}  // namespace
}  // namespace gantry
