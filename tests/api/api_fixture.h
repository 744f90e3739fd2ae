// A real API server on a loopback port: SQLite store in a temp dir, tokens
// file, reconciler, http::Server. Tests talk to it with http::Client.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gantry/api/api_metrics.h"
#include "gantry/api/api_service.h"
#include "gantry/api/token_auth.h"
#include "gantry/dispatch/reconciler.h"
#include "gantry/http/client.h"
#include "gantry/http/server.h"
#include "gantry/store/sqlite_store.h"
#include "test_support.h"

namespace gantry::testing {

inline constexpr const char* kAdminToken = "admin-token-0123456789";
inline constexpr const char* kTeamAToken = "team-a-token-0123456789";
// team-a too, capped: maxPriority 10, and WorkloadPriorityClass batch-low only.
inline constexpr const char* kCappedToken = "capped-token-0123456789";

struct ApiFixtureOptions {
  bool with_tokens = true;
  std::size_t body_limit = 1 << 20;
  std::chrono::milliseconds read_timeout{10'000};
  // Large job documents waiting to be read, at most (api::ApiOptions).
  std::size_t slow_lane_capacity = 8;
  // The job intake's Refuse (the engine's, in the daemon); unset: takes all.
  std::function<std::optional<FieldError>(const JobSpec&)> refuse = nullptr;
  // The job intake's RemoteView (the engine's watches, in the daemon); unset: none.
  std::function<std::vector<dispatch::ObservedObject>(const std::string&)> remote_view = nullptr;
  // An inventory (an empty clusters.d; never probed), so that the cluster
  // routes do their work; after_reload as api::ApiOptions has it.
  bool with_fleet = false;
  std::function<void()> after_reload = nullptr;
  // Why a cluster refuses gantry its watch, as the engine says (api::ApiOptions).
  std::function<std::string(const std::string& cluster)> watch_refused = nullptr;
};

class ApiFixture {
 public:
  explicit ApiFixture(ApiFixtureOptions options = {});
  ~ApiFixture();

  // One request; the token "" sends no Authorization header.
  http::ClientResponse Call(const std::string& method, const std::string& target,
                            const std::string& body = "", const std::string& token = kAdminToken,
                            const std::string& content_type = "application/json");
  nlohmann::json Json(const http::ClientResponse& r) { return nlohmann::json::parse(r.body); }
  uint16_t port() const { return server_->port(); }
  JobStore& store() { return *store_; }
  // The inventory's clusters.d (options.with_fleet).
  std::string clusters_dir() const { return dir_.File("clusters.d"); }
  api::ApiMetrics& metrics() { return metrics_; }
  // Passes the reconciler (the API's job intake) has run.
  int64_t reconciled() const { return reconciler_->reconciled(); }

 private:
  TempDir dir_;
  SystemClock clock_;
  api::ApiMetrics metrics_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<api::TokenAuth> auth_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<dispatch::JobIntake> intake_;  // the reconciler, with options.refuse and remote_view
  std::unique_ptr<inventory::ClusterProber> prober_;
  std::unique_ptr<inventory::Fleet> fleet_;  // with options.with_fleet
  std::unique_ptr<api::ApiService> service_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Client> client_;
};

// A valid gantry.dev/v1 Job document (JSON) named name in namespace ns.
std::string JobDoc(const std::string& name, const std::string& ns = "team-a", int priority = 0,
                   int gpus = 8);

// Posts JobDoc(name) padded past 32 KiB (read on the API's slow lane) as
// the admin, on a connection of its own, from another thread.
std::future<Result<http::ClientResponse>> PostLargeJob(const ApiFixture& api, const std::string& name);

}  // namespace gantry::testing
