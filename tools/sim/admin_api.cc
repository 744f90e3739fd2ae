#include "admin_api.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kube_errors.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

http::Response FromStatus(const Status& s) {
  if (s.ok()) return JsonResponse(200, {{"ok", true}});
  return KubeErrorFrom(s.code() == Code::kInternal ? Status::Invalid(s.message()) : s);
}

// "a,b,,c" -> {a, b, c}.
std::set<std::string> SplitCommas(const std::string& list) {
  std::set<std::string> out;
  for (std::size_t at = 0; at < list.size();) {
    std::size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) out.insert(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

std::vector<int> ParseCodes(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    try {
      out.push_back(std::stoi(text.substr(start, end - start)));
    } catch (const std::exception&) {
      out.push_back(0);  // rejected by SetErrors
    }
    start = end + 1;
  }
  return out;
}

}  // namespace

AdminApi::AdminApi(Journal* journal, std::vector<SimCluster*> clusters)
    : journal_(journal), clusters_(std::move(clusters)) {
  router_.Add("GET", "/journal", [this](http::Request, http::Responder respond) {
    std::string body;
    for (const Run& r : journal_->Snapshot()) body += RunToJson(r).dump() + "\n";
    respond(http::TextResponse(200, std::move(body), "application/x-ndjson"));
  });
  router_.Add("GET", "/check", [this](http::Request, http::Responder respond) {
    respond(JsonResponse(200, CheckReport(journal_->Snapshot())));
  });
  router_.Add("GET", "/clusters", [this](http::Request, http::Responder respond) {
    json out = json::array();
    for (SimCluster* c : clusters_) {
      json s = c->state().Summary();
      FaultSettings f = c->faults();
      s["server"] = c->server_url();
      s["faults"] = {{"latencyMs", f.latency_ms}, {"latencyVerbs", f.latency_verbs}, {"errorFraction", f.error_fraction},
                     {"errorCodes", f.error_codes}, {"errorVerbs", f.error_verbs}, {"partitionMode", f.partition_mode},
                     {"loseAnswer", f.lose_answer}, {"answersHeld", c->answers_held()},
                     {"apiserverStopped", f.apiserver_stopped}, {"forbidden", f.forbidden}, {"failing", f.failing},
                     {"rbac", f.rbac != nullptr}};
      out.push_back(std::move(s));
    }
    respond(JsonResponse(200, out));
  });
  router_.Add("POST", "/clusters/{cluster}/{action}", [this](http::Request req, http::Responder respond) {
    respond(ClusterAction(req));
  });
}

void AdminApi::Handle(http::Request req, http::Responder respond) const {
  auto match = router_.Find(req.method, req.RawPath());
  if (match.status != 200) {
    respond(KubeError(match.status, match.status == 404 ? "NotFound" : "MethodNotAllowed", "no such admin route"));
    return;
  }
  req.path_params = std::move(match.params);
  (*match.handler)(std::move(req), std::move(respond));
}

SimCluster* AdminApi::Find(const std::string& name) const {
  for (SimCluster* c : clusters_) {
    if (c->name() == name) return c;
  }
  return nullptr;
}

http::Response AdminApi::ClusterAction(const http::Request& req) const {
  SimCluster* c = Find(req.path_params.at("cluster"));
  if (!c) return KubeError(404, "NotFound", fmt::format("no cluster {}", req.path_params.at("cluster")));
  const std::string& action = req.path_params.at("action");
  try {
    if (action == "evict") {
      return FromStatus(c->state().Evict(req.Query("namespace").value_or("default"), req.Query("name").value_or("")));
    }
    if (action == "admission-check") {
      auto state = ParseCheckState(req.Query("state").value_or(""));
      if (!state.ok()) return FromStatus(Status::Invalid("state: " + state.status().message()));
      return FromStatus(c->state().SetCheckState(req.Query("namespace").value_or("default"),
                                                 req.Query("name").value_or(""), req.Query("check").value_or(""),
                                                 *state));
    }
    if (action == "partition") return FromStatus(c->Partition(std::stoi(req.Query("mode").value_or("1"))));
    if (action == "heal") return FromStatus(c->Heal());
    if (action == "stop") return FromStatus(c->StopApiserver());
    if (action == "start") return FromStatus(c->StartApiserver());
    if (action == "latency") {
      return FromStatus(
          c->SetLatency(std::stoll(req.Query("ms").value_or("0")), SplitCommas(req.Query("verbs").value_or(""))));
    }
    if (action == "errors") {
      return FromStatus(c->SetErrors(std::stod(req.Query("fraction").value_or("0")),
                                     ParseCodes(req.Query("codes").value_or("")),
                                     SplitCommas(req.Query("verbs").value_or(""))));
    }
    if (action == "forbid") {
      return FromStatus(c->SetForbidden(SplitCommas(req.Query("resources").value_or(""))));
    }
    if (action == "lose-answer") return FromStatus(c->SetLoseAnswer(req.Query("request").value_or("")));
    if (action == "rbac") return FromStatus(c->SetRbac(req.body));
    if (action == "hold-watches") {
      const std::string hold = req.Query("hold").value_or("on");
      if (hold != "on" && hold != "off") return FromStatus(Status::Invalid("hold: want on or off"));
      c->state().HoldWatches(hold == "on");
      return FromStatus(Status::Ok());
    }
    if (action == "kill-watches") {
      c->state().KillWatches();
      return FromStatus(Status::Ok());
    }
    if (action == "local-queue") {
      return FromStatus(
          c->state().AddLocalQueue(req.Query("namespace").value_or("default"), req.Query("name").value_or("")));
    }
    if (action == "quota") {
      auto quota = ParseResourceList(json::parse(req.body, nullptr, false));
      if (!quota.ok()) return FromStatus(quota.status());
      c->state().SetQuota(*quota);
      return FromStatus(Status::Ok());
    }
  } catch (const std::exception&) {
    return KubeError(400, "BadRequest", "a query parameter is not a number");
  }
  return KubeError(404, "NotFound", fmt::format("no admin action {}", action));
}

}  // namespace gantry::sim
