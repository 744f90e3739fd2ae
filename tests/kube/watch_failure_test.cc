// ListWatch against a cluster whose watches cannot be followed: an ERROR
// event other than 410, a line that is not JSON, a stream that ends at once
// with nothing in it, an error answer too large to keep. Each is a failure (the view is told, and listed again
// after a backoff), not a clean end resumed at once from the same point,
// which spun against the server and left the view as it was, unflagged.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "gantry/http/server.h"
#include "gantry/kube/kube_client.h"
#include "gantry/kube/list_watch.h"
#include "log_capture.h"
#include "test_support.h"
#include "tls_cluster.h"
#include "unreachable.h"

namespace gantry::testing {
namespace {

const char* const kList =
    R"({"kind":"WorkloadList","apiVersion":"kueue.x-k8s.io/v1beta2","metadata":{"resourceVersion":"5"},"items":[]})";

// An HTTPS server that answers every list with kList and every watch with
// watch_status and watch_body, at once.
class Cluster {
 public:
  explicit Cluster(std::string watch_body, int watch_status = 200)
      : watch_body_(std::move(watch_body)), watch_status_(watch_status) {}

  std::unique_ptr<kube::KubeClient> Client(const std::string& tls_server_name = "") const {
    return LocalClient(tls_.port(), tls_.ca_pem(), tls_server_name);
  }

  std::atomic<int> lists{0}, watches{0};
  // From the next watch on, each answers this body instead.
  void SetWatchBody(std::string body) {
    std::lock_guard lock(mu_);
    watch_body_ = std::move(body);
  }
  // From the next list on, each answers this body instead of kList.
  void SetListBody(std::string body) {
    std::lock_guard lock(mu_);
    list_body_ = std::move(body);
  }

 private:
  std::mutex mu_;
  std::string watch_body_;
  std::string list_body_ = kList;
  int watch_status_;
  TlsCluster tls_{"watch-failure-test", [this](http::Request req, http::Responder respond) {
                    const bool watch = req.Query("watch").value_or("") == "true";
                    (watch ? watches : lists).fetch_add(1);
                    std::string body;
                    {
                      std::lock_guard lock(mu_);
                      body = watch ? watch_body_ : list_body_;
                    }
                    respond(http::JsonResponse(watch ? watch_status_ : 200, body));
                  }};
};

// ListWatch on a thread of its own until stopped, recording what it tells.
struct Follower {
  std::atomic<int> listed{0}, events{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::string> list_failures;
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit Follower(kube::KubeClient& client, std::string log_name = "", std::size_t max_list_items = 200'000) {
    thread = std::thread([this, &client, log_name, max_list_items] {
      kube::ListWatchOptions lw;
      lw.log_name = log_name;
      lw.max_backoff = std::chrono::milliseconds(50);
      lw.max_list_items = max_list_items;
      lw.on_watch_failed = [this](const std::string& m) {
        std::lock_guard lock(mu);
        failures.push_back(m);
      };
      lw.on_list_failed = [this](int, const std::string& m) {
        std::lock_guard lock(mu);
        list_failures.push_back(m);
      };
      kube::ListWatch(
          client, "/apis/kueue.x-k8s.io/v1beta2/workloads", lw,
          [this](const std::vector<nlohmann::json>&) { listed.fetch_add(1); },
          [this](const kube::WatchEvent&) { events.fetch_add(1); }, [this] { return stop.load(); });
    });
  }
  ~Follower() {
    stop = true;
    thread.join();
  }
  std::string FirstFailure() {
    std::lock_guard lock(mu);
    return failures.empty() ? "" : failures.front();
  }
  std::string FirstListFailure() {
    std::lock_guard lock(mu);
    return list_failures.empty() ? "" : list_failures.front();
  }
};

}  // namespace

TEST_CASE("a watch that cannot be followed is a failure: listed again after a backoff, the view told",
          "[kube][watch]") {
  struct Case {
    const char* name;
    std::string body;
    const char* told;
    int status = 200;
  };
  const Case cases[] = {
      {"an ERROR event other than 410",
       R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",)"
       R"("message":"etcdserver: leader changed","code":500}})"
       "\n",
       "500 etcdserver: leader changed"},
      {"a line that is not JSON", "<html>bad gateway</html>\n", "not a JSON object"},
      // Kept whole, it would grow without end (and be searched again and again).
      {"a line that does not end", std::string(std::size_t{17} << 20, 'x'), "a watch line longer than 16 MiB"},
      {"a stream that ends at once, empty", "", "at once, with no event"},
      // Read whole, as before, it was kept whole, however large.
      {"an error answer with a body larger than the client keeps",
       R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":")" + std::string(1 << 20, 'x') +
           R"(","reason":"InternalError","code":500})",
       "(the body cut at 64 KiB)", 500},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Cluster cluster(c.body, c.status);
    auto client = cluster.Client();
    Follower follower(*client);
    // Resumed at once from the same point, as before, it would never list again.
    REQUIRE(WaitFor([&] { return follower.listed >= 3; }, std::chrono::seconds(20)));
    follower.stop = true;
    CHECK(cluster.watches <= cluster.lists + 1);  // one watch per list: each failed and was listed again
    CHECK_THAT(follower.FirstFailure(), Catch::Contains(c.told));
    CHECK(follower.FirstFailure().size() < 1000);  // a log line's worth, whatever the server sent
    CHECK(follower.events == 0);
  }
}

