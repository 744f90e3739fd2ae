// The client commands. Each returns the process exit code and writes to
// out/err; none of them reads the environment (cli_app.cc does).
#pragma once

#include <ostream>
#include <string>

#include "api_client.h"
#include "output.h"

namespace gantry::cli {

struct CommonFlags {
  ConnectionFlags connection;
  std::string output = "table";
  std::string ns;  // -n; "" = the document's or "default"
};

// A job named NAMESPACE/NAME on the command line: `name` becomes NAME and
// `ns` NAMESPACE (kept when -n gave the same). "" when fine, else why not.
std::string SplitJobRef(std::string& name, std::string& ns);

struct WaitFlags {
  bool wait = false;
  int timeout_seconds = 0;  // 0 = no limit
  int poll_ms = 1000;
};

int Submit(const CommonFlags& flags, const std::string& file, const WaitFlags& wait,
           std::ostream& out, std::ostream& err);
// watch_timeout_seconds: with watch, give up after this long (0 = never).
int Status(const CommonFlags& flags, const std::string& name, bool watch, int watch_timeout_seconds,
           std::ostream& out, std::ostream& err);
// cluster: only the jobs leased to it ("" = any).
int List(const CommonFlags& flags, bool all_namespaces, const std::string& phase, const std::string& queue,
         const std::string& cluster, std::ostream& out, std::ostream& err);
int Cancel(const CommonFlags& flags, const std::string& name, bool purge, const WaitFlags& wait,
           std::ostream& out, std::ostream& err);
// name "": every cluster; else that one.
int Clusters(const CommonFlags& flags, const std::string& name, std::ostream& out, std::ostream& err);
int Explain(const CommonFlags& flags, const std::string& name, std::ostream& out, std::ostream& err);
// Every event of a job, oldest first.
// tail > 0: only the last so many.
int Events(const CommonFlags& flags, const std::string& name, int tail, std::ostream& out, std::ostream& err);
// POST /api/v1/clusters:reload: the daemon reads its cluster inventory again
// (an admin token); the files it refused, each with why.
int Reload(const CommonFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace gantry::cli
