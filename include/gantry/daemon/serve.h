// `gantry serve`: builds every component, runs until SIGTERM/SIGINT, and
// tears down in reverse. The one wiring function of the daemon.
#pragma once

#include <string>

namespace gantry {

struct ServeFlags {
  std::string config_path;   // "" = /etc/gantry/gantry.yaml if it exists
  std::string data_dir;      // overrides the config
  std::string listen;        // overrides the config
  std::string log_format;    // overrides the config
  std::string log_level;     // overrides the config
  std::string clusters_dir;  // overrides the config
  std::string ready_file;    // written with "ADDR:PORT" once serving (tests, scripts)
};

// Returns the process exit code.
int RunServe(const ServeFlags& flags);

}  // namespace gantry
