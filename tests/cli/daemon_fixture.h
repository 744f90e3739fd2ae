// A real `gantry serve` process on a free loopback port with its own data
// directory, for end-to-end tests of the daemon and the CLI.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gantry/http/server.h"
#include "process.h"
#include "test_support.h"

namespace gantry::testing {

class Daemon {
 public:
  // Starts gantry serve with data in data_dir (created if needed) and waits
  // until it is serving. extra_args go after "serve"; launcher, if any,
  // runs the daemon (e.g. {"/usr/bin/prlimit", "--nofile=64:64"}).
  Daemon(const std::string& data_dir, const std::string& log_dir, std::vector<std::string> extra_args = {},
         std::vector<std::string> launcher = {});
  ~Daemon();

  const std::string& url() const { return url_; }
  Process& process() { return *process_; }
  bool ready() const { return !url_.empty(); }

 private:
  std::unique_ptr<Process> process_;
  std::string url_;
};

inline std::string GantryBin() { return std::string(GANTRY_BIN_DIR "/gantry"); }

// Runs the gantry CLI against url with args.
RunResult Cli(const std::string& url, std::vector<std::string> args,
              std::map<std::string, std::string> env = {});

// A daemon's stand-in: an HTTP server on a free loopback port that answers
// with handler, started; UrlOf gives its URL for Cli.
std::unique_ptr<http::Server> StartedServer(http::Handler handler);
std::string UrlOf(const http::Server& server);

// `gantry ARGS` against a server that answers every request with body (and status).
RunResult CliAgainst(const std::string& body, std::vector<std::string> args, int status = 200);

}  // namespace gantry::testing
