// YAML -> JSON with YAML 1.2 core-schema typing of plain scalars.
//
// yaml-cpp keeps every scalar as text; its tag tells plain ("?") from quoted
// or block ("!") scalars. Plain scalars are typed here by the core schema:
//   null:  null Null NULL ~ (and empty)      bool: true/false (3 spellings)
//   int:   [-+]?[0-9]+  0o[0-7]+  0x[0-9a-fA-F]+
//   float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
// .inf and .nan have no JSON form and are refused. "yes"/"on" stay strings
// (YAML 1.1 booleans are not 1.2 booleans). Merge keys ("<<") are not expanded.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

#include "gantry/job/job_document.h"

namespace gantry {
namespace {

using nlohmann::json;

// Nesting deeper than any Kubernetes object; also stops alias cycles.
constexpr int kMaxDepth = 128;
// Aliases can expand a small text exponentially ("billion laughs"): in
// nodes, and in bytes (one large scalar named by many aliases).
constexpr std::size_t kMaxNodes = 1'000'000;
constexpr std::size_t kMaxBytes = 16 << 20;

// The offset of the first byte that is not part of well-formed UTF-8 (RFC
// 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or npos.
// yaml-cpp passes such bytes through; JSON text must not hold them.
std::size_t FirstInvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    const auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < 0x80 || b > 0xBF) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

// Where an offset is, as yaml-cpp marks a node (from 0; column in bytes).
YAML::Mark MarkAt(std::string_view s, std::size_t offset) {
  YAML::Mark mark;
  std::size_t start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (s[i] == '\n') ++mark.line, start = i + 1;
  }
  mark.pos = static_cast<int>(offset);
  mark.column = static_cast<int>(offset - start);
  return mark;
}

DocumentError YamlError(const YAML::Mark& mark, std::string_view msg) {
  if (mark.is_null()) return {400, fmt::format("invalid YAML: {}", msg), {}};
  return {400,
          fmt::format("invalid YAML: line {}, column {}: {}", mark.line + 1, mark.column + 1, msg),
          {}};
}

bool AllOf(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}
bool IsDec(char c) { return c >= '0' && c <= '9'; }
bool IsOct(char c) { return c >= '0' && c <= '7'; }
bool IsHex(char c) { return IsDec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool IsCoreFloat(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  std::size_t i = 0;
  while (i < s.size() && IsDec(s[i])) ++i;
  bool int_part = i > 0;
  bool frac_part = false;
  if (i < s.size() && s[i] == '.') {
    std::size_t j = ++i;
    while (i < s.size() && IsDec(s[i])) ++i;
    frac_part = i > j;
  }
  if (!int_part && !frac_part) return false;
  if (i == s.size()) return true;
  if (s[i] != 'e' && s[i] != 'E') return false;
  std::string_view exp = s.substr(i + 1);
  if (!exp.empty() && (exp[0] == '-' || exp[0] == '+')) exp.remove_prefix(1);
  return AllOf(exp, IsDec);
}

// The typed value of a plain scalar, or nullopt with error set.
std::optional<json> TypePlainScalar(const std::string& s, std::string& error) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return json(true);
  if (s == "false" || s == "False" || s == "FALSE") return json(false);
  std::string_view v = s;
  int base = 0;
  if (v.starts_with("0x") && AllOf(v.substr(2), IsHex)) base = 16;
  if (v.starts_with("0o") && AllOf(v.substr(2), IsOct)) base = 8;
  if (base != 0) {
    uint64_t u = 0;
    auto [p, ec] = std::from_chars(v.data() + 2, v.data() + v.size(), u, base);
    if (ec != std::errc())
      return error = fmt::format("integer {} is out of range", s), std::nullopt;
    return json(u);
  }
  bool negative = !v.empty() && v[0] == '-';
  std::string_view digits = v.substr(!v.empty() && (v[0] == '-' || v[0] == '+') ? 1 : 0);
  if (AllOf(digits, IsDec)) {
    // Same number types as nlohmann's JSON parser, so YAML and JSON compare equal.
    if (negative) {
      int64_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec == std::errc()) return json(n);
    } else {
      uint64_t u = 0;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u);
      if (ec == std::errc()) return json(u);
    }
    // Too large for 64 bits: a float, as nlohmann does for JSON.
  }
  if (IsCoreFloat(v) || AllOf(digits, IsDec)) {
    std::string_view f = v[0] == '+' ? v.substr(1) : v;
    double d = 0;
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), d);
    if (ec != std::errc() || !std::isfinite(d)) {
      return error = fmt::format("number {} is out of range", s), std::nullopt;
    }
    return json(d);
  }
  static constexpr std::string_view kNonJson[] = {".inf",  ".Inf",  ".INF",  "+.inf",
                                                  "+.Inf", "+.INF", "-.inf", "-.Inf",
                                                  "-.INF", ".nan",  ".NaN",  ".NAN"};
  for (std::string_view n : kNonJson) {
    if (v == n) return error = fmt::format("{} has no JSON representation", s), std::nullopt;
  }
  return json(s);
}

