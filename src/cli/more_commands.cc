// gantry events and gantry reload.
#include "command_support.h"
#include "commands.h"

namespace gantry::cli {

int Events(const CommonFlags& flags, const std::string& name, int tail, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  const std::string query = tail > 0 ? "?limit=" + std::to_string(tail) : "";
  auto body = Fetch(*api, JobPath(NamespaceOf(flags), name) + "/events" + query, err, &code);
  if (!body) return code;
  if (PrintStructured(flags, *body, out)) return kExitOk;
  const auto& items = body->value("items", nlohmann::json::array());
  if (items.empty()) {
    err << "No events.\n";
    return kExitOk;
  }
  PrintEvents(out, items, items.size(), "");
  return kExitOk;
}

int Reload(const CommonFlags& flags, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  ApiResult r = api->Call("POST", "/api/v1/clusters:reload");
  if (r.exit_code == kExitOk) {
    if (PrintStructured(flags, r.body, out)) return kExitOk;  // -o json|yaml: its Status
    // The daemon's word on what changed (clusters added, removed, renamed?).
    const std::string said = r.body.is_object() ? r.body.value("message", "") : "";
    out << (said.empty() ? "inventory reloaded" : said) << "\n";
    return kExitOk;
  }
  // 422: some files refused (the others are in use); the error names each, with why.
  err << r.error << "\n";
  return r.exit_code;
}

}  // namespace gantry::cli
