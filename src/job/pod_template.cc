#include "pod_template.h"

#include <fmt/format.h>

#include <limits>
#include <set>

#include "gantry/job/quantity.h"
#include "pod_list_checks.h"

namespace gantry::job_internal {
namespace {

using Resources = std::map<std::string, int64_t>;

// Kubernetes' resource classes (k8s.io/kubernetes pkg/apis/core/helper):
// native names have no domain or a kubernetes.io one; every other name is
// an extended resource, counted in whole units.
bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}
bool IsExtendedResource(std::string_view name) { return !IsNativeResource(name); }
// What Kubernetes never overcommits (IsOvercommitAllowed is false):
// extended resources and huge pages. A container's request of one needs a
// limit, and the two must be equal.
bool OvercommitAllowed(std::string_view name) {
  return IsNativeResource(name) && !name.starts_with("hugepages-");
}

// Adds b into a; false on overflow.
bool AddInto(Resources& a, const Resources& b) {
  for (const auto& [name, milli] : b) {
    int64_t& sum = a[name];
    if (milli > std::numeric_limits<int64_t>::max() - sum) return false;
    sum += milli;
  }
  return true;
}

void MaxInto(Resources& a, const Resources& b) {
  for (const auto& [name, milli] : b) a[name] = std::max(a[name], milli);
}

// What a container may name without a domain (IsStandardContainerResourceName).
bool IsStandardContainerResource(std::string_view name) {
  return name == "cpu" || name == "memory" || name == "ephemeral-storage" ||
         name.starts_with("hugepages-");
}

// A map of resource name -> quantity at obj[key]; pod_names: a container's
// requests or limits in a template the API server validates as pods (see
// CheckPodTemplate), where fewer names are known. Names that are refused
// land in bad (reported already), so they do not count as missing.
Resources ReadResourceMap(const json& obj, std::string_view key, std::string_view path,
                          bool pod_names, std::set<std::string>& bad, FieldErrors& errors) {
  Resources out;
  const json* map = ReadObject(obj, key, path, errors);
  if (map == nullptr) return out;
  std::string field = Child(path, key);
  for (const auto& [name, value] : map->items()) {
    Result<int64_t> milli = ParseQuantityMilli(value);
    if (pod_names && name.find('/') == std::string::npos && !IsStandardContainerResource(name)) {
      errors.Add(Child(field, name),
                 "must be a standard resource for containers (cpu, memory, ephemeral-storage, "
                 "hugepages-<size>) or have a domain (nvidia.com/gpu)");
      bad.insert(name);
    } else if (!milli.ok()) {
      errors.Add(Child(field, name), milli.status().message());
      bad.insert(name);
    } else if (IsExtendedResource(name) && *milli % 1000 != 0) {
      errors.Add(Child(field, name), "extended resources must be whole numbers");
      bad.insert(name);
    } else {
      out[name] = *milli;
    }
  }
  return out;
}

// The effective requests of one container (limits fill missing requests).
Resources ContainerRequests(const json& container, std::string_view path, bool require_cpu_memory,
                            bool pods_of_job, FieldErrors& errors) {
  std::string rpath = Child(path, "resources");
  const json* resources = ReadObject(container, "resources", path, errors);
  static const json kEmpty = json::object();
  if (resources == nullptr) resources = &kEmpty;
  std::set<std::string> bad;
  Resources requests = ReadResourceMap(*resources, "requests", rpath, pods_of_job, bad, errors);
  Resources limits = ReadResourceMap(*resources, "limits", rpath, pods_of_job, bad, errors);
  std::string req_path = Child(rpath, "requests");
  for (const auto& [name, request] : requests) {
    if (!pods_of_job || OvercommitAllowed(name) || limits.contains(name) || bad.contains(name)) continue;
    errors.Add(Child(Child(rpath, "limits"), name),
               fmt::format("Required value: Kubernetes does not overcommit {}: its request needs a "
                           "limit, equal to it",
                           name));
  }
  for (const auto& [name, limit] : limits) {
    auto it = requests.find(name);
    if (it == requests.end()) {
      if (!bad.contains(name)) requests[name] = limit;  // Kubernetes defaults the request so
    } else if ((pods_of_job ? !OvercommitAllowed(name) : IsExtendedResource(name)) &&
               it->second != limit) {
      errors.Add(Child(req_path, name),
                 fmt::format("must equal the {} limit: Kubernetes does not overcommit it", name));
    } else if (it->second > limit) {
      errors.Add(Child(req_path, name),
                 fmt::format("must be less than or equal to the {} limit", name));
    }
  }
  if (require_cpu_memory) {
    std::string missing;
    for (const char* name : {"cpu", "memory"}) {
      if (requests.contains(name) || bad.contains(name)) continue;
      missing += missing.empty() ? name : fmt::format(", {}", name);
    }
    if (!missing.empty()) {
      errors.Add(req_path,
                 fmt::format("cpu and memory requests are required (missing: {})", missing));
    }
  }
  return requests;
}

// One container's requests, and whether it is a sidecar: an init container
// with restartPolicy Always, which starts before the next init containers
// and runs beside the regular ones.
struct ContainerDemand {
  Resources requests;
  bool sidecar = false;
};

// The containers at spec[key], one entry per container object, in order.
std::vector<ContainerDemand> ReadContainers(const json& spec, std::string_view key, std::string_view path,
                                      bool regular, bool pods_of_job,
                                      std::map<std::string, std::string>& names, FieldErrors& errors) {
  std::vector<ContainerDemand> out;
  std::string field = Child(path, key);
  const json* list = ReadArray(spec, key, path, errors);
  if (regular && (list == nullptr || list->empty())) {
    if (list != nullptr || Member(spec, key) == nullptr) {
      errors.Add(field, "Required value: at least one container");
    }
    return out;
  }
  if (list == nullptr) return out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& c = (*list)[i];
    std::string cpath = Index(field, i);
    if (!c.is_object()) {
      errors.Add(cpath, fmt::format("must be an object, got {}", TypeName(c)));
      continue;
    }
    std::optional<std::string> name = ReadString(c, "name", cpath, errors);
    if (!name && Member(c, "name") == nullptr) errors.Add(Child(cpath, "name"), "Required value");
    if (name && name->empty()) errors.Add(Child(cpath, "name"), "must not be empty");
    if (name && !name->empty()) {
      auto [it, inserted] = names.emplace(*name, cpath);
      if (!inserted) {
        errors.Add(Child(cpath, "name"),
                   fmt::format("Duplicate value: \"{}\" (same as {})", *name, it->second));
      }
    }
    // Kubernetes requires an image of every container of a Job's pods (a
    // generic kind's controller may fill one in).
    if (pods_of_job) {
      const json* image = Member(c, "image");
      if (image == nullptr || !image->is_string() || image->get_ref<const std::string&>().empty()) {
        errors.Add(Child(cpath, "image"), image == nullptr ? "Required value" : "must be a non-empty string");
      }
    }
    const json* restart = Member(c, "restartPolicy");
    const bool sidecar = !regular && restart != nullptr && restart->is_string() && *restart == "Always";
    out.push_back({ContainerRequests(c, cpath, regular, pods_of_job, errors), sidecar});
  }
  return out;
}

