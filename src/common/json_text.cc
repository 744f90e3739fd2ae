#include "gantry/common/json_text.h"

#include <charconv>

namespace gantry {
namespace {

template <typename Int>
void AppendInt(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the bytes not yet appended
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (!NeedsEscape(c)) continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0x0f]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

void AppendJson(std::string& out, const nlohmann::json& value) {
  using V = nlohmann::json::value_t;
  switch (value.type()) {
    case V::null: out += "null"; return;
    case V::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case V::number_integer: AppendInt(out, value.get<nlohmann::json::number_integer_t>()); return;
    case V::number_unsigned: AppendInt(out, value.get<nlohmann::json::number_unsigned_t>()); return;
    case V::string: AppendJsonString(out, value.get_ref<const std::string&>()); return;
    case V::array: {
      out.push_back('[');
      bool first = true;
      for (const nlohmann::json& item : value.get_ref<const nlohmann::json::array_t&>()) {
        if (!first) out.push_back(',');
        first = false;
        AppendJson(out, item);
      }
      out.push_back(']');
      return;
    }
    case V::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : value.get_ref<const nlohmann::json::object_t&>()) {
        if (!first) out.push_back(',');
        first = false;
        AppendJsonString(out, key);
        out.push_back(':');
        AppendJson(out, item);
      }
      out.push_back('}');
      return;
    }
    default:
      // Floats (shortest round-trip form), binary, discarded: rare here, and
      // their exact text is nlohmann's to define.
      out += value.dump();
      return;
  }
}

void AppendJsonObject(std::string& out, const std::map<std::string, std::string>& map) {
  out.push_back('{');
  bool first = true;
  for (const auto& [key, value] : map) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, key);
    out.push_back(':');
    AppendJsonString(out, value);
  }
  out.push_back('}');
}

}  // namespace gantry
