#include "cluster_state.h"

#include <charconv>
#include <system_error>

#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "gantry/common/json_path.h"
#include "gantry/common/json_text.h"
#include "gantry/common/names.h"
#include "kube_errors.h"
#include "validation.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

std::string StorageApiVersion(const ResourceInfo& res) {
  return res.group.empty() ? res.versions.front() : res.group + "/" + res.versions.front();
}

std::string RandomSuffix(std::mt19937_64& rng) {
  static const char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s += kChars[rng() % (sizeof kChars - 1)];
  return s;
}

}  // namespace

ClusterState::ClusterState(ClusterConfig config, Journal* journal, const Clock* clock)
    : config_(std::move(config)),
      system_uid_(NewUid(clock->NowMillis())),
      journal_(journal),
      clock_(clock),
      store_(config_.history_limit,
             [this](const WatchEvent& ev, const json& object) {
               if (ev.resource == "workloads") kueue_.OnWorkloadEvent(ev.type, object);
               hub_.Dispatch(ev);
             }),
      kueue_(config_, &store_, journal_),
      rng_(std::random_device{}()) {
  kueue_.Bootstrap(clock_->NowMillis());
}

namespace {

// The text of `object`, a stored object or one just deleted: the body of the
// store's latest event when that event is of this very version (a
// resourceVersion names one change of one object), else serialized anew.
std::string TextOf(const ObjectStore& store, const json& object) {
  const WatchEvent* latest = store.LatestEvent();
  if (latest && std::to_string(latest->rv) == object["metadata"].value("resourceVersion", "")) return latest->body;
  std::string text;
  AppendJson(text, object);
  return text;
}

}  // namespace

Result<std::string> ClusterState::Create(const ResourceInfo& res, const std::string& ns, json object,
                                         const std::string& version) {
  if (!res.writable) return Status(Code::kMethodNotAllowed, fmt::format("create is not supported on {}", res.plural));
  if (!object.is_object()) return Status::Invalid("the body must be a JSON object");
  json& md = object["metadata"];
  if (!md.is_object()) md = json::object();
  std::lock_guard lock(mu_);
  if (res.namespaced) {
    std::string body_ns = md.value("namespace", "");
    if (!body_ns.empty() && body_ns != ns) {
      return Status::Invalid("the namespace of the provided object does not match the namespace sent on the request");
    }
    md["namespace"] = ns;
  }
  if (md.value("name", "").empty() && !md.value("generateName", "").empty()) {
    md["name"] = md["generateName"].get<std::string>() + RandomSuffix(rng_);
  }
  object["kind"] = res.kind;
  object["apiVersion"] = StorageApiVersion(res);
  GANTRY_RETURN_IF_ERROR(ValidateMetadata(res, object));
  if (res.plural == "workloads") {
    GANTRY_RETURN_IF_ERROR(ValidateWorkload(object, version.empty() ? res.versions.front() : version));
    object.erase("status");
  }
  if (!object.contains("spec") || object["spec"].is_null()) object["spec"] = json::object();
  if (IsRunnable(res.plural)) GANTRY_RETURN_IF_ERROR(ValidateRunnable(res, object));
  if (res.plural == "jobsets") GANTRY_RETURN_IF_ERROR(JobSetWebhook(object));
  int64_t now = clock_->NowMillis();
  auto created = store_.Create(res.plural, std::move(object), now);
  if (!created.ok()) return created.status();
  const json& stored = **created;
  const std::string stored_ns = NamespaceOf(stored), name = NameOf(stored);
  if (res.plural == "workloads") kueue_.OnWorkloadCreated(stored, now);
  if (IsRunnable(res.plural)) kueue_.OnJobCreated(res.plural, stored, now);
  // The answer is the object as the create left it: a job whose Workload is
  // admitted was started at once (written again, unsuspended).
  const json* current = store_.Get(res.plural, stored_ns, name);
  if (!current) return Status::NotFound(fmt::format("{}.{} \"{}\" not found", res.plural, res.group, name));
  return TextOf(store_, *current);
}

Result<json> ClusterState::Get(const ResourceInfo& res, const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  const json* o = store_.Get(res.plural, res.namespaced ? ns : "", name);
  if (!o) return Status::NotFound(fmt::format("{}.{} \"{}\" not found", res.plural, res.group, name));
  return *o;
}