TEST_CASE("a failed watch's log line names its cluster: many clusters serve the same path", "[kube][watch]") {
  LogCapture capture;
  {
    Cluster cluster("<html>bad gateway</html>\n");
    auto client = cluster.Client();
    Follower follower(*client, "cluster c7");
    const bool failed = WaitFor([&] { return !follower.FirstFailure().empty(); }, std::chrono::seconds(20));
    follower.stop = true;
    CHECK(failed);
  }
  CHECK_THAT(capture.Text(), Catch::Contains("warning cluster c7: watch /apis/kueue.x-k8s.io/v1beta2/workloads: "));
}

TEST_CASE("failures in a row of one list and watch are logged once, then once an interval with how many were not",
          "[kube][watch]") {
  LogCapture capture;
  int failures = 0;
  {
    // Every watch fails at once, every 50 ms at most: dozens of failures.
    Cluster cluster("<html>bad gateway</html>\n");
    auto client = cluster.Client();
    Follower follower(*client, "cluster c7");
    const bool many = WaitFor([&] { return cluster.watches >= 8; }, std::chrono::seconds(20));
    follower.stop = true;
    CHECK(many);
    std::lock_guard lock(follower.mu);
    failures = static_cast<int>(follower.failures.size());
  }
  const std::string text = capture.Text();
  INFO(text);
  CHECK(failures >= 8);  // each told to the view, whatever is logged
  const std::size_t lines = Occurrences(text, "warning cluster c7: watch");
  CHECK(lines == 1);
  CHECK_THAT(text, !Catch::Contains("works again"));  // it never did
}

TEST_CASE("a watch that works again after failures not logged says so, and its next failure is logged",
          "[kube][watch]") {
  LogCapture capture;
  {
    Cluster cluster("<html>bad gateway</html>\n");
    auto client = cluster.Client();
    Follower follower(*client, "cluster c7");
    REQUIRE(WaitFor([&] { return cluster.watches >= 4; }, std::chrono::seconds(20)));
    // Events again: the streak is over.
    cluster.SetWatchBody(
        R"({"type":"ADDED","object":{"kind":"Workload","metadata":{"name":"w","namespace":"a","resourceVersion":"6"}}})"
        "\n");
    REQUIRE(WaitFor([&] { return follower.events >= 1; }, std::chrono::seconds(20)));
    // Failing again: a new streak, whose first failure is logged.
    cluster.SetWatchBody("<html>bad gateway</html>\n");
    const int before = cluster.watches;
    REQUIRE(WaitFor([&] { return cluster.watches >= before + 3; }, std::chrono::seconds(20)));
    follower.stop = true;
  }
  const std::string text = capture.Text();
  INFO(text);
  CHECK_THAT(text,
             Catch::Contains("info cluster c7: watch /apis/kueue.x-k8s.io/v1beta2/workloads works again, after "));
  CHECK_THAT(text, Catch::Contains(" not logged)"));
  const std::size_t lines = Occurrences(text, "warning cluster c7: watch");
  CHECK(lines == 2);
}

TEST_CASE("a short watch with an event in it is a clean end: resumed, not listed again", "[kube][watch]") {
  Cluster cluster(
      R"({"type":"ADDED","object":{"kind":"Workload","metadata":{"name":"w","namespace":"a","resourceVersion":"6"}}})"
      "\n");
  auto client = cluster.Client();
  Follower follower(*client);
  REQUIRE(WaitFor([&] { return cluster.watches >= 5; }, std::chrono::seconds(20)));
  follower.stop = true;
  CHECK(follower.listed == 1);
  CHECK(follower.events >= 4);
  CHECK(follower.FirstFailure().empty());
}

