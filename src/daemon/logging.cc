#include "gantry/daemon/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "gantry/common/cut_text.h"

namespace gantry {
namespace {

// %* in a pattern: the message as a JSON string literal (quoted, escaped).
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string text = nlohmann::json(std::string(msg.payload.data(), msg.payload.size()))
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

// %& in a pattern: the message with its control characters made harmless
// (CleanText): whatever a message quotes (a job's or a cluster's words,
// stored before they were refused or cleaned at their source), one log
// entry stays one line, and no escape sequence reaches a terminal.
class CleanMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    if (!MayHoldControlText(payload)) {
      dest.append(payload.data(), payload.data() + payload.size());
      return;
    }
    const std::string text = CleanText(payload);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<CleanMessageFlag>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> TextLogFormatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<CleanMessageFlag>('&').set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %&");
  return formatter;
}

void SetUpLogging(const std::string& format, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("gantry");
  spdlog::set_default_logger(logger);
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","msg":%*})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_formatter(TextLogFormatter());
  }
  logger->set_level(spdlog::level::from_str(level));
  // Warnings and errors reach the journal at once; the rest within a second.
  logger->flush_on(spdlog::level::warn);
  spdlog::flush_every(std::chrono::seconds(1));
}

}  // namespace gantry