Result<json> ClusterState::List(const ResourceInfo& res, const std::string& api_version, const std::string& ns,
                                const LabelSelector& selector, std::size_t limit, const std::string& continue_token) {
  std::lock_guard lock(mu_);
  // Every page of a list comes from one snapshot, at one resourceVersion,
  // as an API server serves it (from etcd at the first page's revision): a
  // client that watches from that version is sent every later change, in
  // order. Pages read live instead either missed a change to an object
  // already read (the current version on each page: a job shown Running
  // for ever) or showed an object newer than the changes then replayed.
  ListSnapshot taken;
  const ListSnapshot* snapshot = nullptr;
  std::size_t offset = 0;
  uint64_t id = 0;
  if (continue_token.empty()) {
    auto all = store_.List(res.plural, ns, selector, 0, "");
    if (!all.ok()) return all.status();
    taken.resource_version = store_.resource_version();
    taken.items = std::move(all->items);
    snapshot = &taken;
  } else {
    // "ID|OFFSET", each a whole number that fits (from_chars: no sign, no
    // exception, an overflow an error).
    const char* p = continue_token.data();
    const char* const last = p + continue_token.size();
    const auto [bar, id_error] = std::from_chars(p, last, id);
    bool parsed = id_error == std::errc() && bar != last && *bar == '|';
    if (parsed) {
      const auto [end, offset_error] = std::from_chars(bar + 1, last, offset);
      parsed = offset_error == std::errc() && end == last;
    }
    if (!parsed) return Status::Invalid("invalid continue token");
    auto it = list_snapshots_.find(id);
    if (it == list_snapshots_.end()) {
      return Status(Code::kNotFound, "the provided continue parameter is too old to display a consistent list "
                                     "result. You can start a new list without the continue parameter");
    }
    snapshot = &it->second;
    if (offset > snapshot->items.size()) return Status::Invalid("invalid continue token");
  }
  const std::size_t end =
      limit == 0 ? snapshot->items.size() : std::min(snapshot->items.size(), offset + limit);
  json items = json::array();
  for (std::size_t k = offset; k < end; ++k) {
    json item = snapshot->items[k];
    item["apiVersion"] = api_version;
    items.push_back(std::move(item));
  }
  json md = {{"resourceVersion", std::to_string(snapshot->resource_version)}};
  if (end < snapshot->items.size()) {
    if (continue_token.empty()) {  // kept for the pages to come
      id = next_list_snapshot_++;
      list_snapshots_.emplace(id, std::move(taken));
      while (list_snapshots_.size() > kListSnapshots) list_snapshots_.erase(list_snapshots_.begin());
      snapshot = &list_snapshots_.at(id);
    }
    md["continue"] = std::to_string(id) + "|" + std::to_string(end);
    md["remainingItemCount"] = snapshot->items.size() - end;
  } else if (!continue_token.empty()) {
    list_snapshots_.erase(id);  // read to its end
  }
  return json{{"kind", res.kind + "List"}, {"apiVersion", api_version}, {"metadata", md}, {"items", items}};
}

// "workloads.kueue.x-k8s.io", "pods": a GroupResource as the API server prints it.
namespace {
std::string Qualified(const std::string& name, const std::string& group) {
  return group.empty() ? name : name + "." + group;
}
}  // namespace

// A DELETE's preconditions (DeleteOptions.preconditions), checked as the
// API server's BeforeDelete does, whatever the propagationPolicy: the uid
// first, then the resourceVersion; either differing is a 409 Conflict in its
// words.
Status ClusterState::CheckDeletePreconditions(const ResourceInfo& res, const json& cur, const json& want) {
  const std::string what = fmt::format("Operation cannot be fulfilled on {} \"{}\"", Qualified(res.kind, res.group),
                                       JsonStringAt(cur, {"metadata", "name"}));
  const std::string uid = JsonStringAt(cur, {"metadata", "uid"});
  const std::string want_uid = JsonStringAt(want, {"uid"});
  if (!want_uid.empty() && want_uid != uid) {
    return Status(Code::kConflict, fmt::format("{}: the UID in the precondition ({}) does not match the UID in record "
                                               "({}). The object might have been deleted and then recreated",
                                               what, want_uid, uid));
  }
  const std::string rv = JsonStringAt(cur, {"metadata", "resourceVersion"});
  const std::string want_rv = JsonStringAt(want, {"resourceVersion"});
  if (!want_rv.empty() && want_rv != rv) {
    return Status(Code::kConflict, fmt::format("{}: the ResourceVersion in the precondition ({}) does not match the "
                                               "ResourceVersion in record ({}). The object might have been modified",
                                               what, want_rv, rv));
  }
  return Status::Ok();
}

