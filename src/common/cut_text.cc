#include "gantry/common/cut_text.h"

namespace gantry {

std::string CutText(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return CleanText(text);
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a continuation byte
  return CleanText(text.substr(0, end)) + "...";
}

namespace {

// The byte at i, as unsigned; 0 past the end.
unsigned char At(std::string_view text, std::size_t i) {
  return i < text.size() ? static_cast<unsigned char>(text[i]) : 0;
}

// Bytes of a three-byte character at i that CleanText replaces: 0 when it
// keeps it; else the character's length, and *line tells a line or
// paragraph separator (a space) from a bidi control (a '?').
std::size_t FormatCharAt(std::string_view text, std::size_t i, bool* line) {
  const unsigned char b0 = At(text, i), b1 = At(text, i + 1), b2 = At(text, i + 2);
  if (b0 == 0xD8 && b1 == 0x9C) return *line = false, 2;  // U+061C ARABIC LETTER MARK
  if (b0 != 0xE2) return 0;
  *line = b1 == 0x80 && (b2 == 0xA8 || b2 == 0xA9);  // U+2028, U+2029
  const bool bidi = (b1 == 0x80 && (b2 == 0x8E || b2 == 0x8F || (b2 >= 0xAA && b2 <= 0xAE))) ||  // LRM, RLM, LRE..RLO
                    (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9);  // LRI, RLI, FSI, PDI
  return *line || bidi ? 3 : 0;
}

}  // namespace

std::string CleanText(std::string_view text) {
  if (!MayHoldControlText(text)) return std::string(text);  // most text: a copy, no byte-by-byte rewrite
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    bool line = false;
    if (b == '\n' || b == '\r' || b == '\t') {
      out += ' ';
    } else if (const std::size_t n = b >= 0xD8 ? FormatCharAt(text, i, &line) : 0; n > 0) {
      out += line ? ' ' : '?';
      i += n - 1;
    } else if (b < 0x20 || b == 0x7f) {
      out += '?';
    } else if (b == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out += '?';  // U+0080..U+009F, the C1 controls (0x9B: an escape sequence's start)
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool MayHoldControlText(std::string_view text) {
  // Only these bytes begin what CleanText changes (C0 and DEL; C1 controls
  // after 0xC2; U+061C after 0xD8; U+200E..U+2069 after 0xE2).
  for (const unsigned char c : text) {
    if (c < 0x20 || c == 0x7f || c == 0xc2 || c == 0xd8 || c == 0xe2) return true;
  }
  return false;
}

bool HasControlText(std::string_view text) { return MayHoldControlText(text) && CleanText(text) != text; }

}  // namespace gantry
