#include "gantry/common/cut_text.h"

namespace gantry {

std::string CutText(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return std::string(text);
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a continuation byte
  return std::string(text.substr(0, end)) + "...";
}

}  // namespace gantry
