#include "gantry/daemon/serve.h"

#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "gantry/api/api_metrics.h"
#include "gantry/api/api_service.h"
#include "gantry/api/k8s_status.h"
#include "gantry/api/token_auth.h"
#include "gantry/common/log_limiter.h"
#include "gantry/daemon/daemon_config.h"
#include "gantry/daemon/open_files.h"
#include "gantry/daemon/logging.h"
#include "gantry/dispatch/engine.h"
#include "gantry/http/server.h"
#include "gantry/inventory/fleet.h"
#include "gantry/job/job_document.h"
#include "gantry/kube/kube_prober.h"
#include "gantry/store/sqlite_connection.h"
#include "gantry/store/sqlite_store.h"

namespace gantry {
namespace {

constexpr const char* kDefaultConfigDir = "/etc/gantry";
constexpr const char* kDefaultDataDir = "/var/lib/gantry";

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Io("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file's text, or "" when it cannot be read.
std::string TextOf(const std::string& path) {
  if (path.empty()) return "";
  auto text = ReadWholeFile(path);
  return text.ok() ? std::move(*text) : "";
}

// Whether two texts of gantry.yaml say the same: equal once parsed and
// written out again, so that an edited comment or a blank line is no
// change. Text that does not parse is compared as it is.
bool SameYaml(const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto canonical = [](const std::string& text) -> std::optional<std::string> {
    try {
      YAML::Emitter out;
      out << YAML::Load(text);
      return std::string(out.c_str());
    } catch (const YAML::Exception&) {
      return std::nullopt;
    }
  };
  const auto ca = canonical(a), cb = canonical(b);
  return ca && cb && *ca == *cb;
}

// $name when set (systemd's ConfigurationDirectory= / StateDirectory=), else fallback.
std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// The gantry.yaml the daemon reads: --config, else the configuration
// directory's if it exists ("" : none, the defaults).
std::string ConfigPath(const ServeFlags& flags) {
  if (!flags.config_path.empty()) return flags.config_path;
  std::string path = EnvOr("CONFIGURATION_DIRECTORY", kDefaultConfigDir) + "/gantry.yaml";
  return std::filesystem::exists(path) ? path : "";
}

Result<DaemonConfig> ResolveConfig(const ServeFlags& flags) {
  DaemonConfig config;
  const std::string config_dir = EnvOr("CONFIGURATION_DIRECTORY", kDefaultConfigDir);
  const std::string path = ConfigPath(flags);
  if (!path.empty()) {
    auto loaded = LoadDaemonConfig(path);
    if (!loaded.ok()) return loaded.status();
    config = std::move(loaded.value());
  }
  if (!flags.data_dir.empty()) config.data_dir = flags.data_dir;
  if (!flags.listen.empty()) config.listen = flags.listen;
  if (!flags.log_format.empty()) config.log_format = flags.log_format;
  if (!flags.log_level.empty()) config.log_level = flags.log_level;
  if (!flags.clusters_dir.empty()) config.clusters_dir = flags.clusters_dir;
  if (config.clusters_dir.empty() && std::filesystem::is_directory(config_dir + "/clusters.d")) {
    config.clusters_dir = config_dir + "/clusters.d";
  }
  if (config.data_dir.empty()) config.data_dir = EnvOr("STATE_DIRECTORY", kDefaultDataDir);
  GANTRY_RETURN_IF_ERROR(ValidateDaemonConfig(config));
  return config;
}

// At a reload: gantry.yaml is read only at the start. If it changed since,
// say so, and whether the daemon would start with it (an error found now
// is not found only at the next restart).
void NoteConfigChange(const ServeFlags& flags, const std::string& started_path, const std::string& started_text) {
  const std::string path = ConfigPath(flags);
  // A file that cannot be read now is a change even if it held only
  // comments (which read as the same empty YAML): the next start would fail on it.
  const Result<std::string> now = path.empty() ? Result<std::string>(std::string()) : ReadWholeFile(path);
  if (path == started_path && now.ok() && SameYaml(*now, started_text)) return;
  const std::string shown = path.empty() ? started_path : path;
  auto resolved = ResolveConfig(flags);
  std::string problem = resolved.ok() ? "" : resolved.status().message();
  if (resolved.ok()) {
    // The files it names must be there too, as the start reads them.
    auto readable = [](const std::string& file) {
      return std::filesystem::is_regular_file(file) && std::ifstream(file).good();
    };
    const DaemonConfig& c = *resolved;
    if (!c.tokens_file.empty() && !readable(c.tokens_file)) {
      problem = "tokens file " + c.tokens_file + " cannot be read";
    } else if (!c.tls_cert_file.empty() && !readable(c.tls_cert_file)) {
      problem = "TLS certificate " + c.tls_cert_file + " cannot be read";
    } else if (!c.tls_key_file.empty() && !readable(c.tls_key_file)) {
      problem = "TLS key " + c.tls_key_file + " cannot be read";
    } else if (!c.clusters_dir.empty() && !std::filesystem::is_directory(c.clusters_dir)) {
      problem = "clusters dir " + c.clusters_dir + " is not a directory";
    }
  }
  if (!problem.empty()) {
    spdlog::error("SIGHUP: {} changed since the start and the daemon would not start with it: {}; running on with "
                  "the settings it started with",
                  shown, problem);
    return;
  }
  spdlog::warn("SIGHUP: {} changed since the start; its settings take effect at the next restart (a reload "
               "applies clusters.d and the API tokens only)",
               shown);
}

// Blocks the signals the main thread handles, before any thread starts, so
// every thread inherits the mask and only sigtimedwait sees them.
sigset_t BlockControlSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

int RunServe(const ServeFlags& flags) {
  sigset_t signals = BlockControlSignals();
  auto config_or = ResolveConfig(flags);
  if (!config_or.ok()) {
    fprintf(stderr, "gantry serve: %s\n", config_or.status().message().c_str());
    return 2;
  }
  const DaemonConfig& config = *config_or;
  SetUpLogging(config.log_format, config.log_level);
  // gantry.yaml as the daemon started with it: a reload (SIGHUP) does not
  // apply it, and says so when it changed rather than stay silent.
  const std::string config_path = ConfigPath(flags);
  const std::string config_text = TextOf(config_path);

  std::error_code ec;
  const bool created = std::filesystem::create_directories(config.data_dir, ec);
  if (ec) {
    spdlog::critical("data directory {}: {}", config.data_dir, ec.message());
    return 1;
  }
  // Made private when gantry made it; one given (/var/lib/gantry from the
  // unit, or a directory of the operator's) keeps its mode: the database
  // files are 0600 whatever it is.
  if (created && ::chmod(config.data_dir.c_str(), 0700) != 0) {
    spdlog::warn("data directory {}: cannot make it private: {}", config.data_dir, std::strerror(errno));
  }

  const uint64_t open_files = RaiseOpenFileLimit();
  SystemClock clock;
  api::ApiMetrics metrics;
  SqliteStoreOptions store_options;
  store_options.path = config.data_dir + "/gantry.db";
  store_options.clock = &clock;
  store_options.same_spec = SameJobSpec;  // a quantity spelt another way is the same job
  store_options.origin = config.origin;  // refused while unfinished jobs carry another
  auto commit_failed_log = std::make_shared<LogLimiter>();
  store_options.on_commit = [&metrics, commit_failed_log](double seconds, int writes, bool synced) {
    metrics.ObserveCommit(seconds, writes, synced);
    // Failures held back before this success are told now, and the next one
    // at once, once none came for an interval (a disk that alternates keeps
    // its lines limited).
    if (const int64_t held = commit_failed_log->Reset(); held > 0) {
      spdlog::error("store: {} more commit(s) failed before this one succeeded (none failed for 10 s since)", held);
    }
  };
  store_options.on_commit_failed = [&metrics, commit_failed_log](const Status& error, int writes) {
    if (int64_t held = 0; commit_failed_log->Allow(&held)) {
      spdlog::error("store: a commit of {} write(s) failed, each refused: {}; /readyz answers 503 until one "
                    "succeeds (tried every 5 s while no write comes){}",
                    writes, error.ToString(), commit_failed_log->HeldText(held));
    }
    // /readyz shows it, to anyone: a full disk's message has no path; any
    // other error (the file's path, the SQL: a busy database's too) is in
    // the log only.
    metrics.ObserveCommitFailure(error.message().starts_with(kDatabaseFullPrefix)
                                     ? error.ToString()
                                     : fmt::format("{} (see the gantry log)", CodeName(error.code())));
  };
  // A large database on a cold disk may take longer to check than systemd's
  // start timeout (90 s by default): each notice moves it 30 s on.
  store_options.on_slow_start = [] {
    sd_notify(0, "EXTEND_TIMEOUT_USEC=30000000\nSTATUS=checking the database before serving");
  };
  auto store = OpenSqliteStore(store_options);
  if (!store.ok()) {
    spdlog::critical("store: {}", store.status().ToString());
    return 1;
  }
  spdlog::info("store {} open at schema version {}; a finished job's record is kept {} (jobRecordRetentionSeconds)",
               store_options.path, LatestSchemaVersion(),
               config.job_record_retention_seconds == 0
                   ? std::string("for ever")
                   : config.job_record_retention_seconds % 86400 == 0
                         ? fmt::format("{} day(s) after it finished", config.job_record_retention_seconds / 86400)
                         : fmt::format("{} s after it finished", config.job_record_retention_seconds));

  auto auth = api::TokenAuth::Load(config.tokens_file);
  if (!auth.ok()) {
    spdlog::critical("{}", auth.status().message());
    return 1;
  }
  if ((*auth)->open_mode()) {
    spdlog::warn("no tokensFile configured: only loopback clients are accepted, as an anonymous admin");
  } else {
    spdlog::info("{} API token(s) loaded from {}", (*auth)->size(), config.tokens_file);
  }

  JobStore& job_store = *store.value();
  inventory::FleetOptions fleet_options;
  kube::KubeProber prober(std::chrono::milliseconds(fleet_options.probe_deadline_ms));
  fleet_options.clusters_dir = config.clusters_dir;
  fleet_options.probe_interval_ms = int64_t{config.probe_interval_seconds} * 1000;
  fleet_options.failure_threshold = config.probe_failure_threshold;
  fleet_options.lost_timeout_ms = int64_t{config.cluster_lost_timeout_seconds} * 1000;
  fleet_options.refused_timeout_ms = int64_t{config.credentials_refused_timeout_seconds} * 1000;
  inventory::Fleet fleet(prober, *store.value(), clock, fleet_options);
  auto file_errors = fleet.Start();
  if (Status listed = fleet.DirStatus(); !listed.ok()) {
    // On an empty inventory every job the store gives a cluster would count
    // as lost, and a Requeue job would run a second time beside the first.
    spdlog::critical("inventory: {}; not starting: the clusters it names are unknown, and the jobs they own would "
                     "count as lost (fix the directory or clustersDir, then start again)",
                     listed.message());
    return 1;
  }
  if (Status kept = fleet.StateStatus(); !kept.ok()) {
    spdlog::critical("inventory: {}; not starting: without it, each cluster's outage would start over, and a "
                     "cluster rebuilt at an entry's address would be taken for the one its jobs ran in",
                     kept.message());
    return 1;
  }
  if (config.clusters_dir.empty()) {
    spdlog::warn("no clustersDir: no worker clusters are configured");
  } else {
    spdlog::info("inventory: {} cluster(s) from {} ({} file(s) refused)", fleet.Clusters().size(),
                 config.clusters_dir, file_errors.size());
  }
  dispatch::EngineOptions engine_options;
  engine_options.decide.origin = config.origin;
  engine_options.decide.cluster_lost_timeout_ms = fleet_options.lost_timeout_ms;
  engine_options.decide.credentials_refused_timeout_ms = fleet_options.refused_timeout_ms;
  engine_options.decide.declared_lost_grace_ms = int64_t{config.declared_lost_grace_seconds} * 1000;
  engine_options.decide.lease_on_quota_reserved = config.lease_on == "QuotaReserved";
  engine_options.decide.finished_retention_ms = int64_t{config.finished_retention_seconds} * 1000;
  engine_options.decide.redispatch_after_rejection_ms = int64_t{config.rejection_backoff_seconds} * 1000;
  engine_options.decide.redispatch_after_rejection_max_ms = int64_t{config.rejection_backoff_max_seconds} * 1000;
  engine_options.decide.job_refusal_hold_ms = int64_t{config.job_refusal_hold_seconds} * 1000;
  engine_options.decide.preemption_gate_ms = int64_t{config.preemption_gate_seconds} * 1000;
  engine_options.placement.max_copies = config.max_copies;
  engine_options.decide.not_found_confirms_after_ms = int64_t{config.not_found_confirms_after_seconds} * 1000;
  engine_options.decide.resync_ms = int64_t{config.resync_seconds} * 1000;
  engine_options.resync_passes_per_s = config.resync_passes_per_second;
  engine_options.gc_interval_ms = int64_t{config.gc_interval_seconds} * 1000;
  engine_options.job_record_retention_ms = int64_t{config.job_record_retention_seconds} * 1000;
  engine_options.observer.list_errors_told_after = std::chrono::seconds(config.list_errors_told_after_seconds);
  engine_options.workers = config.dispatch_workers;
  engine_options.min_active_passes = std::min(config.dispatch_workers_min, config.dispatch_workers);
  engine_options.pool.size = config.cluster_connections;
  engine_options.pool.min_size = std::min(config.cluster_connections_min, config.cluster_connections);
  engine_options.pool.stall_after = std::chrono::seconds(config.cluster_stall_seconds);
  for (const KindRef& k : config.generic_kinds) engine_options.observer.generic_kinds.push_back({k.api_version, k.kind});
  const std::size_t watched_kinds = dispatch::ClusterObserver::WatchedKinds(engine_options.observer);
  auto check_open_files = [&] {
    const std::size_t n = fleet.Clusters().size();
    WarnIfOpenFilesShort(open_files, OpenFilesWanted(n, config.cluster_connections, watched_kinds), n);
  };
  check_open_files();
  dispatch::Engine engine(job_store, fleet, clock, engine_options, &metrics, store.value().get());
  if (Status s = engine.Start(); !s.ok()) {
    spdlog::critical("dispatch engine: {}", s.ToString());
    return 1;
  }

  api::ApiOptions api_options;
  api_options.stale_after_ms = fleet_options.stale_after_ms;
  api_options.jobs_count_refresh_ms = int64_t{config.jobs_metric_seconds} * 1000;
  api_options.after_reload = [&engine, &check_open_files](const std::vector<std::string>& removed) {
    std::string also = engine.InventoryChanged(removed);
    check_open_files();
    return also;
  };
  api_options.watch_refused = [&engine](const std::string& cluster) { return engine.WatchRefused(cluster); };
  api_options.kind_refused = [&engine](const std::string& cluster, const std::string& api_version,
                                       const std::string& kind) {
    return engine.KindRefused(cluster, dispatch::JobKind{api_version, kind});
  };
  api_options.earlier_runs_in = [&engine](const JobRecord& job, const std::vector<RemoteIntent>& intents) {
    return engine.EarlierRunsHolding(job, intents);
  };
  api_options.watch_refused_since = [&engine](const std::string& cluster) {
    return engine.WatchRefusedSince(cluster);
  };
  api_options.view_behind = [&engine](const std::string& cluster) {
    dispatch::ClusterObserver::BehindView b = engine.ViewBehind(cluster);
    return api::ViewBehind{std::move(b.resources), b.since_ms};
  };
  api_options.owners_missing = [&engine] { return engine.OwnersMissingSinceStart(); };
  api_options.connections_limit = [&engine](const std::string& cluster) { return engine.ConnectionsLimit(cluster); };
  api_options.requests_stalled_for_ms = [&engine](const std::string& cluster) {
    return engine.RequestsStalledForMs(cluster);
  };
  api_options.placement_snapshots = [&engine](int64_t now_ms) { return engine.Snapshots(now_ms); };
  api_options.job_refusal_hold_ms = engine_options.decide.job_refusal_hold_ms;
  api_options.preemption_gate_ms = engine_options.decide.preemption_gate_ms;
  api_options.placement = engine_options.placement;
  api::ApiService service(job_store, **auth, metrics, &engine, clock, api_options, &fleet);
  http::ServerOptions server_options;
  server_options.thread_name = "api-http";
  // Already validated by ResolveConfig.
  (void)ParseListen(config.listen, &server_options.address, &server_options.port);
  server_options.body_limit = config.max_body_bytes;
  server_options.read_timeout = std::chrono::seconds(config.read_timeout_seconds);
  server_options.idle_timeout = std::chrono::seconds(config.idle_timeout_seconds);
  server_options.error_response = [](int code, std::string message) {
    return api::K8sStatus(code, api::ReasonForCode(code), std::move(message));
  };
  server_options.on_refused = [&metrics](int code) { metrics.CountServerAnswer(code); };
  if (!config.tls_cert_file.empty()) {
    auto cert = ReadWholeFile(config.tls_cert_file);
    auto key = ReadWholeFile(config.tls_key_file);
    if (!cert.ok() || !key.ok()) {
      spdlog::critical("TLS: {}", (cert.ok() ? key.status() : cert.status()).message());
      return 1;
    }
    server_options.tls = http::TlsServerOptions{*cert, *key};
  }
  http::Server server(server_options, service.Handler());
  if (Status s = server.Start(); !s.ok()) {
    spdlog::critical("{}", s.ToString());
    return 1;
  }
  std::string bound = fmt::format("{}:{}", server_options.address.find(':') == std::string::npos
                                               ? server_options.address
                                               : "[" + server_options.address + "]",
                                  server.port());
  service.SetReady(true);
  spdlog::info("gantry serving on {}://{} (data {})", server_options.tls ? "https" : "http", bound,
               config.data_dir);
  // Whoever waits for the ready file waits for ever when it cannot be
  // written: a clear stop instead.
  int exit_code = 0;
  if (!flags.ready_file.empty()) {
    std::string tmp = flags.ready_file + ".tmp";
    std::ofstream out(tmp);
    out << bound << "\n";
    out.close();
    if (!out) {
      spdlog::critical("--ready-file {}: cannot write {}: {}; shutting down", flags.ready_file, tmp,
                       std::strerror(errno));
      exit_code = 1;
    } else if (std::filesystem::rename(tmp, flags.ready_file, ec); ec) {
      spdlog::critical("--ready-file {}: cannot move {} there: {}; shutting down", flags.ready_file, tmp,
                       ec.message());
      exit_code = 1;
    }
  }
  if (exit_code == 0) sd_notifyf(0, "READY=1\nSTATUS=serving on %s", bound.c_str());

  uint64_t watchdog_usec = 0;
  bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  // Ping at half the watchdog interval; otherwise wake once a second.
  timespec wait{1, 0};
  if (watchdog) {
    uint64_t half = watchdog_usec / 2;
    wait = {static_cast<time_t>(half / 1'000'000), static_cast<long>((half % 1'000'000) * 1000)};
  }
  while (exit_code == 0) {
    siginfo_t info;
    int sig = sigtimedwait(&signals, &info, &wait);
    // Pinged only while the API's loop thread answers: a wedged loop (every
    // handler runs there) is then restarted by systemd.
    if (watchdog) {
      if (server.Responsive(std::chrono::seconds(1))) {
        sd_notify(0, "WATCHDOG=1");
      } else {
        spdlog::error("the API's loop thread has not answered for 1 s; the watchdog is not pinged");
      }
    }
    if (sig < 0) continue;  // timeout or EINTR
    if (sig == SIGHUP) {
      sd_notify(0, "RELOADING=1");
      inventory::InventoryChange change;
      auto refused = fleet.Reload(&change);
      const std::string also = engine.InventoryChanged(change.removed);
      std::string changed = change.Describe();
      if (!also.empty()) changed += (changed.empty() ? "" : "; ") + also;
      if (fleet.DirStatus().ok()) {
        spdlog::info("SIGHUP: inventory reloaded: {} cluster(s), {} file(s) refused{}", fleet.Clusters().size(),
                     refused.size(), changed.empty() ? "" : "; " + changed);
      } else {
        spdlog::warn("SIGHUP: the inventory is kept as it was ({} cluster(s)): {}", fleet.Clusters().size(),
                     fleet.DirStatus().message());
      }
      check_open_files();
      if (!config.tokens_file.empty()) {
        Status s = (*auth)->Reload();
        if (s.ok()) {
          spdlog::info("SIGHUP: {} API token(s) reloaded", (*auth)->size());
        } else {
          spdlog::error("SIGHUP: tokens not reloaded, keeping the old ones: {}", s.message());
        }
      }
      NoteConfigChange(flags, config_path, config_text);
      sd_notify(0, "READY=1");
      continue;
    }
    spdlog::info("{} received: shutting down (grace {}s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                 config.shutdown_grace_seconds);
    break;
  }
  sd_notify(0, "STOPPING=1");
  service.SetReady(false);
  // The passes in hand end while the API drains, not after it: with a
  // cluster whose writes hang, each wait is up to a request's deadline.
  engine.BeginStop();
  server.Stop(std::chrono::seconds(config.shutdown_grace_seconds));
  service.StopSlowLane();  // a large submission still queued must not reach a stopped engine or store
  fleet.BeginStop();       // no request waits on a credential plugin's run from here on
  engine.Stop();
  fleet.Stop();
  store.value().reset();  // drains the commit queue and closes the database
  spdlog::info("gantry stopped");
  return exit_code;
}

}  // namespace gantry
