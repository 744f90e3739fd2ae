// Human and machine output for the CLI: kubectl-like aligned tables, and the
// raw objects as JSON or YAML (-o json|yaml).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::cli {

enum class OutputFormat { kTable, kJson, kYaml };

// Parses -o; false for an unknown format.
bool ParseOutputFormat(const std::string& text, OutputFormat* out);

// Columns padded to the widest cell plus three spaces, headers in capitals.
void PrintTable(std::ostream& out, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows);

std::string ToYaml(const nlohmann::json& value);
void PrintObject(std::ostream& out, const nlohmann::json& value, OutputFormat format);

// Age of an RFC 3339 timestamp relative to now ("3m12s"); "<unknown>" if unparseable.
std::string AgeOf(const std::string& rfc3339);

}  // namespace gantry::cli