// Kueue's topology-aware scheduling asks, per pod set, with annotations of
// the pod template (kueue.x-k8s.io/podset-required-topology, -preferred-,
// -slice-size, ...), which Kueue turns into the Workload's
// podSets[].topologyRequest. gantry writes no topologyRequest yet: its copy
// would be admitted without the topology the job asked for, or finished
// OutOfSync by a Kueue that compares it. Refused, rather than run elsewise.
void RefuseTopologyRequest(const json& pod_template, std::string_view path, FieldErrors& errors) {
  const json* metadata = Member(pod_template, "metadata");
  const json* annotations = metadata != nullptr && metadata->is_object() ? Member(*metadata, "annotations") : nullptr;
  if (annotations == nullptr || !annotations->is_object()) return;
  for (const auto& [key, value] : annotations->items()) {
    if (!key.starts_with("kueue.x-k8s.io/podset-")) continue;
    errors.Add(fmt::format("{}.metadata.annotations[{}]", path, key),
               "Unsupported value: gantry does not carry Kueue's topology requests into its Workload copies yet; "
               "the job would run without the topology it asks for");
  }
}

}  // namespace

std::map<std::string, int64_t> CheckPodTemplate(const json& pod_template, std::string_view path,
                                                bool pods_of_job, FieldErrors& errors) {
  if (!pod_template.is_object()) {
    errors.Add(std::string(path), fmt::format("must be an object (a PodTemplateSpec), got {}",
                                              TypeName(pod_template)));
    return {};
  }
  RefuseTopologyRequest(pod_template, path, errors);
  const json* spec = RequireObject(pod_template, "spec", path, errors);
  if (spec == nullptr) return {};
  std::string spath = Child(path, "spec");
  std::map<std::string, std::string> names;
  // The pod's effective requests as Kubernetes (PodRequests) and Kueue count
  // them: the regular containers and every sidecar together, or, if more,
  // an init container with the sidecars started before it.
  Resources sum;
  bool overflow = false;
  for (const ContainerDemand& c : ReadContainers(*spec, "containers", spath, true, pods_of_job, names, errors)) {
    overflow = overflow || !AddInto(sum, c.requests);
  }
  Resources init_max;
  Resources sidecars;
  for (const ContainerDemand& c :
       ReadContainers(*spec, "initContainers", spath, false, pods_of_job, names, errors)) {
    if (c.sidecar) {
      overflow = overflow || !AddInto(sum, c.requests) || !AddInto(sidecars, c.requests);
      MaxInto(init_max, sidecars);
    } else {
      Resources during = c.requests;
      overflow = overflow || !AddInto(during, sidecars);
      MaxInto(init_max, during);
    }
  }
  MaxInto(sum, init_max);
  if (pods_of_job) {
    CheckRepeatedListKeys(*spec, spath, errors);
    CheckPodFields(pod_template, path, errors);
  }
  std::set<std::string> bad;
  overflow = overflow || !AddInto(sum, ReadResourceMap(*spec, "overhead", spath, false, bad, errors));
  if (overflow) errors.Add(Child(spath, "containers"), "the summed requests overflow");
  return sum;
}

}  // namespace gantry::job_internal