// What a patch's own metadata asks of the stored object, as the API server
// checks it: a resourceVersion other than the stored one is a 409 Conflict
// (an update's optimistic concurrency). A uid other than the stored one is
// ignored by a status subresource, which keeps the stored metadata, and is a
// 422 on the main resource (metadata.uid is immutable).
Status ClusterState::CheckPatchedMetadata(const ResourceInfo& res, const json& cur, const json& patched, bool status) {
  const std::string name = JsonStringAt(cur, {"metadata", "name"});
  const std::string rv = JsonStringAt(cur, {"metadata", "resourceVersion"});
  const std::string new_rv = JsonStringAt(patched, {"metadata", "resourceVersion"});
  if (!new_rv.empty() && new_rv != rv) {
    return Status(Code::kConflict, fmt::format("Operation cannot be fulfilled on {} \"{}\": the object has been "
                                               "modified; please apply your changes to the latest version and try again",
                                               Qualified(res.plural, res.group), name));
  }
  const std::string uid = JsonStringAt(cur, {"metadata", "uid"});
  const std::string new_uid = JsonStringAt(patched, {"metadata", "uid"});
  if (!status && !new_uid.empty() && new_uid != uid) {
    return Status::Invalid(fmt::format("{} \"{}\" is invalid: metadata.uid: Invalid value: \"{}\": field is immutable",
                                       Qualified(res.kind, res.group), name, new_uid));
  }
  return Status::Ok();
}

Result<json> ClusterState::Patch(const ResourceInfo& res, const std::string& ns, const std::string& name,
                                 const std::string& patch_type, const json& patch, bool status,
                                 const std::string& version) {
  if (!res.writable) return Status(Code::kMethodNotAllowed, fmt::format("patch is not supported on {}", res.plural));
  std::lock_guard lock(mu_);
  const json* cur = store_.Get(res.plural, res.namespaced ? ns : "", name);
  if (!cur) return Status::NotFound(fmt::format("{}.{} \"{}\" not found", res.plural, res.group, name));
  json updated = *cur;
  try {
    if (patch_type == "json") {
      updated = updated.patch(patch);
    } else {
      updated.merge_patch(patch);
    }
  } catch (const json::exception& e) {
    return Status::Invalid(fmt::format("the patch could not be applied: {}", e.what()));
  }
  GANTRY_RETURN_IF_ERROR(CheckPatchedMetadata(res, *cur, updated, status));
  // Identity and the other half of the object are not the patch's to change.
  for (const char* k : {"name", "namespace", "uid", "creationTimestamp"}) {
    if (cur->at("metadata").contains(k)) updated["metadata"][k] = (*cur)["metadata"][k];
  }
  updated["kind"] = res.kind;
  updated["apiVersion"] = StorageApiVersion(res);
  if (status) {
    json keep_status = updated.value("status", json::object());
    updated = *cur;
    updated["status"] = keep_status;
  } else if (cur->contains("status")) {
    updated["status"] = (*cur)["status"];
  } else {
    updated.erase("status");  // none yet: a main-resource write does not make one
  }
  if (res.plural == "workloads") {
    const std::string& v = version.empty() ? res.versions.front() : version;
    GANTRY_RETURN_IF_ERROR(ValidateWorkload(updated, v));
    GANTRY_RETURN_IF_ERROR(ValidateWorkloadUpdate(*cur, updated, v));
  }
  if (IsRunnable(res.plural)) GANTRY_RETURN_IF_ERROR(ValidateRunnable(res, updated));
  auto result = store_.Update(res.plural, std::move(updated));
  if (!result.ok()) return result.status();
  if (res.plural == "workloads") kueue_.MarkDirty();
  if (IsRunnable(res.plural)) kueue_.OnJobUpdated(res.plural, **result);
  return **result;
}

