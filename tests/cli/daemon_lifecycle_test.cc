// The daemon as a process: durability across SIGKILL, graceful SIGTERM,
// private files, JSON logs, refusing bad configuration.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <sqlite3.h>

#include "daemon_fixture.h"
#include "gantry/http/client.h"
#include "gantry/store/sqlite_store.h"

namespace gantry::testing {
namespace {

std::string Doc(const std::string& name) {
  return R"({"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{"name":")" + name +
         R"("},"spec":{"queue":"q","template":{"apiVersion":"batch/v1","kind":"Job","spec":{"template":)"
         R"({"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}}}})";
}

// A TCP connection to the daemon at url, opened (the file descriptor).
int ConnectTo(const std::string& url) {
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

}  // namespace

TEST_CASE("every acknowledged submission survives SIGKILL", "[daemon][e2e][crash]") {
  TempDir dir;
  std::string data = dir.File("data");
  int next = 0;
  std::vector<std::string> acknowledged;
  for (int round = 0; round < 3; ++round) {
    Daemon daemon(data, dir.path());
    REQUIRE(daemon.ready());
    // Four concurrent submitters so commits are grouped; kill once enough
    // 201s have come back, while requests are still in flight.
    std::mutex mu;
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    std::atomic<int> counter{next};
    for (int c = 0; c < 4; ++c) {
      clients.emplace_back([&] {
        auto client = http::Client::Create(daemon.url());
        if (!client.ok()) return;
        while (!stop) {
          std::string name = "j" + std::to_string(counter++);
          auto r = (*client)->Do("POST", "/api/v1/namespaces/default/jobs", Doc(name),
                                 {{"Content-Type", "application/json"}});
          if (!r.ok()) return;  // the daemon is gone
          if (r->status == 201) {
            std::lock_guard lock(mu);
            acknowledged.push_back(name);
          }
        }
      });
    }
    std::size_t target = acknowledged.size() + 150 + 100 * round;
    REQUIRE(WaitFor([&] {
      std::lock_guard lock(mu);
      return acknowledged.size() >= target;
    }, std::chrono::seconds(30)));
    daemon.process().Signal(SIGKILL);
    CHECK(daemon.process().Wait() == 128 + SIGKILL);
    stop = true;
    for (auto& t : clients) t.join();
    next = counter;
  }
  // Restart once more and read everything back.
  Daemon daemon(data, dir.path());
  REQUIRE(daemon.ready());
  auto client = http::Client::Create(daemon.url());
  REQUIRE(client.ok());
  std::set<std::string> stored;
  std::string target = "/api/v1/jobs?limit=5000";
  while (true) {
    auto r = (*client)->Do("GET", target);
    REQUIRE(r.ok());
    auto page = nlohmann::json::parse(r->body);
    for (auto& item : page["items"]) stored.insert(item["metadata"]["name"].get<std::string>());
    if (!page["metadata"].contains("continue")) break;
    target = "/api/v1/jobs?limit=5000&continue=" + page["metadata"]["continue"].get<std::string>();
  }
  std::size_t lost = 0;
  for (const auto& name : acknowledged) lost += stored.count(name) ? 0 : 1;
  INFO("acknowledged " << acknowledged.size() << ", stored " << stored.size());
  CHECK(acknowledged.size() >= 600);
  CHECK(lost == 0);
}

