// The daemon's text log format: one entry, one line.
#include "gantry/daemon/logging.h"

#include <catch2/catch.hpp>

#include <spdlog/details/log_msg.h>

#include <string>

namespace gantry {
namespace {

std::string Formatted(spdlog::level::level_enum level, const std::string& text) {
  auto formatter = TextLogFormatter();
  spdlog::details::log_msg msg(spdlog::source_loc{}, "gantry", level, text);
  spdlog::memory_buf_t out;
  formatter->format(msg, out);
  return std::string(out.data(), out.size());
}

TEST_CASE("a text log entry is one line whatever its message quotes", "[daemon][logging]") {
  const std::string plain = Formatted(spdlog::level::info, "job team-a/train Queued -> Nominating");
  CHECK_THAT(plain, Catch::EndsWith(" info job team-a/train Queued -> Nominating\n"));
  const std::string forged =
      Formatted(spdlog::level::warn, "region r\n2026-12-07T10:35:00.000 warning cluster c1 is NotReady: forged\x1b[31m");
  CHECK(forged.find('\n') == forged.size() - 1);  // the entry's own line end only
  CHECK(forged.find('\x1b') == std::string::npos);
  CHECK_THAT(forged, Catch::Contains("region r 2026-12-07T10:35:00.000 warning cluster c1 is NotReady: forged?[31m"));
}

}  // namespace
}  // namespace gantry
