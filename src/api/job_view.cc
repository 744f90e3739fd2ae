#include "gantry/api/job_view.h"

#include <algorithm>
#include <charconv>
#include <tuple>

#include <fmt/format.h>

#include "gantry/common/clock.h"
#include "gantry/common/json_path.h"
#include "gantry/common/json_fast.h"
#include "gantry/common/json_text.h"

namespace gantry::api {
namespace {

nlohmann::json ParseOr(const std::string& text, nlohmann::json fallback) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

// status.ownerUnreachable of the job (OwnersOut), or nullopt.
std::optional<std::pair<int64_t, std::string>> OwnerOut(const JobRecord& job, const OwnersOut* out) {
  if (!out || job.cluster.empty()) return std::nullopt;
  if (job.phase != JobPhase::kAdmitted && job.phase != JobPhase::kRunning && job.phase != JobPhase::kCancelling) {
    return std::nullopt;
  }
  auto it = out->find(job.cluster);
  if (it == out->end()) return std::nullopt;
  if (job.conditions_json.find("\"OwnerUnreachable\"") != std::string::npos) return std::nullopt;
  const std::string since = FormatRfc3339(it->second.since_ms);
  if (job.phase == JobPhase::kCancelling) {
    // A cancel waits for the owner whatever the outage's length: no
    // onClusterLoss applies to a job being cancelled.
    return std::make_pair(
        it->second.since_ms,
        fmt::format("owner cluster {} has {} since {}: the cancel completes once it answers and its objects of the "
                    "job are confirmed deleted there, however long that takes (an operator who knows the cluster "
                    "gone for good sets declaredLost in its entry; see gantry clusters {})",
                    job.cluster,
                    it->second.credentials_refused ? "refused gantry's credentials" : "not answered gantry", since,
                    job.cluster));
  }
  return std::make_pair(
      it->second.since_ms,
      it->second.credentials_refused
          ? fmt::format("owner cluster {} has refused gantry's credentials since {}: the job is left as it is there, "
                        "and what is shown of it may be stale; if that lasts credentialsRefusedTimeout, the job's "
                        "onClusterLoss applies (see gantry clusters {})",
                        job.cluster, since, job.cluster)
          : fmt::format("owner cluster {} has not answered gantry since {}: the job is left as it is there, and what "
                        "is shown of it may be stale; if the cluster stays out for clusterLostTimeout, the job's "
                        "onClusterLoss applies (see gantry clusters {})",
                        job.cluster, since, job.cluster));
}

}  // namespace

namespace {

// Everything but the spec, which JobToJson adds.
nlohmann::json JobWithoutSpec(const JobRecord& job, const OwnersOut* out) {
  nlohmann::json metadata = {{"name", job.name},
                             {"namespace", job.ns},
                             {"uid", job.uid},
                             {"creationTimestamp", FormatRfc3339(job.created_ms)}};
  nlohmann::json labels = ParseOr(job.labels_json, nlohmann::json::object());
  if (!labels.empty()) metadata["labels"] = std::move(labels);
  nlohmann::json status = {{"phase", JobPhaseName(job.phase)},
                           {"epoch", job.epoch},
                           {"conditions", ParseOr(job.conditions_json, nlohmann::json::array())},
                           {"updateTime", FormatRfc3339(job.updated_ms)}};
  if (!job.cluster.empty()) status["cluster"] = job.cluster;
  if (!job.message.empty()) status["message"] = job.message;
  if (job.lease_ms > 0) status["leaseTime"] = FormatRfc3339(job.lease_ms);
  if (job.finished_ms > 0) status["completionTime"] = FormatRfc3339(job.finished_ms);
  if (!job.remote_status.empty()) status["remote"] = job.remote_status;
  if (auto owner = OwnerOut(job, out)) {
    status["ownerUnreachable"] = {{"since", FormatRfc3339(owner->first)}, {"message", owner->second}};
  }
  return {{"apiVersion", "gantry.dev/v1"}, {"kind", "Job"}, {"metadata", std::move(metadata)},
          {"status", std::move(status)}};
}

}  // namespace

nlohmann::json JobToJson(const JobRecord& job, const OwnersOut* out) {
  nlohmann::json j = JobWithoutSpec(job, out);
  j["spec"] = ParseOr(job.spec_json, nlohmann::json::object());
  return j;
}

namespace {

void AppendMember(std::string& out, std::string_view key, std::string_view value) {
  AppendJsonString(out, key);
  out.push_back(':');
  AppendJsonString(out, value);
  out.push_back(',');
}

// Stored JSON text written by gantry, spliced as is when it is the expected
// kind of value ('{' or '['); anything else stands in as empty.
std::string_view StoredJson(const std::string& text, char open, char close, std::string_view empty) {
  bool ok = text.size() >= 2 && text.front() == open && text.back() == close;
  return ok ? std::string_view(text) : empty;
}

}  // namespace

// The same value as JobToJson, written directly: metadata and status keys
// in the order dump() would give them, the stored spec last.
std::string JobJsonText(const JobRecord& job, const OwnersOut* owners_out) {
  std::string out;
  out.reserve(job.TextBytes() + 400);
  out += R"({"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{)";
  AppendMember(out, "creationTimestamp", FormatRfc3339(job.created_ms));
  std::string_view labels = StoredJson(job.labels_json, '{', '}', "{}");
  if (labels != "{}") {
    out += R"("labels":)";
    out += labels;
    out.push_back(',');
  }
  AppendMember(out, "name", job.name);
  AppendMember(out, "namespace", job.ns);
  AppendJsonString(out, "uid");
  out.push_back(':');
  AppendJsonString(out, job.uid);
  out += R"(},"status":{)";
  if (!job.cluster.empty()) AppendMember(out, "cluster", job.cluster);
  if (job.finished_ms > 0) AppendMember(out, "completionTime", FormatRfc3339(job.finished_ms));
  out += R"("conditions":)";
  out += StoredJson(job.conditions_json, '[', ']', "[]");
  out += R"(,"epoch":)";
  out += std::to_string(job.epoch);
  out.push_back(',');
  if (job.lease_ms > 0) AppendMember(out, "leaseTime", FormatRfc3339(job.lease_ms));
  if (!job.message.empty()) AppendMember(out, "message", job.message);
  if (auto owner = OwnerOut(job, owners_out)) {
    out += R"("ownerUnreachable":{)";
    AppendMember(out, "message", owner->second);
    AppendJsonString(out, "since");
    out.push_back(':');
    AppendJsonString(out, FormatRfc3339(owner->first));
    out += "},";
  }
  AppendMember(out, "phase", JobPhaseName(job.phase));
  if (!job.remote_status.empty()) AppendMember(out, "remote", job.remote_status);
  AppendJsonString(out, "updateTime");
  out.push_back(':');
  AppendJsonString(out, FormatRfc3339(job.updated_ms));
  out += R"(},"spec":)";
  out += StoredJson(job.spec_json, '{', '}', "{}");
  out.push_back('}');
  return out;
}

std::string JobListJsonText(const std::vector<JobRecord>& jobs, std::optional<int64_t> next_after_seq,
                            const OwnersOut* out) {
  nlohmann::json metadata = nlohmann::json::object();
  if (next_after_seq) metadata["continue"] = EncodeContinue(*next_after_seq);
  std::string text = R"({"apiVersion":"gantry.dev/v1","kind":"JobList","metadata":)" + metadata.dump() +
                     R"(,"items":[)";
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (i) text += ",";
    text += JobJsonText(jobs[i], out);
  }
  text += "]}";
  return text;
}