Result<std::string> ClusterState::Delete(const ResourceInfo& res, const std::string& ns, const std::string& name,
                                         const std::string& propagation_policy, const json& preconditions) {
  if (!res.writable) return Status(Code::kMethodNotAllowed, fmt::format("delete is not supported on {}", res.plural));
  if (!propagation_policy.empty() && propagation_policy != "Background" && propagation_policy != "Foreground" &&
      propagation_policy != "Orphan") {
    return Status::Invalid(fmt::format("propagationPolicy: Unsupported value: \"{}\"", propagation_policy));
  }
  std::lock_guard lock(mu_);
  int64_t now = clock_->NowMillis();
  const std::string at_ns = res.namespaced ? ns : "";
  const json* cur = store_.Get(res.plural, at_ns, name);
  if (cur && preconditions.is_object()) GANTRY_RETURN_IF_ERROR(CheckDeletePreconditions(res, *cur, preconditions));
  // Being deleted in the foreground already, its pods still stopping: asked
  // so again, it goes when they are gone; asked another way (Background,
  // Orphan), the API server drops the foregroundDeletion finalizer and it
  // goes now, as below.
  const bool foreground = propagation_policy == "Foreground";
  if (cur && foreground && JsonAt(*cur, {"metadata", "deletionTimestamp"})) return TextOf(store_, *cur);
  if (cur && IsRunnable(res.plural) && foreground && kueue_.OnJobDeletingForeground(res.plural, *cur, now)) {
    auto marked = store_.Mutate(res.plural, at_ns, name, [&](json& job) {
      job["metadata"]["deletionTimestamp"] = FormatRfc3339(now);
      json& finalizers = job["metadata"]["finalizers"];
      if (!finalizers.is_array()) finalizers = json::array();
      finalizers.push_back("foregroundDeletion");
    });
    if (!marked.ok()) return marked.status();
    return TextOf(store_, **marked);
  }
  auto deleted = store_.Delete(res.plural, at_ns, name);
  if (!deleted.ok()) {
    return Status::NotFound(fmt::format("{}.{} \"{}\" not found", res.plural, res.group, name));
  }
  const json& object = *deleted;
  std::string text = TextOf(store_, object);
  if (res.plural == "workloads") kueue_.OnWorkloadDeleted(object, now);
  if (IsRunnable(res.plural)) kueue_.OnJobDeleted(res.plural, object, now);
  return text;
}

int64_t ClusterState::WatchTimeout(int64_t requested_ms) {
  if (requested_ms > 0) return requested_ms;
  int64_t lo = config_.watch_timeout_min_ms, hi = config_.watch_timeout_max_ms;
  return hi > lo ? lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo)) : lo;
}

void ClusterState::Watch(WatchRequest req) {
  std::lock_guard lock(mu_);
  int64_t now = clock_->NowMillis();
  Watcher w{req.resource->plural, req.ns, std::move(req.selector), req.api_version, req.resource->kind,
            req.bookmarks, now + WatchTimeout(req.timeout_ms), now + config_.bookmark_interval_ms, req.stream};
  if (req.resource_version.empty() || req.resource_version == "0") {
    for (const json* o : store_.All(w.resource)) {
      WatchEvent ev = WatchEvent::Of("ADDED", w.resource, 0, *o);
      if (!WatchHub::Deliver(w, ev)) return;
    }
  } else {
    int64_t rv = 0;
    try {
      rv = std::stoll(req.resource_version);
    } catch (const std::exception&) {
      rv = -1;
    }
    auto events = rv < 0 ? Result<std::vector<const WatchEvent*>>(Status::Conflict("invalid resource version"))
                         : store_.EventsSince(w.resource, rv);
    if (!events.ok()) {
      w.stream->Write(WatchHub::Encode("ERROR", KubeStatusJson(410, "Expired", events.status().message())));
      w.stream->Finish();
      return;
    }
    for (const WatchEvent* ev : *events) {
      if (!WatchHub::Deliver(w, *ev)) return;
    }
  }
  w.start_rv = store_.resource_version();
  hub_.Add(std::move(w));
}

void ClusterState::Tick() {
  std::lock_guard lock(mu_);
  int64_t now = clock_->NowMillis();
  kueue_.Tick(now);
  hub_.Tick(now, store_.resource_version(), config_.bookmark_interval_ms);
}

Status ClusterState::Evict(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  return kueue_.Evict(ns, name, clock_->NowMillis());
}

Status ClusterState::SetCheckState(const std::string& ns, const std::string& name, const std::string& check,
                                   CheckState state) {
  std::lock_guard lock(mu_);
  return kueue_.SetCheckState(ns, name, check, state, clock_->NowMillis());
}

void ClusterState::SetQuota(const ResourceList& quota) {
  std::lock_guard lock(mu_);
  kueue_.SetQuota(quota, clock_->NowMillis());
}

Status ClusterState::AddLocalQueue(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  return kueue_.AddLocalQueue(ns, name, clock_->NowMillis());
}

void ClusterState::KillWatches() {
  std::lock_guard lock(mu_);
  hub_.CloseAll();
}

void ClusterState::HoldWatches(bool hold) {
  std::lock_guard lock(mu_);
  if (hold) {
    hub_.Hold();
  } else {
    hub_.Release();
  }
}

ResourceList ClusterState::Reserved() {
  std::lock_guard lock(mu_);
  return kueue_.Reserved();
}

json ClusterState::Summary() {
  std::lock_guard lock(mu_);
  return {{"name", config_.name},
          {"resourceVersion", store_.resource_version()},
          {"quota", ToJson(kueue_.quota())},
          {"reserved", ToJson(kueue_.Reserved())},
          {"runningJobs", kueue_.running_jobs()},
          {"watches", hub_.size()},
          {"watchesHeld", hub_.held()}};
}

}  // namespace gantry::sim
