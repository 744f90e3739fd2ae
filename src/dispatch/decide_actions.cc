// The remote actions a plan carries (decide.h): creates of Workload copies
// and real jobs, deletes, a gate's opening, a look-up of an unseen object.
#include <fmt/format.h>

#include "gantry/dispatch/decide.h"
#include "gantry/dispatch/remote_objects.h"
#include "gantry/job/kueue_labels.h"

namespace gantry::dispatch {

std::optional<int32_t> PriorityClassValue(const DecideInput& in, const std::string& cluster) {
  return PriorityClassValue(in, cluster, WorkloadPriorityClass(in.spec->template_object));
}

std::optional<int32_t> PriorityClassValue(const DecideInput& in, const std::string& cluster,
                                          const std::string& name) {
  if (name.empty()) return std::nullopt;
  auto f = in.clusters->find(cluster);
  if (f == in.clusters->end() || !f->second.queues || !f->second.queues->priority_classes_known) return std::nullopt;
  auto it = f->second.queues->priority_classes.find(name);
  if (it == f->second.queues->priority_classes.end()) return std::nullopt;
  return it->second;
}

Action CreateWorkloadAction(const DecideInput& in, const std::string& cluster, int64_t epoch) {
  auto f = in.clusters->find(cluster);
  WorkloadParams p;
  p.spec = in.spec;
  p.job_uid = in.job->uid;
  p.epoch = epoch;
  p.origin = in.options.origin;
  if (f != in.clusters->end()) {
    p.local_queue = inventory::LocalQueueFor(f->second.config, in.spec->ns, in.spec->queue);
    p.version = f->second.config.kueue_api_version;
  } else {
    p.local_queue = in.spec->queue;
  }
  p.preemption_gate = in.options.preemption_gate_ms > 0;
  p.priority_class_value = PriorityClassValue(in, cluster);
  Action a;
  a.verb = Verb::kCreate;
  a.cluster = cluster;
  a.kind = kWorkload;
  a.ns = in.job->ns;
  a.name = RemoteName(in.job->name, in.job->uid);
  a.epoch = epoch;
  a.path = WorkloadPath(p.version, a.ns);
  a.body = BuildWorkload(p);
  return a;
}

Action CreateJobAction(const DecideInput& in, const std::string& cluster, int64_t epoch) {
  auto f = in.clusters->find(cluster);
  RemoteJobParams p;
  p.spec = in.spec;
  p.job_uid = in.job->uid;
  p.epoch = epoch;
  p.origin = in.options.origin;
  p.local_queue = f != in.clusters->end() ? inventory::LocalQueueFor(f->second.config, in.spec->ns, in.spec->queue)
                                         : in.spec->queue;
  p.workload_name = RemoteName(in.job->name, in.job->uid);
  Action a;
  a.verb = Verb::kCreate;
  a.cluster = cluster;
  a.kind = kJob;
  a.ns = in.job->ns;
  a.name = p.workload_name;
  a.epoch = epoch;
  auto path = JobPath(in.spec->template_object, a.ns);
  a.path = path.ok() ? *path : "";
  a.body = BuildRemoteJob(p);
  return a;
}

namespace {

// Deleting one observed incarnation of an object (its k8s uid is the
// precondition), at path.
template <class Observed>
Action DeleteAction(const std::string& cluster, const char* kind, const Observed& o, std::string path) {
  Action a;
  a.verb = Verb::kDelete;
  a.cluster = cluster;
  a.kind = kind;
  a.ns = o.ns;
  a.name = o.name;
  a.epoch = o.epoch;
  a.path = std::move(path);
  a.precondition_uid = o.k8s_uid;
  return a;
}

}  // namespace

Action DeleteWorkloadAction(const std::string& cluster, inventory::KueueApiVersion version,
                            const ObservedWorkload& w) {
  return DeleteAction(cluster, kWorkload, w, WorkloadPath(version, w.ns, w.name));
}

Action OpenGateAction(const std::string& cluster, inventory::KueueApiVersion version, const ObservedWorkload& w,
                      int64_t epoch, int64_t now_ms) {
  Action a;
  a.verb = Verb::kOpenGate;
  a.cluster = cluster;
  a.kind = kWorkload;
  a.ns = w.ns;
  a.name = w.name;
  a.epoch = epoch;
  a.path = WorkloadPath(version, w.ns, w.name) + "/status";
  a.body = OpenGatePatch(now_ms, w.resource_version, w.other_gate_states);
  return a;
}

std::string ApiVersionOf(const ObservedJob& j) {
  if (!j.api_version.empty()) return j.api_version;
  return j.kind == "JobSet" ? "jobset.x-k8s.io/v1alpha2" : "batch/v1";
}

Action DeleteJobAction(const std::string& cluster, const ObservedJob& j) {
  // The paths of the kinds the observer watches come from the same place as the creates'.
  nlohmann::json kind = {{"apiVersion", ApiVersionOf(j)}, {"kind", j.kind}};
  auto path = JobPath(kind, j.ns, j.name);
  return DeleteAction(cluster, kJob, j, path.ok() ? *path : "");
}

Action DeleteUnseenAction(const DecideInput& in, const RemoteIntent& i) {
  Action a;
  a.verb = Verb::kDeleteUnseen;
  a.cluster = i.cluster;
  a.kind = i.kind;
  a.ns = i.ns;
  a.name = i.name;
  a.epoch = i.epoch;
  if (i.kind == kWorkload) {
    a.path = WorkloadPath(KueueVersionOf(*in.clusters, i.cluster), i.ns, i.name);
  } else {
    auto path = JobPath(in.spec->template_object, i.ns, i.name);
    a.path = path.ok() ? *path : "";
  }
  return a;
}

inventory::KueueApiVersion KueueVersionOf(const FleetFacts& clusters,
                                          const std::string& cluster) {
  auto f = clusters.find(cluster);
  return f == clusters.end() ? inventory::KueueApiVersion::kV1beta2 : f->second.config.kueue_api_version;
}

}  // namespace gantry::dispatch
