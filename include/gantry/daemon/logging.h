// Log set-up for the daemon: spdlog to stderr (journald adds timestamps and
// keeps it), as text or as one JSON object per line.
#pragma once

#include <string>

namespace gantry {

// format: "text" | "json"; level: "trace".."error".
void SetUpLogging(const std::string& format, const std::string& level);

}  // namespace gantry