TEST_CASE("SIGTERM drains and exits 0, files are private", "[daemon][e2e]") {
  TempDir dir;
  Daemon daemon(dir.File("data"), dir.path());
  REQUIRE(daemon.ready());
  auto submit = Cli(daemon.url(), {"submit", "-f", "-"}, {});
  // (stdin is empty: a usage error, and the daemon is unaffected)
  CHECK(submit.code == 2);
  daemon.process().Signal(SIGTERM);
  CHECK(daemon.process().Wait() == 0);
  CHECK(daemon.process().Stderr().find("gantry stopped") != std::string::npos);
  struct stat st{};
  REQUIRE(stat(dir.File("data/gantry.db").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(stat(dir.File("data").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("a request the HTTP server answers by itself, before any route, is counted in gantry_http_requests_total",
          "[daemon][e2e]") {
  TempDir dir;
  Daemon daemon(dir.File("data"), dir.path());
  REQUIRE(daemon.ready());
  const std::string url = daemon.url();
  // No Host field: the server's own 400.
  {
    const int fd = ConnectTo(url);
    const std::string request = "GET /api/v1/jobs HTTP/1.1\r\n\r\n";
    REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
    char answer[64] = {};
    const ssize_t n = ::recv(fd, answer, sizeof answer - 1, MSG_WAITALL);
    ::close(fd);
    REQUIRE(n > 12);
    CHECK(std::string(answer, 12) == "HTTP/1.1 400");
  }
  auto client = http::Client::Create(url, {});
  REQUIRE(client.ok());
  auto metrics = (*client)->Do("GET", "/metrics");
  REQUIRE(metrics.ok());
  CHECK_THAT(metrics->body, Catch::Contains("gantry_http_requests_total{code=\"400\",method=\"-\",route=\"-\"} 1"));
}

TEST_CASE("a daemon out of file descriptors closes its oldest idle connection for a new one: a probe is answered "
          "at once",
          "[daemon][e2e]") {
  TempDir dir;
  Daemon daemon(dir.File("data"), dir.path(), {}, {"/usr/bin/prlimit", "--nofile=64:64"});
  REQUIRE(daemon.ready());
  const std::string url = daemon.url();
  // More idle connections than the daemon has descriptors: it runs out.
  std::vector<int> idle;
  for (int i = 0; i < 80; ++i) idle.push_back(ConnectTo(url));
  // Answered within 3 s, not once an idle one's read deadline passes.
  http::ClientOptions options;
  options.request_timeout = std::chrono::seconds(3);
  auto client = http::Client::Create(url, options);
  REQUIRE(client.ok());
  auto health = (*client)->Do("GET", "/healthz");
  for (int fd : idle) ::close(fd);
  REQUIRE(health.ok());
  CHECK(health->status == 200);
  CHECK_THAT(daemon.process().Stderr(), Catch::Contains("out of file descriptors"));
}

TEST_CASE("JSON logs are one object per line", "[daemon][e2e]") {
  TempDir dir;
  Daemon daemon(dir.File("data"), dir.path(), {"--log-format", "json"});
  REQUIRE(daemon.ready());
  daemon.process().Signal(SIGTERM);
  REQUIRE(daemon.process().Wait() == 0);
  std::istringstream lines(daemon.process().Stderr());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    INFO(line);
    auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j.contains("level"));
    CHECK(j.contains("msg"));
    ++n;
  }
  CHECK(n >= 3);
}

TEST_CASE("a bad config file is refused with file, line and field", "[daemon][e2e]") {
  TempDir dir;
  std::string config = dir.File("gantry.yaml");
  WriteFile(config, "listen: 127.0.0.1:0\nlisten_typo: 1\n");
  auto r = Run({GantryBin(), "serve", "--config", config, "--data-dir", dir.File("data")});
  CHECK(r.code == 2);
  CHECK(r.err.find("line 2") != std::string::npos);
  CHECK(r.err.find("listen_typo") != std::string::npos);
}

TEST_CASE("a clusters directory that cannot be listed stops the start, saying which and why", "[daemon][e2e]") {
  TempDir dir;
  // A file where the directory should be: root lists any directory.
  WriteFile(dir.File("clusters.d"), "name: c1\n");
  WriteFile(dir.File("gantry.yaml"), "listen: 127.0.0.1:0\n");
  auto r = Run({GantryBin(), "serve", "--config", dir.File("gantry.yaml"), "--data-dir", dir.File("data"),
                "--clusters-dir", dir.File("clusters.d")});
  CHECK(r.code == 1);
  CHECK(r.err.find(dir.File("clusters.d")) != std::string::npos);
  CHECK(r.err.find("not starting") != std::string::npos);
}

TEST_CASE("a ready file that cannot be written stops the daemon, rather than leave its supervisor waiting",
          "[daemon][e2e]") {
  TempDir dir;
  WriteFile(dir.File("gantry.yaml"), "listen: 127.0.0.1:0\n");
  auto r = Run({GantryBin(), "serve", "--config", dir.File("gantry.yaml"), "--data-dir", dir.File("data"),
                "--ready-file", dir.File("no-such-dir/ready")});
  CHECK(r.code == 1);
  CHECK(r.err.find("--ready-file " + dir.File("no-such-dir/ready")) != std::string::npos);
  CHECK(r.err.find("shutting down") != std::string::npos);
}

TEST_CASE("an empty gantry.db is refused at start, not taken for a new database", "[daemon][e2e]") {
  TempDir dir;
  WriteFile(dir.File("gantry.yaml"), "listen: 127.0.0.1:0\n");
  REQUIRE(::mkdir(dir.File("data").c_str(), 0700) == 0);
  WriteFile(dir.File("data/gantry.db"), "");
  auto r = Run({GantryBin(), "serve", "--config", dir.File("gantry.yaml"), "--data-dir", dir.File("data")});
  CHECK(r.code == 1);
  CHECK(r.err.find("exists and is empty") != std::string::npos);
  CHECK(r.err.find("applied schema migration") == std::string::npos);
}

TEST_CASE("a database whose record of the clusters cannot be read stops the start, saying what", "[daemon][e2e]") {
  TempDir dir;
  WriteFile(dir.File("gantry.yaml"), "listen: 127.0.0.1:0\n");
  REQUIRE(::mkdir(dir.File("data").c_str(), 0700) == 0);
  {
    SqliteStoreOptions options;
    options.path = dir.File("data/gantry.db");
    REQUIRE(OpenSqliteStore(options).ok());  // made, then closed
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(dir.File("data/gantry.db").c_str(), &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, "DROP TABLE cluster_identities", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  auto r = Run({GantryBin(), "serve", "--config", dir.File("gantry.yaml"), "--data-dir", dir.File("data")});
  CHECK(r.code == 1);
  CHECK(r.err.find("reading the clusters' persisted identities") != std::string::npos);
  CHECK(r.err.find("not starting") != std::string::npos);
}

}  // namespace gantry::testing