class Converter {
 public:
  std::optional<DocumentError> error;

  json Convert(const YAML::Node& node, int depth) {
    if (error) return nullptr;
    if (depth > kMaxDepth) return Fail(node, "document is nested too deeply");
    if (++nodes_ > kMaxNodes) return Fail(node, "document has too many nodes (alias expansion?)");
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        if (!Spend(node, node.Scalar().size())) return nullptr;
        return Scalar(node);
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const YAML::Node& item : node) out.push_back(Convert(item, depth + 1));
        return out;
      }
      case YAML::NodeType::Map:
        return Map(node, depth);
    }
    return nullptr;
  }

 private:
  std::size_t nodes_ = 0;
  std::size_t bytes_ = 0;

  // Counts the text a node adds to the converted document.
  bool Spend(const YAML::Node& node, std::size_t bytes) {
    bytes_ += bytes;
    if (bytes_ <= kMaxBytes) return true;
    Fail(node, fmt::format("document expands to more than {} MiB of text (alias expansion?)", kMaxBytes >> 20));
    return false;
  }

  json Fail(const YAML::Node& node, std::string_view msg) {
    if (!error) error = YamlError(node.Mark(), msg);
    return nullptr;
  }

  json Scalar(const YAML::Node& node) {
    const std::string& tag = node.Tag();
    bool typed = tag == "?" || tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
                 tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null";
    if (!typed) return node.Scalar();  // quoted, block, !!str or an application tag
    std::string msg;
    std::optional<json> v = TypePlainScalar(node.Scalar(), msg);
    if (!v) return Fail(node, msg);
    return *std::move(v);
  }

  json Map(const YAML::Node& node, int depth) {
    json out = json::object();
    for (const auto& pair : node) {
      const YAML::Node& key = pair.first;
      std::string name;
      if (key.IsNull()) {
        name = "null";
      } else if (key.IsScalar()) {
        name = key.Scalar();
      } else {
        return Fail(key, "map keys must be scalars");
      }
      if (!Spend(key, name.size())) return nullptr;
      if (out.contains(name)) return Fail(key, fmt::format("duplicate key \"{}\"", name));
      out[name] = Convert(pair.second, depth + 1);
      if (error) return nullptr;
    }
    return out;
  }
};

}  // namespace

std::variant<nlohmann::json, DocumentError> YamlToJson(std::string_view yaml) {
  if (const std::size_t bad = FirstInvalidUtf8(yaml); bad != std::string_view::npos) {
    return YamlError(MarkAt(yaml, bad), fmt::format("byte 0x{:02X} is not valid UTF-8 (the text must be UTF-8)",
                                                    static_cast<unsigned char>(yaml[bad])));
  }
  std::vector<YAML::Node> docs;
  try {
    for (YAML::Node& doc : YAML::LoadAll(std::string(yaml))) {
      // An empty document ("---" at the end of a file) is not a second document.
      if (!doc.IsNull()) docs.push_back(doc);
    }
    if (docs.size() > 1) {
      return DocumentError{
          400, fmt::format("expected exactly one YAML document, got {}", docs.size()), {}};
    }
    if (docs.empty()) return DocumentError{400, "the YAML body holds no document", {}};
    Converter converter;
    json out = converter.Convert(docs[0], 0);
    if (converter.error) return *converter.error;
    return out;
  } catch (const YAML::Exception& e) {
    return YamlError(e.mark, e.msg);
  } catch (const std::exception& e) {
    return DocumentError{400, fmt::format("invalid YAML: {}", e.what()), {}};
  }
}

}  // namespace gantry