nlohmann::json EventsToJson(const std::vector<JobEvent>& events, int64_t total) {
  nlohmann::json items = nlohmann::json::array();
  for (const JobEvent& e : events) {
    nlohmann::json item = {{"time", FormatRfc3339(e.time_ms)},
                           {"type", e.type},
                           {"reason", e.reason},
                           {"message", e.message}};
    if (!e.cluster.empty()) item["cluster"] = e.cluster;
    items.push_back(std::move(item));
  }
  return {{"apiVersion", "gantry.dev/v1"},
          {"kind", "EventList"},
          {"metadata", {{"totalItems", std::max<int64_t>(total, static_cast<int64_t>(events.size()))}}},
          {"items", items}};
}

nlohmann::json RemoteObjectsToJson(std::vector<RemoteIntent> intents,
                                   const std::vector<dispatch::ObservedObject>& observed,
                                   const std::vector<dispatch::ActionError>& errors,
                                   const std::string& job_kind,
                                   const std::set<std::string>& not_in_inventory) {
  std::sort(intents.begin(), intents.end(), [](const RemoteIntent& a, const RemoteIntent& b) {
    return std::tie(a.cluster, a.kind) < std::tie(b.cluster, b.kind);
  });
  nlohmann::json items = nlohmann::json::array();
  for (const RemoteIntent& i : intents) {
    // A held row (RemoteIntent::hold) is Withdrawing while its object may
    // be there, and HeldOut once the cluster showed it gone: not a refusal.
    const char* state = i.present            ? "Wanted"
                        : i.refusal.empty() ? "Withdrawing"
                        : !i.hold.empty()   ? "HeldOut"
                                            : "Refused";
    nlohmann::json item = {{"cluster", i.cluster}, {"kind", i.kind},   {"namespace", i.ns},
                           {"name", i.name},       {"epoch", i.epoch}, {"state", state}};
    if (i.kind == "Job" && !job_kind.empty()) item["objectKind"] = job_kind;
    if (!i.refusal.empty() && i.hold.empty()) item["refusal"] = i.refusal;
    if (!i.hold.empty()) item["hold"] = i.hold;
    if (i.gate_opened_ms > 0) item["preemptionGateOpened"] = FormatRfc3339(i.gate_opened_ms);
    if (!i.gate_refusal.empty()) item["preemptionGateRefusal"] = i.gate_refusal;
    if (i.created_ms > 0) item["createConfirmed"] = FormatRfc3339(i.created_ms);
    if (i.updated_ms > 0) item["updateTime"] = FormatRfc3339(i.updated_ms);
    if (not_in_inventory.count(i.cluster)) item["notInInventory"] = true;
    bool there = i.created_ms > 0;  // the create's outcome is known: it landed
    for (const dispatch::ObservedObject& o : observed) {
      if (o.cluster != i.cluster || o.kind != i.kind || o.name != i.name) continue;
      nlohmann::json seen = {{"state", o.state}, {"epoch", o.epoch}};
      if (!o.reason.empty()) seen["reason"] = o.reason;
      if (!o.message.empty()) seen["message"] = o.message;
      if (o.last_seen) seen["lastSeen"] = true;
      item["observed"] = std::move(seen);
      there = there || o.epoch == i.epoch;
      break;
    }
    for (const dispatch::ActionError& e : errors) {
      if (e.cluster != i.cluster || e.kind != i.kind) continue;
      // A withdrawn object whose delete keeps failing (a 403: gantry may not
      // delete it there) is what a cancel waits for. A failed try of a
      // create that landed after all (its answer lost, or sent again) says
      // nothing any more.
      const bool applies = e.verb == "delete" ? !i.present : i.present && !there && e.epoch == i.epoch;
      if (!applies) continue;
      item["lastError"] = {{"verb", e.verb}, {"message", e.error}, {"time", FormatRfc3339(e.time_ms)}};
      // Since when every try has failed: a real job's create failing as long
      // as clusterLostTimeout counts as its owner lost.
      if (e.since_ms > 0) item["lastError"]["failingSince"] = FormatRfc3339(e.since_ms);
    }
    items.push_back(std::move(item));
  }
  return {{"apiVersion", "gantry.dev/v1"}, {"kind", "RemoteObjectList"}, {"items", std::move(items)}};
}

std::string TemplateKindOf(const std::string& spec_json) {
  if (std::optional<std::string> kind = FastStringAt(spec_json, {"template", "kind"})) return *kind;
  // Text simdjson refuses: the parser's word (a text it refuses has no kind).
  return JsonStringAt(nlohmann::json::parse(spec_json, nullptr, /*allow_exceptions=*/false), {"template", "kind"});
}

// "v1:" marks the token format so a later format can be told apart.
std::string EncodeContinue(int64_t after_seq) { return "v1:" + std::to_string(after_seq); }

std::optional<int64_t> DecodeContinue(const std::string& token) {
  if (token.size() < 4 || token.rfind("v1:", 0) != 0 || token.size() > 23) return std::nullopt;
  int64_t value = 0;
  const char* first = token.data() + 3;
  const char* last = token.data() + token.size();
  if (*first < '0' || *first > '9') return std::nullopt;  // no sign, no space
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last) return std::nullopt;  // not all digits, or beyond int64
  return value;
}

}  // namespace gantry::api
