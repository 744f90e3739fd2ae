// The API resources a simulated cluster serves, and their discovery
// documents (/api, /apis, /apis/<group>, /apis/<group>/<version>).
//
// Thread-safety: immutable tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::sim {

struct ResourceInfo {
  std::string group;                  // "" for core
  std::vector<std::string> versions;  // served; first is preferred (storage)
  std::string plural;                 // "workloads": also the storage key
  std::string singular;
  std::string kind;
  bool namespaced = true;
  bool writable = true;               // create/delete/patch allowed
  bool has_status = false;            // a /status subresource
  std::vector<std::string> short_names;
};

const std::vector<ResourceInfo>& AllResources();
// Looks up by group, version and plural; nullptr when not served.
const ResourceInfo* FindResource(std::string_view group, std::string_view version, std::string_view plural);
const ResourceInfo& ResourceByPlural(std::string_view plural);  // REQUIRES: served
// Whether the simulated Kueue runs objects of this resource (Jobs, JobSets,
// TrainJobs): adopts them into prebuilt Workloads, starts and finishes them.
bool IsRunnable(std::string_view plural);

nlohmann::json VersionDocument();
nlohmann::json CoreApiVersions();
nlohmann::json CoreResourceList();
nlohmann::json ApiGroupList();
// nullptr JSON when the group or version is not served.
nlohmann::json ApiGroup(std::string_view group);
nlohmann::json ApiResourceList(std::string_view group, std::string_view version);

}  // namespace gantry::sim
