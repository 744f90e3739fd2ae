#include "gantry/common/cut_text.h"

namespace gantry {

std::string CutText(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return CleanText(text);
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a continuation byte
  return CleanText(text.substr(0, end)) + "...";
}

std::string CleanText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '\n' || b == '\r' || b == '\t') {
      out += ' ';
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

}  // namespace gantry
