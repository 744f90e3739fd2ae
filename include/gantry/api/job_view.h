// How stored jobs look over the API: a Kubernetes-style resource
// {apiVersion: gantry.dev/v1, kind: Job, metadata, spec, status}, lists with
// metadata.continue, and event lists.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/dispatch/job_intake.h"
#include "gantry/inventory/fleet.h"
#include "gantry/store/job_store.h"

namespace gantry::api {

// The clusters out of reach now (NotReady at their last probe), each since
// when (ms): a job whose owner is one of them, and that carries no
// OwnerUnreachable condition yet (the engine raises one only when the
// outage means something for the job: its timeout, a refusal), gets
// status.ownerUnreachable {since, message}, not stored: its status may be
// stale, and the outage is the cause.
using OwnersOut = std::map<std::string, inventory::Fleet::Outage>;

nlohmann::json JobToJson(const JobRecord& job, const OwnersOut* out = nullptr);
// The same as JSON text. The stored spec is already canonical JSON text, so
// it is spliced in as is rather than parsed and printed again: the API's hot
// paths (submit, get, list) use these.
std::string JobJsonText(const JobRecord& job, const OwnersOut* out = nullptr);
std::string JobListJsonText(const std::vector<JobRecord>& jobs, std::optional<int64_t> next_after_seq,
                            const OwnersOut* out = nullptr);
// total: how many events the job has in all, the list being its last ones
// (metadata.totalItems).
nlohmann::json EventsToJson(const std::vector<JobEvent>& events, int64_t total);

// The job's remote objects as gantry means them (its intent rows), by
// cluster and kind: a RemoteObjectList whose items have cluster, kind,
// namespace, name, epoch, state (Wanted: to exist at that epoch;
// Withdrawing: to be deleted, and kept until the cluster confirms it;
// Refused: the cluster refused the Workload copy, whose answer is in
// refusal), updateTime, preemptionGateOpened when gantry opened the copy's
// preemption gate, and preemptionGateRefusal when the cluster refused that.
// An item whose object the engine's watches show (observed: same cluster,
// kind and name) also has observed: {state, epoch, reason, message, and
// lastSeen when the cluster's view may be behind}, e.g.
// a copy Pending with Kueue's word on why; objects the store has no row
// for are not listed. A wanted object whose create failed at its last try
// and is to be sent again (errors: same cluster and kind) has lastError:
// {message, time}. The real job's rows (kind "Job" whatever its kind) have
// objectKind: job_kind, the template's kind (JobSet, ...), when given. An
// item of a cluster in not_in_inventory (removed from clusters.d: gantry
// can neither read nor delete there) has notInInventory: true.
nlohmann::json RemoteObjectsToJson(std::vector<RemoteIntent> intents,
                                   const std::vector<dispatch::ObservedObject>& observed = {},
                                   const std::vector<dispatch::ActionError>& errors = {},
                                   const std::string& job_kind = "",
                                   const std::set<std::string>& not_in_inventory = {});

// The template's kind (JobSet, ...) of a stored spec, "" when it has none:
// as parsing spec_json would find it at /template/kind, read from
// simdjson's parse (json_fast.h) without building a tree. For the API's
// reads on the server's loop, which must not build a megabyte of spec.
std::string TemplateKindOf(const std::string& spec_json);

// The opaque continue token for a list page, and its inverse (nullopt for a
// token that was not produced here).
std::string EncodeContinue(int64_t after_seq);
std::optional<int64_t> DecodeContinue(const std::string& token);

}  // namespace gantry::api
