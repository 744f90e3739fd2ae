// Helpers the client commands share (commands.cc, more_commands.cc).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "api_client.h"
#include "commands.h"

namespace gantry::cli {

// The string (or number, as text) at a JSON pointer of j; fallback when
// there is none, or a parent of another type.
std::string Str(const nlohmann::json& j, const char* pointer, const std::string& fallback = "");
// A Kubernetes quantity as a decimal number of its units ("1500m" -> "1.5",
// "384" -> "384"), so that the reserved and the nominal amounts of a
// column read in one unit; as given when it does not parse, or is in bytes
// ("64Gi" stays).
std::string InUnits(const std::string& quantity);
// -n, or "default".
std::string NamespaceOf(const CommonFlags& flags);
// The API client, or null with the error printed and *code set.
std::unique_ptr<ApiClient> Connect(const CommonFlags& flags, std::ostream& err, int* code);
std::string JobPath(const std::string& ns, const std::string& name);
// GETs path; on failure prints the error and sets *code. Returns the
// result's body only on success.
std::optional<nlohmann::json> Fetch(ApiClient& api, const std::string& path, std::ostream& err, int* code);
// Prints body as JSON or YAML when -o asks for it; false for table output.
bool PrintStructured(const CommonFlags& flags, const nlohmann::json& body, std::ostream& out);
// The last `last` of a job's events (items of GET .../events) as a table,
// each row indented by indent.
void PrintEvents(std::ostream& out, const nlohmann::json& items, std::size_t last, const std::string& indent);

}  // namespace gantry::cli
