// The default logger's lines, captured for a test to read what an operator
// would be told.
#pragma once

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace gantry::testing {

// The default logger's lines ("LEVEL text") while it lives. Read Text()
// once the threads that log have stopped.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto capture = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    capture->set_pattern("%l %v");
    spdlog::set_default_logger(capture);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string Text() const { return log_.str(); }

 private:
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> previous_;
};

// How many times needle is in text.
inline std::size_t Occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace gantry::testing
