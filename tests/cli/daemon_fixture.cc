#include "daemon_fixture.h"

#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <filesystem>

namespace gantry::testing {
namespace {
std::atomic<int> g_daemons{0};
}

Daemon::Daemon(const std::string& data_dir, const std::string& log_dir, std::vector<std::string> extra_args,
               std::vector<std::string> launcher) {
  std::string ready = log_dir + "/ready-" + std::to_string(g_daemons++);
  std::filesystem::remove(ready);
  std::vector<std::string> argv = {GantryBin(), "serve", "--data-dir", data_dir, "--listen",
                                   "127.0.0.1:0", "--ready-file", ready};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.insert(argv.begin(), launcher.begin(), launcher.end());
  process_ = std::make_unique<Process>(argv, log_dir);
  if (WaitFor([&] { return !ReadFile(ready).empty() || !process_->Running(); }, std::chrono::seconds(20))) {
    std::string addr = ReadFile(ready);
    while (!addr.empty() && (addr.back() == '\n' || addr.back() == '\r')) addr.pop_back();
    if (!addr.empty()) url_ = "http://" + addr;
  }
}

Daemon::~Daemon() {
  if (process_->Running()) {
    process_->Signal(SIGTERM);
    process_->Wait(std::chrono::seconds(15));
  }
}

std::unique_ptr<http::Server> StartedServer(http::Handler handler) {
  http::ServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  auto server = std::make_unique<http::Server>(options, std::move(handler));
  REQUIRE(server->Start().ok());
  return server;
}

std::string UrlOf(const http::Server& server) { return "http://127.0.0.1:" + std::to_string(server.port()); }

RunResult CliAgainst(const std::string& body, std::vector<std::string> args, int status) {
  auto server = StartedServer([&](http::Request, http::Responder respond) {
    respond(http::JsonResponse(status, body));
  });
  RunResult r = Cli(UrlOf(*server), std::move(args));
  server->Stop(std::chrono::seconds(1));
  return r;
}

RunResult Cli(const std::string& url, std::vector<std::string> args, std::map<std::string, std::string> env) {
  std::vector<std::string> argv = {GantryBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  env["GANTRY_SERVER"] = url;
  return Run(argv, env);
}

}  // namespace gantry::testing
