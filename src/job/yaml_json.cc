// YAML -> JSON, typing plain scalars as kubectl does.
//
// yaml-cpp keeps every scalar as text; its tag tells plain ("?") from quoted
// or block ("!") scalars. kubectl reads YAML with sigs.k8s.io/yaml over
// go-yaml v2, whose integers follow YAML 1.1, so gantry reads a document as
// the cluster would have read it from `kubectl apply -f`:
//   null:  null Null NULL ~ (and empty)      bool: true/false (3 spellings)
//   int:   a scalar starting with a digit or a sign, underscores dropped:
//          [-+]?[0-9]+ decimal, [-+]?0[0-7]+ OCTAL (`defaultMode: 0440` is
//          288), [-+]?0[xX][0-9a-fA-F]+, [-+]?0[oO][0-7]+, [-+]?0[bB][01]+
//   float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
// A leading 0 followed by digits that are not all octal (`089`) is refused:
// go-yaml reads it as the float 89, YAML 1.1 proper as the string "089" and
// YAML 1.2 as the integer 89, so no reading is safe to guess.
// .inf and .nan have no JSON form and are refused. "yes"/"on" stay strings
// (kubectl reads them as booleans; a string is what a user who wrote them
// in a string field meant). Merge keys ("<<") are not expanded.
#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "gantry/common/cut_text.h"
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

// Where the quoted string that starts at text[at] (its quote) closes:
// the index of the closing quote, or npos.
std::size_t QuoteEnd(std::string_view text, std::size_t at) {
  const char quote = text[at];
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escaped character
    } else if (text[i] == quote) {
      if (quote == '"' || i + 1 >= text.size() || text[i + 1] != '\'') return i;
      ++i;  // '' is a quote inside single quotes
    }
  }
  return std::string_view::npos;
}

// The line (from 0) of a quoted string that does not close on it, opened
// before the byte `error_at` and closed nowhere before it (`name:
// "train-1`): yaml-cpp reads on to the next quote, and reports an error far
// below. A quoted string that closes on a later line before error_at is
// passed over whole; lines of block scalars (| and >) are not read. Unset
// when there is none.
struct OpenQuoteLine {
  int line = 0;             // from 0
  std::string_view text;    // the line
  bool text_after = false;  // the string closes on the line, with more after its closing quote (`"x" y`)
};
std::optional<OpenQuoteLine> OpenQuoteBefore(std::string_view yaml, std::size_t error_at) {
  // Inside a block scalar: its lines are indented more than this (npos: none).
  std::size_t block_indent = std::string_view::npos;
  for (std::size_t start = 0; start < yaml.size() && start < error_at;) {
    std::size_t end = yaml.find('\n', start);
    if (end == std::string_view::npos) end = yaml.size();
    const std::size_t line_start = start;
    const std::string_view text = yaml.substr(start, end - start);
    start = end + 1;
    std::size_t at = text.find_first_not_of(' ');
    if (at == std::string_view::npos || text[at] == '\r') continue;
    if (block_indent != std::string_view::npos && at > block_indent) continue;
    block_indent = std::string_view::npos;
    if (text[at] == '#') continue;
    const std::size_t indent = at;
    // The value: after "- " (a list item) and after "key: ", if any.
    while (at != std::string_view::npos && text.compare(at, 2, "- ") == 0) at = text.find_first_not_of(' ', at + 2);
    if (at == std::string_view::npos) continue;
    if (text[at] != '"' && text[at] != '\'') {
      if (const std::size_t colon = text.find(": ", at); colon != std::string_view::npos) {
        at = text.find_first_not_of(' ', colon + 2);
        if (at == std::string_view::npos) continue;
      }
    }
    if (text[at] == '|' || text[at] == '>') block_indent = indent;
    if (text[at] != '"' && text[at] != '\'') continue;
    const std::size_t quote = line_start + at;
    const std::size_t closes = QuoteEnd(yaml, quote);
    // Closed as a string is: at the end of its line, or before a comment, a
    // key's colon or a flow collection's comma or bracket. A quote with
    // more after it (`a"` of `queue: "a"`) is most likely another string's
    // opening one, that closed this one by mistake.
    std::size_t next = closes == std::string_view::npos ? closes : yaml.find_first_not_of(" \t", closes + 1);
    const bool closed_well = closes != std::string_view::npos &&
                             (next == std::string_view::npos || std::string_view("\r\n#:,]}").find(yaml[next]) !=
                                                                    std::string_view::npos);
    if (!closed_well || closes >= error_at) {
      const auto line = static_cast<int>(std::count(yaml.begin(), yaml.begin() + line_start, '\n'));
      const bool text_after = closes != std::string_view::npos && closes < end && !closed_well;
      return OpenQuoteLine{line, text, text_after};
    }
    // Closed, on this line or below: on from the line after the one it closes on.
    const std::size_t after = yaml.find('\n', closes);
    if (after == std::string_view::npos) break;
    start = std::max(start, after + 1);
  }
  return std::nullopt;
}

