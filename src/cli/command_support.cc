#include "command_support.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <vector>

#include "output.h"

namespace gantry::cli {
namespace {

// The value at a JSON pointer (RFC 6901), or null when a member or an
// element on the way is missing or a parent is of another type
// ("metadata: []": the server names the field). Walked here: nlohmann's
// value(json_pointer) throws and catches for every absent member, and a
// table of thousands of jobs, most without a cluster, paid for each.
const nlohmann::json* PointerAt(const nlohmann::json& j, std::string_view pointer) {
  const nlohmann::json* at = &j;
  while (!pointer.empty()) {
    if (pointer[0] != '/') return nullptr;
    pointer.remove_prefix(1);
    const std::size_t end = std::min(pointer.find('/'), pointer.size());
    std::string token(pointer.substr(0, end));
    pointer.remove_prefix(end);
    for (std::size_t t = token.find('~'); t != std::string::npos; t = token.find('~', t + 1)) {
      if (t + 1 >= token.size() || (token[t + 1] != '0' && token[t + 1] != '1')) return nullptr;
      token.replace(t, 2, token[t + 1] == '0' ? "~" : "/");
    }
    if (at->is_object()) {
      auto it = at->find(token);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array()) {
      std::size_t index = 0;
      auto [rest, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec != std::errc() || rest != token.data() + token.size() || token.empty() ||
          (token.size() > 1 && token[0] == '0') || index >= at->size()) {
        return nullptr;
      }
      at = &(*at)[index];
    } else {
      return nullptr;
    }
  }
  return at;
}

}  // namespace

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
