// Log set-up for the daemon: spdlog to stderr (journald adds timestamps and
// keeps it), as text or as one JSON object per line.
#pragma once

#include <memory>
#include <string>

#include <spdlog/formatter.h>

namespace gantry {

// format: "text" | "json"; level: "trace".."error".
void SetUpLogging(const std::string& format, const std::string& level);

// The text format's: "TIME LEVEL MESSAGE", the message's control characters
// made harmless (CleanText), so that an entry is one line whatever it quotes.
std::unique_ptr<spdlog::formatter> TextLogFormatter();

}  // namespace gantry