// OpenQuoteBefore's line as words to add to an error: " (line N opens ...)".
std::string OpenQuoteHint(const OpenQuoteLine& open) {
  std::string_view text = open.text;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  const char* what = open.text_after ? "has more after a quoted string's closing quote"
                                     : "opens a quoted string that does not close on that line";
  return fmt::format(" (line {} {}: {})", open.line + 1, what, CutText(text, 60));
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
bool IsBin(char c) { return c == '0' || c == '1'; }

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

// A plain integer, as go-yaml v2 reads one (strconv.ParseInt with base 0
// after dropping underscores). Sets out and returns true, or returns false
// when s is no integer; error is set when s is one that JSON cannot hold
// as read, or one that is ambiguous (a leading 0 before an 8 or a 9).
bool TypeInteger(std::string_view s, json& out, std::string& error) {
  const bool negative = !s.empty() && s[0] == '-';
  std::string_view body = s.substr(!s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0);
  int base = 10;
  std::string_view digits = body;
  bool (*valid)(char) = IsDec;
  if (body.size() > 1 && body[0] == '0') {
    const char p = body[1];
    if (p == 'x' || p == 'X') base = 16, valid = IsHex;
    if (p == 'o' || p == 'O') base = 8, valid = IsOct;
    if (p == 'b' || p == 'B') base = 2, valid = IsBin;
    if (base != 10) {
      digits = body.substr(2);
    } else if (AllOf(body, IsDec)) {
      if (!AllOf(body, IsOct)) {
        error = fmt::format("{} is ambiguous: a leading 0 makes an octal integer, but it has the digit 8 or 9 "
                            "(write it without the leading 0, or quote it)", s);
        return true;
      }
      base = 8, valid = IsOct;
    }
  }
  if (!AllOf(digits, valid)) return false;
  uint64_t magnitude = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  constexpr uint64_t kMinInt64Magnitude = uint64_t{1} << 63;
  if (ec == std::errc() && negative && magnitude <= kMinInt64Magnitude) {
    out = json(magnitude == kMinInt64Magnitude ? std::numeric_limits<int64_t>::min()
                                               : -static_cast<int64_t>(magnitude));
    return true;
  }
  // Same number types as nlohmann's JSON parser, so YAML and JSON compare equal.
  if (ec == std::errc() && !negative) {
    out = json(magnitude);
    return true;
  }
  if (base == 10) return false;  // beyond 64 bits: a float, as nlohmann does for JSON
  error = fmt::format("integer {} is out of range", s);
  return true;
}

// The typed value of a plain scalar, or nullopt with error set.
std::optional<json> TypePlainScalar(const std::string& s, std::string& error) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return json(true);
  if (s == "false" || s == "False" || s == "FALSE") return json(false);
  static constexpr std::string_view kNonJson[] = {".inf",  ".Inf",  ".INF",  "+.inf",
                                                  "+.Inf", "+.INF", "-.inf", "-.Inf",
                                                  "-.INF", ".nan",  ".NaN",  ".NAN"};
  for (std::string_view n : kNonJson) {
    if (s == n) return error = fmt::format("{} has no JSON representation", s), std::nullopt;
  }
  // Like go-yaml, only what starts like a number loses its underscores.
  std::string plain = s;
  if (IsDec(s[0]) || s[0] == '-' || s[0] == '+') std::erase(plain, '_');
  json number;
  if (TypeInteger(plain, number, error)) {
    if (!error.empty()) return std::nullopt;
    return number;
  }
  if (IsCoreFloat(plain)) {
    std::string_view f = plain[0] == '+' ? std::string_view(plain).substr(1) : plain;
    double d = 0;
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), d);
    if (ec != std::errc() || !std::isfinite(d)) {
      return error = fmt::format("number {} is out of range", s), std::nullopt;
    }
    return json(d);
  }
  return json(s);
}

