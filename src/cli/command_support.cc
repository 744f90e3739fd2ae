#include "command_support.h"

#include <fmt/format.h>

#include <vector>

#include "gantry/job/quantity.h"
#include "output.h"

namespace gantry::cli {
namespace {

// The value at a JSON pointer (RFC 6901), or null when a member or an
// element on the way is missing, a parent is of another type ("metadata:
// []": the server names the field), or the pointer is malformed.
// nlohmann's contains() walks it without throwing; value(json_pointer)
// threw and caught for every absent member, and a table of thousands of
// jobs, most without a cluster, paid for each.
const nlohmann::json* PointerAt(const nlohmann::json& j, const char* pointer) {
  nlohmann::json::json_pointer at;
  try {
    at = nlohmann::json::json_pointer(pointer);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
  return j.contains(at) ? &j[at] : nullptr;
}

}  // namespace

std::string InUnits(const std::string& quantity) {
  auto milli = ParseQuantityMilli(quantity);
  if (!milli.ok() || *milli < 0 || quantity.find('i') != std::string::npos) return quantity;
  std::string out = fmt::format("{}.{:03d}", *milli / 1000, *milli % 1000);
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

std::string Str(const nlohmann::json& j, const char* pointer, const std::string& fallback) {
  const nlohmann::json* v = PointerAt(j, pointer);
  if (v == nullptr) return fallback;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number()) return v->dump();
  return fallback;
}

std::string NamespaceOf(const CommonFlags& flags) { return flags.ns.empty() ? "default" : flags.ns; }

std::unique_ptr<ApiClient> Connect(const CommonFlags& flags, std::ostream& err, int* code) {
  std::string error;
  auto client = ApiClient::Create(flags.connection, &error);
  if (!client) {
    err << "error: " << error << "\n";
    *code = kExitUsage;
  }
  return client;
}

std::string JobPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + UrlEncode(ns) + "/jobs/" + UrlEncode(name);
}

std::optional<nlohmann::json> Fetch(ApiClient& api, const std::string& path, std::ostream& err, int* code) {
  ApiResult r = api.Call("GET", path);
  if (r.exit_code != kExitOk) {
    err << r.error << "\n";
    *code = r.exit_code;
    return std::nullopt;
  }
  return std::move(r.body);
}

bool PrintStructured(const CommonFlags& flags, const nlohmann::json& body, std::ostream& out) {
  OutputFormat format;
  ParseOutputFormat(flags.output, &format);
  if (format == OutputFormat::kTable) return false;
  PrintObject(out, body, format);
  return true;
}

void PrintEvents(std::ostream& out, const nlohmann::json& items, std::size_t last, const std::string& indent) {
  std::vector<std::vector<std::string>> rows;
  const std::size_t start = items.size() > last ? items.size() - last : 0;
  for (std::size_t i = start; i < items.size(); ++i) {
    const auto& e = items[i];
    rows.push_back({indent + AgeOf(e.value("time", "")), e.value("type", ""), e.value("reason", ""),
                    e.value("cluster", ""), e.value("message", "")});
  }
  PrintTable(out, {indent + "AGE", "TYPE", "REASON", "CLUSTER", "MESSAGE"}, rows);
}

}  // namespace gantry::cli
