#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "gantry/cli/cli.h"
#include "gantry/daemon/serve.h"

namespace gantry {
namespace {

std::string Env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

void AddConnectionFlags(CLI::App& app, cli::CommonFlags& f) {
  app.add_option("--server", f.connection.server, "gantry API URL (env GANTRY_SERVER)");
  app.add_option("--token", f.connection.token, "bearer token (env GANTRY_TOKEN)");
  app.add_option("--ca-file", f.connection.ca_file, "CA bundle for an https server (env GANTRY_CA_FILE)");
  app.add_option("--request-timeout", f.connection.timeout_seconds, "seconds to wait for the server")
      ->check(CLI::Range(1, 3600));
  app.add_option("-o,--output", f.output, "output format: table, json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"gantry: a global job dispatcher for fleets of Kubernetes clusters running Kueue"};
  app.set_version_flag("--version", std::string("gantry ") + GANTRY_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // global flags (-o, --server, ...) may follow the subcommand
  cli::CommonFlags flags;
  flags.connection.server = Env("GANTRY_SERVER", "http://127.0.0.1:7070");
  flags.connection.token = Env("GANTRY_TOKEN");
  flags.connection.ca_file = Env("GANTRY_CA_FILE");
  AddConnectionFlags(app, flags);

  ServeFlags serve;
  auto* serve_cmd = app.add_subcommand("serve", "run the gantry daemon");
  serve_cmd->add_option("--config", serve.config_path, "config file (default /etc/gantry/gantry.yaml if present)");
  serve_cmd->add_option("--data-dir", serve.data_dir, "directory of the SQLite database");
  serve_cmd->add_option("--listen", serve.listen, "ADDR:PORT to listen on (default 127.0.0.1:7070)");
  serve_cmd->add_option("--log-format", serve.log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  serve_cmd->add_option("--log-level", serve.log_level, "trace, debug, info, warn or error");
  serve_cmd->add_option("--clusters-dir", serve.clusters_dir, "cluster inventory: one YAML file per worker cluster");
  serve_cmd->add_option("--ready-file", serve.ready_file, "write ADDR:PORT here once serving");

  std::string file;
  cli::WaitFlags wait;
  auto* submit = app.add_subcommand("submit", "submit a job (gantry Job, or a batch/v1 Job or JobSet manifest)");
  submit->add_option("-f,--filename", file, "job file (YAML or JSON; - for stdin)")->required();
  submit->add_option("-n,--namespace", flags.ns, "namespace (default: the document's, else default)");
  auto* submit_wait =
      submit->add_flag("--wait", wait.wait, "wait until the job finishes; exit 0 only if it succeeded (with -o: "
                                            "prints the job as it ended)");
  submit->add_option("--timeout", wait.timeout_seconds, "with --wait: give up after this many seconds")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->needs(submit_wait);

  std::string name;
  bool watch = false;
  auto* status = app.add_subcommand("status", "show a job: phase, cluster, epoch, pod sets, last events");
  status->add_option("name", name, "job name, or NAMESPACE/NAME")->required();
  status->add_option("-n,--namespace", flags.ns, "namespace (default: default)");
  auto* status_watch = status->add_flag("-w,--watch", watch, "follow phase changes until the job finishes");
  int watch_timeout = 0;
  status->add_option("--timeout", watch_timeout, "with --watch: give up after this many seconds (exit 1)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->needs(status_watch);

  bool all = false;
  std::string phase, queue, list_cluster;
  auto* list = app.add_subcommand("list", "list jobs");
  list->add_option("-n,--namespace", flags.ns, "namespace (default: default)");
  list->add_flag("-A,--all-namespaces", all, "jobs of every namespace you may see");
  list->add_option("--phase", phase, "only jobs in this phase");
  list->add_option("--queue", queue, "only jobs of this queue");
  list->add_option("--cluster", list_cluster, "only jobs leased to this cluster");

  bool purge = false;
  auto* cancel = app.add_subcommand("cancel", "cancel a job (or remove a finished one with --purge)");
  cancel->add_option("name", name, "job name, or NAMESPACE/NAME")->required();
  cancel->add_option("-n,--namespace", flags.ns, "namespace (default: default)");
  auto* cancel_wait = cancel->add_flag("--wait", wait.wait, "wait until the job is Cancelled (with -o: prints the "
                                                            "job as it ended)");
  cancel->add_option("--timeout", wait.timeout_seconds, "with --wait: give up after this many seconds")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->needs(cancel_wait);
  cancel->add_flag("--purge", purge, "remove the record of a finished job")->excludes(cancel_wait);

  std::string cluster_name;
  auto* clusters = app.add_subcommand("clusters", "list worker clusters, their health and capacity");
  clusters->add_option("name", cluster_name, "only this cluster");
  auto* explain = app.add_subcommand("explain", "show where a job could run and why each cluster is or is not a candidate");
  explain->add_option("name", name, "job name, or NAMESPACE/NAME")->required();
  explain->add_option("-n,--namespace", flags.ns, "namespace (default: default)");
  auto* events = app.add_subcommand("events", "show a job's events, oldest first: all of them, or the last N");
  events->add_option("name", name, "job name, or NAMESPACE/NAME")->required();
  events->add_option("-n,--namespace", flags.ns, "namespace (default: default)");
  int events_tail = 0;
  // The daemon bounds N (its maxListLimit) and says so.
  events->add_option("--tail", events_tail, "only the last N events (0: all)")->check(CLI::Range(0, std::numeric_limits<int>::max()));
  auto* reload = app.add_subcommand("reload", "have the daemon read its cluster inventory again (admin)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A first word that names no command: say which, not only that one is
    // needed ("gantry version", "gantry get").
    if (argc > 1 && argv[1][0] != '-' && argv[1][0] != '\0') {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
      if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
        std::cerr << "error: unknown command \"" << argv[1] << "\"; the commands are "
                  << fmt::format("{}", fmt::join(names, ", ")) << " (gantry --help)\n";
        return cli::kExitUsage;
      }
    }
    app.exit(e);
    return cli::kExitUsage;
  }
  if (serve_cmd->parsed()) return RunServe(serve);
  if (status->parsed() || cancel->parsed() || explain->parsed() || events->parsed()) {
    // NAMESPACE/NAME, as gantry prints jobs, is taken too.
    if (std::string error = cli::SplitJobRef(name, flags.ns); !error.empty()) {
      std::cerr << "error: " << error << "\n";
      return cli::kExitUsage;
    }
  }
  // An answer of an unexpected shape (GANTRY_SERVER naming another service,
  // a proxy's page) must end in a message and exit 1, not an abort.
  try {
    if (submit->parsed()) return cli::Submit(flags, file, wait, std::cout, std::cerr);
    if (status->parsed()) return cli::Status(flags, name, watch, watch_timeout, std::cout, std::cerr);
    if (list->parsed()) return cli::List(flags, all, phase, queue, list_cluster, std::cout, std::cerr);
    if (cancel->parsed()) return cli::Cancel(flags, name, purge, wait, std::cout, std::cerr);
    if (clusters->parsed()) return cli::Clusters(flags, cluster_name, std::cout, std::cerr);
    if (explain->parsed()) return cli::Explain(flags, name, std::cout, std::cerr);
    if (events->parsed()) return cli::Events(flags, name, events_tail, std::cout, std::cerr);
    if (reload->parsed()) return cli::Reload(flags, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "error: the server's answer is not what gantry expects (is it a gantry daemon?): " << e.what()
              << "\n";
    return cli::kExitRefused;
  }
  return cli::kExitUsage;
}

}  // namespace gantry
