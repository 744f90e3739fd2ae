#include "gantry/common/json_scan.h"

#include <cstring>

namespace gantry {
namespace {

// A cursor over the text. Every step checks the end: the text may be cut.
class Walk {
 public:
  explicit Walk(std::string_view text) : t_(text) {}

  bool AtEnd() const { return i_ >= t_.size(); }
  char Peek() const { return AtEnd() ? '\0' : t_[i_]; }
  void Next() { ++i_; }
  void SkipSpace() {
    while (!AtEnd() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }

  // The string whose opening quote is at the cursor, moved past it: its
  // bytes between the quotes as written, and whether an escape is among
  // them. False when it does not end. memchr finds the quotes and
  // backslashes (most of a pod template's bytes are in strings), each byte
  // looked at once.
  bool String(std::string_view* raw, bool* escaped) {
    const char* base = t_.data();
    const std::size_t n = t_.size();
    std::size_t pos = i_ + 1;
    std::size_t quote = std::string_view::npos;
    *escaped = false;
    while (true) {
      if (quote == std::string_view::npos || quote < pos) {  // none yet, or the last one was escaped
        if (pos > n) return false;
        const void* q = std::memchr(base + pos, '"', n - pos);
        if (q == nullptr) return false;
        quote = static_cast<const char*>(q) - base;
      }
      const void* b = std::memchr(base + pos, '\\', quote - pos);
      if (b == nullptr) break;
      *escaped = true;
      pos = static_cast<std::size_t>(static_cast<const char*>(b) - base) + 2;  // past the escaped byte
    }
    *raw = t_.substr(i_ + 1, quote - i_ - 1);
    i_ = quote + 1;
    return true;
  }

  // Moves past the value at the cursor. False when the text ends first or
  // holds no value there. Brackets are counted, not matched.
  bool SkipValue() {
    std::string_view raw;
    bool escaped;
    const char c = Peek();
    if (c == '"') return String(&raw, &escaped);
    if (c != '{' && c != '[') {  // a number, true, false or null
      const std::size_t start = i_;
      while (!AtEnd() && std::strchr(",}] \t\n\r", t_[i_]) == nullptr) ++i_;
      return i_ > start;
    }
    int depth = 0;
    while (!AtEnd()) {
      const char d = t_[i_];
      if (d == '"') {
        if (!String(&raw, &escaped)) return false;
        continue;
      }
      if (d == '{' || d == '[') {
        ++depth;
      } else if ((d == '}' || d == ']') && --depth == 0) {
        ++i_;
        return true;
      }
      ++i_;
    }
    return false;
  }

 private:
  std::string_view t_;
  std::size_t i_ = 0;
};

enum class Member { kAt, kNone, kBad };

// In the object whose '{' is at the cursor, the member named key: kAt with
// the cursor at its value.
Member FindMember(Walk& w, std::string_view key) {
  w.Next();
  w.SkipSpace();
  if (w.Peek() == '}') return Member::kNone;
  while (true) {
    if (w.Peek() != '"') return Member::kBad;
    std::string_view name;
    bool escaped;
    if (!w.String(&name, &escaped) || escaped) return Member::kBad;
    w.SkipSpace();
    if (w.Peek() != ':') return Member::kBad;
    w.Next();
    w.SkipSpace();
    if (name == key) return Member::kAt;
    if (!w.SkipValue()) return Member::kBad;
    w.SkipSpace();
    if (w.Peek() == '}') return Member::kNone;
    if (w.Peek() != ',') return Member::kBad;
    w.Next();
    w.SkipSpace();
  }
}

}  // namespace

ScannedString ScanJsonString(std::string_view text, std::initializer_list<std::string_view> path) {
  using Outcome = ScannedString::Outcome;
  Walk w(text);
  w.SkipSpace();
  // A root that is not an object is left to the parser, which tells JSON
  // from what is not.
  if (w.Peek() != '{' || path.size() == 0) return {Outcome::kUnsure, {}};
  for (std::string_view key : path) {
    if (w.Peek() != '{') return {w.AtEnd() ? Outcome::kUnsure : Outcome::kAbsent, {}};
    switch (FindMember(w, key)) {
      case Member::kAt: break;
      case Member::kNone: return {Outcome::kAbsent, {}};
      case Member::kBad: return {Outcome::kUnsure, {}};
    }
  }
  if (w.Peek() != '"') return {w.AtEnd() ? Outcome::kUnsure : Outcome::kAbsent, {}};
  std::string_view value;
  bool escaped;
  if (!w.String(&value, &escaped) || escaped) return {Outcome::kUnsure, {}};
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20) return {Outcome::kUnsure, {}};  // not JSON: the parser says so
  }
  return {Outcome::kFound, value};
}

}  // namespace gantry
