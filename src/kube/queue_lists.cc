// Reading a worker's Kueue queues: the ClusterQueue list summed (what
// `gantry clusters` and the metrics show) and described one by one, and
// the LocalQueue list as a map to ClusterQueues, and the
// WorkloadPriorityClasses (placement/cluster_queues.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "gantry/common/cut_text.h"
#include "gantry/common/json_path.h"
#include "gantry/job/quantity.h"
#include "gantry/kube/kube_prober.h"

namespace gantry::kube {

namespace {

using nlohmann::json;

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kMaxQuantityMilli : sum;
}

// The Active condition (status.conditions), or kUnknown without one.
void ReadActivity(const json& cq, placement::ClusterQueueInfo& info) {
  for (const json& c : cq.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") != "Active") continue;
    const std::string status = c.value("status", "");
    if (status == "True") {
      info.activity = placement::QueueActivity::kActive;
    } else if (status == "False") {
      info.activity = placement::QueueActivity::kInactive;
      const std::string reason = c.value("reason", ""), message = c.value("message", "");
      info.inactive_message = CleanText(reason.empty() || message.empty() ? reason + message : reason + ": " + message);
    }
  }
}

// One ClusterQueue into its description and the cluster's sums; an error
// names the ClusterQueue and the field.
Status ReadClusterQueue(const json& cq, inventory::CapacityReading& reading, placement::ClusterQueueInfo& info) {
  info.name = cq.value("/metadata/name"_json_pointer, "");
  // v1beta2 calls it cohortName, v1beta1 cohort.
  info.cohort = cq.value("/spec/cohortName"_json_pointer, cq.value("/spec/cohort"_json_pointer, ""));
  ReadActivity(cq, info);
  auto read = [&](const json& res, const char* field) -> Result<int64_t> {
    Result<int64_t> q = ParseQuantityMilliSaturating(res.value(field, json("0")));
    if (q.ok()) return q;
    return Status::Invalid(
        fmt::format("ClusterQueue {}: {} of {}: {}", info.name, field, res.value("name", "?"), q.status().message()));
  };
  // Sums saturate: ten ClusterQueues of 1Pi memory (bytes x 1000) are more
  // than int64 holds, and a quota that large is as good as unlimited.
  for (const json& group : cq.value("/spec/resourceGroups"_json_pointer, json::array())) {
    for (const json& covered : group.value("coveredResources", json::array())) {
      info.resources[covered.get<std::string>()];  // covered, even by no flavor
    }
    for (const json& flavor : group.value("flavors", json::array())) {
      for (const json& res : flavor.value("resources", json::array())) {
        Result<int64_t> q = read(res, "nominalQuota");
        if (!q.ok()) return q.status();
        const std::string name = res.value("name", "");
        placement::FlavorQuota fq{flavor.value("name", ""), *q, std::nullopt, 0};
        if (res.contains("borrowingLimit")) {
          Result<int64_t> limit = read(res, "borrowingLimit");
          if (!limit.ok()) return limit.status();
          fq.borrowing_limit_milli = *limit;
        }
        info.resources[name].push_back(std::move(fq));
        int64_t& nominal = reading.quota[name].nominal_milli;
        nominal = SaturatingAdd(nominal, *q);
      }
    }
  }
  for (const json& flavor : cq.value("/status/flavorsReservation"_json_pointer, json::array())) {
    const std::string flavor_name = flavor.value("name", "");
    for (const json& res : flavor.value("resources", json::array())) {
      Result<int64_t> q = read(res, "total");
      if (!q.ok()) return q.status();
      const std::string name = res.value("name", "");
      int64_t& reserved = reading.quota[name].reserved_milli;
      reserved = SaturatingAdd(reserved, *q);
      auto it = info.resources.find(name);
      if (it == info.resources.end()) continue;  // a status older than the spec
      for (placement::FlavorQuota& fq : it->second) {
        if (fq.flavor == flavor_name) fq.reserved_milli = SaturatingAdd(fq.reserved_milli, *q);
      }
    }
  }
  return Status::Ok();
}

bool IsList(const json& list) { return list.is_object() && list.contains("items") && list["items"].is_array(); }

// The LocalQueue list into `queues`; an error leaves the map unknown.
void ReadLocalQueues(const json* list, std::string error, placement::ClusterQueues& queues) {
  if (!list) {
    queues.local_queues_error = std::move(error);
    return;
  }
  if (!IsList(*list)) {
    queues.local_queues_error = "the LocalQueue list is not a Kubernetes list";
    return;
  }
  try {
    for (const json& lq : (*list)["items"]) {
      queues.local_queues[lq.value("/metadata/namespace"_json_pointer, "") + "/" +
                          lq.value("/metadata/name"_json_pointer, "")] =
          lq.value("/spec/clusterQueue"_json_pointer, "");
    }
  } catch (const json::exception& e) {
    queues.local_queues.clear();
    queues.local_queues_error = std::string("the LocalQueue list: ") + e.what();
    return;
  }
  queues.local_queues_known = true;
}

}  // namespace

