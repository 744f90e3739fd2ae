#include "resources.h"

#include <algorithm>
#include <cassert>

namespace gantry::sim {
namespace {

using nlohmann::json;

const std::vector<std::string> kReadVerbs = {"get", "list", "watch"};
const std::vector<std::string> kAllVerbs = {"create", "delete", "get", "list", "patch", "watch"};

std::vector<std::string> Groups() {
  std::vector<std::string> out;
  for (const ResourceInfo& r : AllResources()) {
    if (!r.group.empty() && std::find(out.begin(), out.end(), r.group) == out.end()) out.push_back(r.group);
  }
  return out;
}

std::vector<std::string> VersionsOf(std::string_view group) {
  std::vector<std::string> out;
  for (const ResourceInfo& r : AllResources()) {
    if (r.group != group) continue;
    for (const std::string& v : r.versions) {
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
  }
  return out;
}

json GroupJson(const std::string& group) {
  json versions = json::array();
  for (const std::string& v : VersionsOf(group)) versions.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions.at(0)}};
}

}  // namespace

const std::vector<ResourceInfo>& AllResources() {
  static const std::vector<ResourceInfo> kResources = {
      {"kueue.x-k8s.io", {"v1beta2", "v1beta1"}, "workloads", "workload", "Workload", true, true, true, {"wl"}},
      {"kueue.x-k8s.io", {"v1beta2", "v1beta1"}, "clusterqueues", "clusterqueue", "ClusterQueue", false, false,
       true, {"cq"}},
      {"kueue.x-k8s.io", {"v1beta2", "v1beta1"}, "localqueues", "localqueue", "LocalQueue", true, false, true,
       {"queue", "queues", "lq"}},
      {"kueue.x-k8s.io", {"v1beta2", "v1beta1"}, "resourceflavors", "resourceflavor", "ResourceFlavor", false,
       false, false, {"flavor", "flavors", "rf"}},
      // Written by an operator (or a test), read by gantry's probes.
      {"kueue.x-k8s.io", {"v1beta2", "v1beta1"}, "workloadpriorityclasses", "workloadpriorityclass",
       "WorkloadPriorityClass", false, true, false, {"wpc"}},
      {"batch", {"v1"}, "jobs", "job", "Job", true, true, true, {}},
      {"jobset.x-k8s.io", {"v1alpha2"}, "jobsets", "jobset", "JobSet", true, true, true, {}},
      // A kind with no adapter in gantry (its generic adapter runs it): Kubeflow
      // Trainer's TrainJob, suspended through spec.suspend, done through its
      // Complete or Failed condition.
      {"trainer.kubeflow.org", {"v1alpha1"}, "trainjobs", "trainjob", "TrainJob", true, true, true, {}},
  };
  return kResources;
}

bool IsRunnable(std::string_view plural) { return plural == "jobs" || plural == "jobsets" || plural == "trainjobs"; }

const ResourceInfo* FindResource(std::string_view group, std::string_view version, std::string_view plural) {
  for (const ResourceInfo& r : AllResources()) {
    if (r.group == group && r.plural == plural &&
        std::find(r.versions.begin(), r.versions.end(), version) != r.versions.end()) {
      return &r;
    }
  }
  return nullptr;
}

const ResourceInfo& ResourceByPlural(std::string_view plural) {
  for (const ResourceInfo& r : AllResources()) {
    if (r.plural == plural) return r;
  }
  assert(false && "unknown resource");
  return AllResources().front();
}

json VersionDocument() {
  return {{"major", "1"},           {"minor", "31"},          {"gitVersion", "v1.31.0-gantry-sim"},
          {"gitCommit", "0000000"}, {"gitTreeState", "clean"}, {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "go1.22"},  {"compiler", "gc"},        {"platform", "linux/amd64"}};
}

json CoreApiVersions() {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs", {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1"}}}}};
}

json CoreResourceList() {
  json ns = {{"name", "namespaces"}, {"singularName", "namespace"}, {"namespaced", false}, {"kind", "Namespace"},
             {"verbs", kReadVerbs}, {"shortNames", {"ns"}}};
  return {{"kind", "APIResourceList"}, {"groupVersion", "v1"}, {"resources", json::array({ns})}};
}

json ApiGroupList() {
  json groups = json::array();
  for (const std::string& g : Groups()) groups.push_back(GroupJson(g));
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

json ApiGroup(std::string_view group) {
  auto groups = Groups();
  if (std::find(groups.begin(), groups.end(), group) == groups.end()) return nullptr;
  json g = GroupJson(std::string(group));
  g["kind"] = "APIGroup";
  g["apiVersion"] = "v1";
  return g;
}

json ApiResourceList(std::string_view group, std::string_view version) {
  json list = json::array();
  for (const ResourceInfo& r : AllResources()) {
    if (r.group != group || std::find(r.versions.begin(), r.versions.end(), version) == r.versions.end()) continue;
    json entry = {{"name", r.plural},   {"singularName", r.singular}, {"namespaced", r.namespaced},
                  {"kind", r.kind},     {"verbs", r.writable ? kAllVerbs : kReadVerbs},
                  {"categories", json::array({"all"})}};
    if (!r.short_names.empty()) entry["shortNames"] = r.short_names;
    list.push_back(entry);
    if (r.has_status) {
      list.push_back({{"name", r.plural + "/status"}, {"singularName", ""}, {"namespaced", r.namespaced},
                      {"kind", r.kind}, {"verbs", r.writable ? json{"get", "patch"} : json{"get"}}});
    }
  }
  if (list.empty()) return nullptr;
  return {{"kind", "APIResourceList"}, {"apiVersion", "v1"},
          {"groupVersion", std::string(group) + "/" + std::string(version)}, {"resources", list}};
}

}  // namespace gantry::sim
