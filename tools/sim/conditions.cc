// Condition helpers shared by the simulated controllers (declared in
// kueue_controller.h).
#include "gantry/common/clock.h"
#include "kueue_controller.h"

namespace gantry::sim {

using nlohmann::json;

bool SetCondition(json* obj, const std::string& type, bool status, const std::string& reason,
                  const std::string& message, int64_t now_ms) {
  json& conds = (*obj)["status"]["conditions"];
  if (!conds.is_array()) conds = json::array();
  std::string want = status ? "True" : "False";
  int64_t generation = (*obj)["metadata"].value("generation", 1);
  for (json& c : conds) {
    if (c.value("type", "") != type) continue;
    bool same = c.value("status", "") == want && c.value("reason", "") == reason &&
                c.value("message", "") == message;
    if (same) return false;
    if (c.value("status", "") != want) c["lastTransitionTime"] = FormatRfc3339(now_ms);
    c["status"] = want;
    c["reason"] = reason;
    c["message"] = message;
    c["observedGeneration"] = generation;
    return true;
  }
  conds.push_back({{"type", type},
                   {"status", want},
                   {"reason", reason},
                   {"message", message},
                   {"observedGeneration", generation},
                   {"lastTransitionTime", FormatRfc3339(now_ms)}});
  return true;
}

namespace {

const json* FindCondition(const json& obj, const std::string& type) {
  auto st = obj.find("status");
  if (st == obj.end() || !st->is_object() || !st->contains("conditions")) return nullptr;
  for (const json& c : (*st)["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

}  // namespace

bool HasCondition(const json& obj, const std::string& type) {
  const json* c = FindCondition(obj, type);
  return c && c->value("status", "") == "True";
}

std::string ConditionMessage(const json& obj, const std::string& type) {
  const json* c = FindCondition(obj, type);
  return c ? c->value("message", "") : "";
}

}  // namespace gantry::sim