TEST_CASE("a kubeconfig's tls-server-name is the name the certificate is checked against", "[kube][tls]") {
  // The server's certificate names IP 127.0.0.1 and DNS localhost; the
  // client reaches it at 127.0.0.1 in every case.
  Cluster cluster("");
  auto by_address = cluster.Client();
  CHECK(by_address->Get("/api").ok());
  auto by_name = cluster.Client("localhost");
  CHECK(by_name->Get("/api").ok());
  // A name the certificate does not hold is refused, though the address is in it.
  auto other = cluster.Client("api.internal.example");
  auto refused = other->Get("/api");
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("TLS handshake"));
}

TEST_CASE("a list whose answers are malformed, or whose pages never end, fails and is told, not kept",
          "[kube][watch]") {
  const std::string page = R"({"kind":"WorkloadList","metadata":{"resourceVersion":"5","continue":"more"},"items":[)"
                           R"({"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})";
  struct Case {
    const char* name;
    std::string body;
    const char* told;
  };
  const Case cases[] = {
      {"pages that never end", page, "holds more than 10 objects (its pages may never end)"},
      {"items not a list", R"({"kind":"WorkloadList","metadata":{"resourceVersion":"5"},"items":{"a":1}})",
       "its items is not a list"},
      {"a resourceVersion not a string", R"({"kind":"WorkloadList","metadata":{"resourceVersion":{"x":1}},"items":[]})",
       "it has no resourceVersion"},
      {"not an object", "[1,2,3]", "not a JSON object"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Cluster cluster("");
    cluster.SetListBody(c.body);
    auto client = cluster.Client();
    Follower follower(*client, "", 10);
    CHECK(WaitFor([&] { return !follower.FirstListFailure().empty(); }, std::chrono::seconds(20)));
    follower.stop = true;
    CHECK_THAT(follower.FirstListFailure(), Catch::Contains(c.told));
    CHECK(follower.listed == 0);
  }
}

TEST_CASE("a server that ends every watch at once is asked at most once a second", "[kube][watch]") {
  // One event, then the end, every time: each a clean end, resumed.
  Cluster cluster(
      R"({"type":"ADDED","object":{"kind":"Workload","metadata":{"name":"w","namespace":"a","resourceVersion":"6"}}})"
      "\n");
  auto client = cluster.Client();
  const auto began = std::chrono::steady_clock::now();
  Follower follower(*client);
  REQUIRE(WaitFor([&] { return cluster.watches >= 4; }, std::chrono::seconds(20)));
  const auto took = std::chrono::steady_clock::now() - began;
  follower.stop = true;
  CHECK(took >= std::chrono::milliseconds(2'900));  // 4 streams: 3 waits of a second between them
  CHECK(follower.listed == 1);
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("a list's items are kept as its watch keeps its events' objects: only the fields named", "[kube][watch]") {
  Cluster cluster("");
  cluster.SetListBody(R"({"kind":"WorkloadList","metadata":{"resourceVersion":"5"},"items":[)"
                      R"({"metadata":{"name":"a","managedFields":[{"manager":"kueue"}]},)"
                      R"("spec":{"queueName":"q","podSets":[{"name":"main","count":64}]},"status":{"x":1}}]})");
  auto client = cluster.Client();
  kube::ListWatchOptions lw;
  lw.only_fields = {{"spec", {"queueName"}}};
  std::mutex mu;
  std::vector<nlohmann::json> seen;
  std::atomic<bool> stop{false};
  std::thread follower([&] {
    kube::ListWatch(
        *client, "/apis/kueue.x-k8s.io/v1beta2/workloads", lw,
        [&](const std::vector<nlohmann::json>& items) {
          std::lock_guard lock(mu);
          seen = items;
          stop = true;
        },
        [](const kube::WatchEvent&) {}, [&] { return stop.load(); });
  });
  follower.join();
  std::lock_guard lock(mu);
  REQUIRE(seen.size() == 1);
  INFO(seen[0].dump());
  CHECK(seen[0]["spec"] == nlohmann::json({{"queueName", "q"}}));  // podSets not kept
  CHECK(seen[0]["metadata"]["managedFields"].size() == 1);         // a member not named: kept whole
  CHECK(seen[0]["status"]["x"] == 1);
}

}  // namespace gantry::testing
