#include "preemption_gates.h"

#include <set>

#include "object_store.h"

namespace gantry::sim {

using nlohmann::json;

namespace {

// The name of a gate entry ("" when it has none).
std::string GateName(const json& entry) {
  if (!entry.is_object()) return "";
  auto name = entry.find("name");
  return name != entry.end() && name->is_string() ? name->get<std::string>() : "";
}

const json& GateList(const json& wl, const char* part) {
  const json& list = MemberOr(MemberOr(wl, part, EmptyObject()), "preemptionGates", EmptyArray());
  return list.is_array() ? list : EmptyArray();
}

}  // namespace

std::vector<std::string> ClosedPreemptionGates(const json& wl) {
  std::vector<std::string> closed;
  const json& gates = GateList(wl, "spec");
  if (gates.empty()) return closed;
  std::set<std::string> open;
  for (const json& state : GateList(wl, "status")) {
    if (state.is_object() && state.value("position", json()) == "Open") open.insert(GateName(state));
  }
  for (const json& gate : gates) {
    std::string name = GateName(gate);
    if (!name.empty() && !open.count(name)) closed.push_back(std::move(name));
  }
  return closed;
}

}  // namespace gantry::sim