class Converter {
 public:
  explicit Converter(std::string_view source) : source_(source) {}
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
  std::string_view source_;  // the text the nodes were parsed from
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
    // yaml-cpp takes a quoted string that never closes to the end of the
    // document (its keys and values into the string) without a word.
    if (tag == "!" && node.Mark().pos >= 0) {
      const auto at = static_cast<std::size_t>(node.Mark().pos);
      if (at < source_.size() && (source_[at] == '"' || source_[at] == '\'') &&
          QuoteEnd(source_, at) == std::string_view::npos) {
        return Fail(node, "a quoted string that never closes (yaml-cpp read the rest of the document into it)");
      }
    }
    bool typed = tag == "?" || tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
                 tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null";
    if (!typed) return node.Scalar();  // quoted, block, !!str or an application tag
    std::string msg;
    std::optional<json> v = TypePlainScalar(node.Scalar(), msg);
    if (!v) return Fail(node, msg);
    return *std::move(v);
  }

  // A plain "<<" key: a merge (YAML 1.1's merge key, which kubectl's
  // reader, go-yaml, takes too). A quoted one is an ordinary key. The map's
  // own keys win wherever they are written, as the merge key's spec has it
  // (go-yaml v2 lets a key written before the "<<" be overridden by it; with
  // "<<" first, as it is usually written, both agree), and a second "<<" in
  // one map is refused rather than one of them dropped.
  static bool IsMergeKey(const YAML::Node& key) {
    return key.IsScalar() && key.Scalar() == "<<" && (key.Tag() == "?" || key.Tag() == "tag:yaml.org,2002:merge");
  }

  json Map(const YAML::Node& node, int depth) {
    json out = json::object();
    // The maps a merge key brings in, in order: a key of the map itself
    // wins over any of theirs, and an earlier one's over a later one's.
    std::vector<json> merged;
    bool merge_seen = false;
    for (const auto& pair : node) {
      const YAML::Node& key = pair.first;
      if (IsMergeKey(key)) {
        if (merge_seen) return Fail(key, "duplicate key \"<<\"");
        merge_seen = true;
        json value = Convert(pair.second, depth + 1);
        if (error) return nullptr;
        if (value.is_array()) {
          for (json& m : value) {
            if (!m.is_object()) return Fail(pair.second, "a merge (<<) takes a map or a list of maps");
            merged.push_back(std::move(m));
          }
        } else if (value.is_object()) {
          merged.push_back(std::move(value));
        } else {
          return Fail(pair.second, "a merge (<<) takes a map or a list of maps");
        }
        continue;
      }
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
    for (json& m : merged) {
      for (auto& [k, v] : m.items()) {
        if (!out.contains(k)) out[k] = std::move(v);
      }
    }
    return out;
  }
};

}  // namespace

std::variant<std::vector<nlohmann::json>, DocumentError> YamlStreamToJson(std::string_view yaml,
                                                                         std::size_t max_documents) {
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
    if (docs.size() > max_documents) {
      return DocumentError{400,
                           max_documents == 1
                               ? fmt::format("expected exactly one YAML document, got {}", docs.size())
                               : fmt::format("expected at most {} YAML documents, got {}", max_documents, docs.size()),
                           {}};
    }
    if (docs.empty()) return DocumentError{400, "the YAML body holds no document", {}};
    std::vector<json> out;
    out.reserve(docs.size());
    for (const YAML::Node& doc : docs) {
      // One converter per document: each is held to a single job's limits.
      // Node positions are the stream's, so errors name the file's lines.
      Converter converter(yaml);
      out.push_back(converter.Convert(doc, 0));
      if (converter.error) return *converter.error;
    }
    return out;
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own limit, which it words "bad file"
    return YamlError(e.mark, "document is nested too deeply");
  } catch (const YAML::Exception& e) {
    DocumentError error = YamlError(e.mark, e.msg);
    if (e.mark.is_null()) return error;
    if (e.mark.pos >= 0) {
      auto open = OpenQuoteBefore(yaml, static_cast<std::size_t>(e.mark.pos));
      if (open) error.message += OpenQuoteHint(*open);
    }
    return error;
  } catch (const std::exception& e) {
    return DocumentError{400, fmt::format("invalid YAML: {}", e.what()), {}};
  }
}

std::variant<nlohmann::json, DocumentError> YamlToJson(std::string_view yaml) {
  auto docs = YamlStreamToJson(yaml, 1);
  if (auto* e = std::get_if<DocumentError>(&docs)) return std::move(*e);
  return std::move(std::get<std::vector<json>>(docs)[0]);
}

}  // namespace gantry