inventory::CapacityReading ParseClusterQueues(const json& list, const json* local_queues, std::string lq_error) {
  if (!IsList(list)) return inventory::CapacityReading::Unreadable("the ClusterQueue list is not a Kubernetes list");
  inventory::CapacityReading reading;
  auto queues = std::make_shared<placement::ClusterQueues>();
  int64_t pending = 0;
  try {
    for (const json& cq : list["items"]) {
      placement::ClusterQueueInfo info;
      int64_t cq_pending = 0;
      try {
        if (Status s = ReadClusterQueue(cq, reading, info); !s.ok()) {
          return inventory::CapacityReading::Unreadable(s.message());
        }
        cq_pending = cq.value("/status/pendingWorkloads"_json_pointer, int64_t{0});
      } catch (const json::exception& e) {
        // Named, so that the operator knows which object to look at.
        return inventory::CapacityReading::Unreadable(
            fmt::format("ClusterQueue {}: a field of an unexpected type ({})",
                        CleanText(JsonStringAt(cq, {"metadata", "name"})), e.what()));
      }
      reading.cluster_queues.push_back(info.name);
      queues->by_name[info.name] = std::move(info);
      pending = SaturatingAdd(pending, std::max<int64_t>(0, cq_pending));
    }
  } catch (const json::exception& e) {
    return inventory::CapacityReading::Unreadable(std::string("the ClusterQueue list: ") + e.what());
  }
  reading.pending_workloads =
      static_cast<int32_t>(std::min<int64_t>(pending, std::numeric_limits<int32_t>::max()));
  ReadLocalQueues(local_queues, std::move(lq_error), *queues);
  queues->stamp = placement::QueuesStamp(*queues);
  reading.queues = std::move(queues);
  return reading;
}

namespace {

// Whether a failed list may answer otherwise the next time: no answer, or
// an answer that says so (429, 5xx).
bool Passing(const Result<KubeReply>& answer) {
  return !answer.ok() || answer->status == 429 || answer->status >= 500;
}

// The WorkloadPriorityClass list into `classes`, or why it cannot be read.
std::string ReadPriorityClasses(const Result<KubeReply>& answer, std::map<std::string, int32_t>& classes) {
  if (std::string failed = ListFailure(answer, "WorkloadPriorityClasses", "workloadpriorityclasses");
      !failed.empty()) {
    return failed;
  }
  const KubeReply& reply = *answer;
  if (!IsList(reply.body)) return "the WorkloadPriorityClass list is not a Kubernetes list";
  try {
    for (const json& item : reply.body["items"]) {
      const json* meta = item.is_object() && item.contains("metadata") ? &item["metadata"] : nullptr;
      const json name = meta && meta->is_object() ? meta->value("name", json()) : json();
      const json value = item.is_object() ? item.value("value", json()) : json();
      const bool int32 = value.is_number_integer() &&
                         value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                         value.get<int64_t>() <= std::numeric_limits<int32_t>::max();
      if (!name.is_string() || !int32) {
        return fmt::format("the WorkloadPriorityClass list: item {} has no name or no int32 value",
                           name.is_null() ? "?" : name.dump());
      }
      classes[name.get<std::string>()] = static_cast<int32_t>(value.get<int64_t>());
    }
  } catch (const json::exception& e) {  // a value past int64 read as unsigned, say
    return std::string("the WorkloadPriorityClass list: ") + e.what();
  }
  return "";
}

}  // namespace

std::optional<std::map<std::string, int32_t>> AddPriorityClasses(inventory::CapacityReading& reading,
                                                                 const Result<KubeReply>& priority_classes,
                                                                 const std::map<std::string, int32_t>* last_good) {
  if (!reading.queues) return std::nullopt;
  auto queues = std::make_shared<placement::ClusterQueues>(*reading.queues);
  std::map<std::string, int32_t> classes;
  std::string error = ReadPriorityClasses(priority_classes, classes);
  std::optional<std::map<std::string, int32_t>> read;
  if (error.empty()) {
    read = classes;
  } else if (last_good && Passing(priority_classes)) {
    classes = *last_good;  // as the last list gave them
    error.clear();
  } else {
    classes.clear();
  }
  queues->priority_classes = std::move(classes);
  queues->priority_classes_error = std::move(error);
  queues->priority_classes_known = queues->priority_classes_error.empty();
  queues->stamp = placement::QueuesStamp(*queues);
  reading.queues = std::move(queues);
  return read;
}

}  // namespace gantry::kube
