#include "output.h"

#include <ctime>

#include <yaml-cpp/yaml.h>

#include "gantry/common/clock.h"
#include "gantry/common/cut_text.h"

namespace gantry::cli {
namespace {

void Emit(YAML::Emitter& e, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      // An empty one in flow style, beside its key ("labels: {}"), as
      // kubectl prints it; in block style it went on a line of its own.
      if (v.empty()) e << YAML::Flow;
      e << YAML::BeginMap;
      for (auto it = v.begin(); it != v.end(); ++it) {
        e << YAML::Key << it.key() << YAML::Value;
        Emit(e, it.value());
      }
      e << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      if (v.empty()) e << YAML::Flow;
      e << YAML::BeginSeq;
      for (const auto& x : v) Emit(e, x);
      e << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      // Quote strings a YAML reader would otherwise retype (numbers, booleans, null).
      bool retyped = s == "true" || s == "false" || s == "null" || s == "~" ||
                     s.find_first_not_of("0123456789.-+eE") == std::string::npos;
      if (retyped || s.empty()) e << YAML::DoubleQuoted;
      e << s;
      break;
    }
    case nlohmann::json::value_t::boolean: e << v.get<bool>(); break;
    case nlohmann::json::value_t::number_integer: e << v.get<int64_t>(); break;
    case nlohmann::json::value_t::number_unsigned: e << v.get<uint64_t>(); break;
    case nlohmann::json::value_t::number_float: e << v.get<double>(); break;
    default: e << YAML::Null; break;
  }
}

}  // namespace

bool ParseOutputFormat(const std::string& text, OutputFormat* out) {
  if (text == "table" || text == "wide" || text.empty()) *out = OutputFormat::kTable;
  else if (text == "json") *out = OutputFormat::kJson;
  else if (text == "yaml") *out = OutputFormat::kYaml;
  else return false;
  return true;
}

void PrintTable(std::ostream& out, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& raw_rows) {
  // Cells hold what the server says, some of it a cluster's or a job's
  // words: one cell, one line, and nothing that drives the terminal.
  std::vector<std::vector<std::string>> rows;
  rows.reserve(raw_rows.size());
  for (const auto& raw : raw_rows) {
    std::vector<std::string>& row = rows.emplace_back();
    for (const std::string& cell : raw) row.push_back(CleanText(cell));
  }
  std::vector<std::size_t> width(headers.size());
  for (std::size_t i = 0; i < headers.size(); ++i) width[i] = headers[i].size();
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      text += cells[i];
      if (i + 1 < cells.size()) text += std::string(width[i] - cells[i].size() + 3, ' ');
    }
    out << text << "\n";
  };
  line(headers);
  for (const auto& row : rows) line(row);
}

std::string ToYaml(const nlohmann::json& value) {
  YAML::Emitter e;
  Emit(e, value);
  return std::string(e.c_str()) + "\n";
}

void PrintObject(std::ostream& out, const nlohmann::json& value, OutputFormat format) {
  if (format == OutputFormat::kYaml) {
    out << ToYaml(value);
  } else {
    out << value.dump(2) << "\n";
  }
}

std::string AgeOf(const std::string& rfc3339) {
  std::tm tm{};
  if (!strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return "<unknown>";
  int64_t then = static_cast<int64_t>(timegm(&tm)) * 1000;
  return FormatAge(SystemClock().NowMillis() - then);
}

}  // namespace gantry::cli
