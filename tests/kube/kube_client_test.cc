// KubeClient against a real gantry-sim cluster: every verb, typed errors,
// retries with Retry-After, and watch with resume and 410.
#include <catch2/catch.hpp>

#include <optional>

#include <atomic>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "gantry/common/clock.h"
#include "gantry/inventory/kubeconfig.h"
#include "gantry/kube/client_pool.h"
#include "gantry/kube/kube_client.h"
#include "gantry/kube/list_watch.h"
#include "process.h"
#include "test_support.h"
#include "unreachable.h"

namespace gantry::testing {
namespace {

const std::string kWorkloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads";

nlohmann::json Workload(const std::string& name, int gpus_per_pod = 1) {
  nlohmann::json container = {{"name", "c"}, {"image", "i"}};
  container["resources"]["requests"] = {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(gpus_per_pod)}};
  nlohmann::json w = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "Workload"}};
  w["metadata"] = {{"name", name}, {"namespace", "team-a"}, {"labels", {{"kueue.x-k8s.io/multikueue-origin", "gantry"}}}};
  w["spec"]["queueName"] = "team-a";
  w["spec"]["podSets"] = nlohmann::json::array(
      {{{"name", "main"}, {"count", 1}, {"template", {{"spec", {{"containers", {container}}}}}}}});
  return w;
}

}  // namespace

TEST_CASE("KubeClient against gantry-sim", "[kube][e2e]") {
  const std::string sim_bin = std::string(GANTRY_BIN_DIR "/gantry-sim");
  if (ReadFile(sim_bin).empty()) {
    WARN("gantry-sim was not built: skipping");
    return;
  }
  TempDir dir;
  std::string sim_dir = dir.File("sim");
  WriteFile(dir.File("sim.yaml"),
            "clusters:\n- {name: c1, accelerator: {model: H100-80GB, gpusPerNode: 8}, nodes: 4, historyLimit: 30}\n");
  Process sim({sim_bin, "--config", dir.File("sim.yaml"), "--out-dir", sim_dir}, dir.path());
  REQUIRE(WaitFor([&] { return !ReadFile(sim_dir + "/ready").empty(); }, std::chrono::seconds(20)));
  auto creds = inventory::LoadKubeconfig(sim_dir + "/c1.kubeconfig", "", false);
  REQUIRE(creds.ok());
  kube::KubeClientOptions options;
  options.first_backoff = std::chrono::milliseconds(10);
  options.max_backoff = std::chrono::milliseconds(50);  // keeps Retry-After: 1 short in tests
  auto client = kube::KubeClient::Create(*creds, options);
  REQUIRE(client.ok());
  kube::KubeClient& kc = **client;

  SECTION("verbs and typed errors") {
    auto created = kc.Create(kWorkloads, Workload("w1"));
    REQUIRE(created.ok());
    CHECK(created->status == 201);
    std::string uid = created->body["metadata"]["uid"];

    auto again = kc.Create(kWorkloads, Workload("w1"), kube::KubeClient::Body::kOnlyOnError);
    REQUIRE(again.ok());
    CHECK(again->status == 409);
    REQUIRE(again->error);
    CHECK(again->error->reason == "AlreadyExists");
    CHECK(again->body.is_object());  // an error's body is always read

    // A caller that needs only the status code gets no parsed body.
    auto quiet = kc.Create(kWorkloads, Workload("w-quiet"), kube::KubeClient::Body::kOnlyOnError);
    REQUIRE(quiet.ok());
    CHECK(quiet->status == 201);
    CHECK(quiet->body.is_null());

    auto bad = Workload("w2");
    bad["spec"].erase("queueName");
    auto invalid = kc.Create(kWorkloads, bad);
    REQUIRE(invalid.ok());
    CHECK(invalid->status == 422);
    CHECK(invalid->error->reason == "Invalid");

    auto missing = kc.Get(kWorkloads + "/nope");
    REQUIRE(missing.ok());
    CHECK(missing->status == 404);
    CHECK(missing->error->reason == "NotFound");

    auto patched = kc.MergePatch(kWorkloads + "/w1", {{"metadata", {{"labels", {{"gantry.dev/epoch", "2"}}}}}});
    REQUIRE(patched.ok());
    CHECK(patched->status == 200);
    kube::ListOptions by_epoch;
    by_epoch.label_selector = "gantry.dev/epoch=2";
    auto listed = kc.List(kWorkloads, by_epoch);
    REQUIRE(listed.ok());
    REQUIRE(listed->body["items"].size() == 1);
    CHECK(listed->body["items"][0]["metadata"]["uid"] == uid);

    kube::DeleteOptions background;
    background.propagation_policy = "Background";
    auto deleted = kc.Delete(kWorkloads + "/w1", background);
    REQUIRE(deleted.ok());
    CHECK(deleted->ok());
    auto gone = kc.Delete(kWorkloads + "/w1");
    REQUIRE(gone.ok());
    CHECK(gone->status == 404);
  }

  SECTION("503 and 429 are retried, honouring Retry-After, then reported") {
    for (int code : {503, 429}) {
      INFO(code);
      REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "errors", "c1", "1.0", std::to_string(code)}).code == 0);
      auto r = kc.Get(kWorkloads);
      REQUIRE(r.ok());
      CHECK(r->status == code);
      CHECK(r->attempts == 3);
      CHECK(r->error->retry_after_seconds == 1);
    }
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "errors", "c1", "0"}).code == 0);
    auto ok = kc.Get(kWorkloads);
    REQUIRE(ok.ok());
    CHECK(ok->status == 200);
    CHECK(ok->attempts == 1);
  }

  SECTION("a list larger than a TLS record arrives whole") {
    for (int i = 0; i < 40; ++i) REQUIRE(kc.Create(kWorkloads, Workload("big-" + std::to_string(i))).ok());
    auto listed = kc.List(kWorkloads);
    REQUIRE(listed.ok());
    REQUIRE(listed->status == 200);
    CHECK(listed->body["items"].size() >= 40);
    CHECK(listed->body.dump().size() > 16 * 1024);  // more than one 16 KiB TLS record
  }

  SECTION("calls started on several clients overlap, and each gets its own answer") {
    REQUIRE(kc.Create(kWorkloads, Workload("taken")).ok());
    std::vector<std::unique_ptr<kube::KubeClient>> clients;
    for (int i = 0; i < 3; ++i) {
      auto c = kube::KubeClient::Create(*creds, options);
      REQUIRE(c.ok());
      clients.push_back(std::move(c.value()));
    }
    clients[0]->StartCreate(kWorkloads, Workload("p0"));
    clients[1]->StartCreate(kWorkloads, Workload("taken"), kube::KubeClient::Body::kOnlyOnError);
    clients[2]->StartDelete(kWorkloads + "/taken");
    // Answers are read in any order; each matches its own request.
    auto deleted = clients[2]->Finish();
    auto refused = clients[1]->Finish();
    auto created = clients[0]->Finish();
    REQUIRE(created.ok());
    CHECK(created->status == 201);
    CHECK(created->body["metadata"]["name"] == "p0");
    REQUIRE(refused.ok());
    CHECK(refused->status == 409);
    REQUIRE(refused->error);
    CHECK(refused->error->reason == "AlreadyExists");
    REQUIRE(deleted.ok());
    CHECK(deleted->status == 200);
    // The same connections serve the next calls.
    clients[1]->StartCreate(kWorkloads, Workload("p1"));
    auto next = clients[1]->Finish();
    REQUIRE(next.ok());
    CHECK(next->status == 201);
    // A Finish with nothing started is a programming error, said as such.
    auto nothing = clients[0]->Finish();
    REQUIRE_FALSE(nothing.ok());
    CHECK(nothing.status().code() == Code::kInternal);
  }

  SECTION("a started call that gets 503 is retried by Finish") {
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "errors", "c1", "1.0", "503"}).code == 0);
    kc.StartCreate(kWorkloads, Workload("retried"));
    auto r = kc.Finish();
    REQUIRE(r.ok());
    CHECK(r->status == 503);
    CHECK(r->attempts == 3);
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "errors", "c1", "0"}).code == 0);
    kc.StartCreate(kWorkloads, Workload("retried"));
    auto ok = kc.Finish();
    REQUIRE(ok.ok());
    CHECK(ok->status == 201);
    CHECK(ok->attempts == 1);
  }

  SECTION("a rotated token file is picked up on the next request") {
    // The same cluster through a kubeconfig whose token lives in a file.
    std::string token = creds->token_source->Token().value();
    std::string token_file = dir.File("token");
    WriteFile(token_file, "stale-token-0123456789\n");
    std::string kubeconfig = ReadFile(sim_dir + "/c1.kubeconfig");
    auto at = kubeconfig.find("token: ");
    REQUIRE(at != std::string::npos);
    kubeconfig.replace(at, kubeconfig.find('\n', at) - at, "tokenFile: " + token_file);
    WriteFile(dir.File("file.kubeconfig"), kubeconfig);
    auto file_creds = inventory::LoadKubeconfig(dir.File("file.kubeconfig"), "", false);
    REQUIRE(file_creds.ok());
    auto rotating = kube::KubeClient::Create(*file_creds, options);
    REQUIRE(rotating.ok());
    auto before = (*rotating)->Get(kWorkloads);
    REQUIRE(before.ok());
    CHECK(before->status == 401);
    // Rotate: a new file moved into place, as the kubelet does (new inode, new mtime).
    WriteFile(token_file + ".new", token + "\n");
    std::filesystem::rename(token_file + ".new", token_file);
    auto after = (*rotating)->Get(kWorkloads);
    REQUIRE(after.ok());
    CHECK(after->status == 200);
  }

  SECTION("an exec plugin's token is used, and the plugin runs again after a 401") {
    // The same cluster through a kubeconfig whose user is an exec plugin
    // (next to it: a relative command) printing the token in a file.
    const std::string token = creds->token_source->Token().value();
    WriteFile(dir.File("plugin-token"), token);
    WriteExecutable(dir.File("plugin"),
                    "#!/bin/sh\n"
                    "echo run >> \"$PLUGIN_RUNS\"\n"
                    "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
                    "\"status\":{\"token\":\"%s\"}}' \"$(cat \"$PLUGIN_TOKEN\")\"\n");
    std::string kubeconfig = ReadFile(sim_dir + "/c1.kubeconfig");
    auto at = kubeconfig.find("token: ");
    REQUIRE(at != std::string::npos);
    kubeconfig.replace(at, kubeconfig.find('\n', at) - at,
                       "exec: {apiVersion: client.authentication.k8s.io/v1, command: ./plugin, "
                       "interactiveMode: Never, env: [{name: PLUGIN_TOKEN, value: " +
                           dir.File("plugin-token") + "}, {name: PLUGIN_RUNS, value: " +
                           dir.File("runs") + "}]}");
    WriteFile(dir.File("exec.kubeconfig"), kubeconfig);
    auto exec_creds = inventory::LoadKubeconfig(dir.File("exec.kubeconfig"), "", false);
    REQUIRE(exec_creds.ok());
    REQUIRE(exec_creds->token_source->exec() != nullptr);
    auto plain = kube::KubeClient::Create(*exec_creds, options);
    REQUIRE(plain.ok());
    auto first = (*plain)->Get(kWorkloads);
    REQUIRE(first.ok());
    CHECK(first->status == 200);
    CHECK((*plain)->Get(kWorkloads)->status == 200);
    CHECK(ReadFile(dir.File("runs")) == "run\n");  // the token was reused

    // The same plugin on a clock the test moves, first printing a token the
    // cluster refuses.
    FakeClock clock;
    exec_creds->token_source =
        inventory::TokenSource::FromExec(*exec_creds->token_source->exec(), {.clock = &clock});
    WriteFile(dir.File("plugin-token"), "refused-token-0123456789");
    auto client = kube::KubeClient::Create(*exec_creds, options);
    REQUIRE(client.ok());
    auto refused = (*client)->Get(kWorkloads);
    REQUIRE(refused.ok());
    CHECK(refused->status == 401);
    CHECK(refused->attempts == 1);
    WriteFile(dir.File("plugin-token"), token);
    clock.Advance(inventory::kExecRetryAfterFailureMs);  // past the hold on a fresh refusal
    auto after = (*client)->Get(kWorkloads);
    REQUIRE(after.ok());
    CHECK(after->status == 200);  // the refused token was dropped: the plugin ran again
    CHECK((*client)->Get(kWorkloads)->status == 200);
    CHECK(ReadFile(dir.File("runs")) == "run\nrun\nrun\n");
  }

  SECTION("list-watch resumes after the server drops its watches, without relisting") {
    REQUIRE(kc.Create(kWorkloads, Workload("lw1"))->status == 201);
    std::mutex mu;
    std::set<std::string> listed, added;
    std::atomic<bool> stop{false};
    kube::ListWatchStats stats;
    std::thread informer([&] {
      auto own = kube::KubeClient::Create(*creds, options);  // one client per thread
      if (!own.ok()) return;
      kube::ListWatchOptions lw;
      lw.watch_timeout_seconds = 1;  // bounds how long stop waits on a quiet stream
      stats = kube::ListWatch(
          **own, kWorkloads, lw,
          [&](const std::vector<nlohmann::json>& items) {
            std::lock_guard lock(mu);
            for (const auto& i : items) listed.insert(i["metadata"]["name"].get<std::string>());
          },
          [&](const kube::WatchEvent& e) {
            std::lock_guard lock(mu);
            if (e.type == "ADDED") added.insert(e.object["metadata"]["name"].get<std::string>());
          },
          [&] { return stop.load(); });
    });
    auto has = [&](std::set<std::string>& set, const std::string& name) {
      std::lock_guard lock(mu);
      return set.count(name) > 0;
    };
    REQUIRE(WaitFor([&] { return has(listed, "lw1"); }));
    REQUIRE(kc.Create(kWorkloads, Workload("lw2"))->status == 201);
    CHECK(WaitFor([&] { return has(added, "lw2"); }));
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "kill-watches", "c1"}).code == 0);
    REQUIRE(kc.Create(kWorkloads, Workload("lw3"))->status == 201);
    CHECK(WaitFor([&] { return has(added, "lw3"); }));
    stop = true;
    informer.join();
    CHECK(stats.lists == 1);
    CHECK(stats.watches >= 2);
    CHECK_FALSE(has(added, "lw1"));  // listed, not replayed as an event
  }

  SECTION("list-watch: a failing cluster is relisted with a growing backoff, which relist_now cuts short") {
    std::atomic<int> failures{0}, lists{0};
    std::atomic<bool> stop{false}, kick{false};
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "partition", "c1", "1"}).code == 0);
    std::thread informer([&] {
      auto own = kube::KubeClient::Create(*creds, options);
      if (!own.ok()) return;
      kube::ListWatchOptions lw;
      lw.watch_timeout_seconds = 1;
      lw.max_backoff = std::chrono::seconds(60);
      lw.on_list_failed = [&](int, const std::string&) { ++failures; };
      lw.relist_now = [&] { return kick.exchange(false); };
      kube::ListWatch(
          **own, kWorkloads, lw, [&](const std::vector<nlohmann::json>&) { ++lists; },
          [](const kube::WatchEvent&) {}, [&] { return stop.load(); });
    });
    // Waits of 0.2, 0.4, 0.8, 1.6 and 3.2 s after the first five failures:
    // the next one is 6.4 s.
    const bool failing = WaitFor([&] { return failures >= 6; }, std::chrono::seconds(30));
    REQUIRE(Run({sim_bin, "ctl", "--out-dir", sim_dir, "heal", "c1"}).code == 0);
    CHECK(failing);
    CHECK(lists == 0);
    kick = true;
    CHECK(WaitFor([&] { return lists >= 1; }, std::chrono::seconds(3)));
    stop = true;
    informer.join();
  }

  SECTION("watch: events, resume from the last resourceVersion, 410 when too old") {
    auto second = kube::KubeClient::Create(*creds, options);  // one client per thread
    REQUIRE(second.ok());
    kube::KubeClient& kc2 = **second;
    auto list = kc.List(kWorkloads);
    REQUIRE(list.ok());
    std::string rv = list->body["metadata"]["resourceVersion"];
    REQUIRE(kc.Create(kWorkloads, Workload("a"))->status == 201);
    auto from = [](const std::string& resource_version) {
      kube::WatchOptions w;
      w.resource_version = resource_version;
      w.timeout_seconds = 5;
      return w;
    };
    std::vector<std::string> seen;
    auto end = kc.Watch(kWorkloads, from(rv), [&](const kube::WatchEvent& e) {
      seen.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
      return false;  // one is enough
    });
    REQUIRE(end.ok());
    CHECK(end->stopped);
    REQUIRE_FALSE(seen.empty());
    CHECK(seen[0] == "ADDED a");
    // A watcher that names the spec fields it reads gets those, and the
    // metadata and status, but no pod sets.
    kube::WatchOptions pruned = from(rv);
    pruned.only_fields = {{"spec", {"queueName"}}};
    nlohmann::json first;
    auto pruned_end = kc.Watch(kWorkloads, pruned, [&](const kube::WatchEvent& e) {
      first = e.object;
      return false;
    });
    REQUIRE(pruned_end.ok());
    CHECK(first["metadata"]["name"] == "a");
    CHECK(first["metadata"].contains("labels"));
    REQUIRE(first["spec"].is_object());
    CHECK(first["spec"].contains("queueName"));
    CHECK_FALSE(first["spec"].contains("podSets"));
    // A quiet watch ends soon after its owner asks it to stop, not when the
    // server's timeout (an hour here) ends it.
    std::atomic<bool> stop{false};
    kube::WatchOptions quiet = from(end->last_resource_version);
    quiet.timeout_seconds = 3600;
    quiet.stop_requested = [&] { return stop.load(); };
    auto waiting = std::async(std::launch::async, [&] {
      return kc2.Watch(kWorkloads, quiet, [](const kube::WatchEvent&) { return true; });
    });
    stop = true;
    REQUIRE(waiting.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    auto stopped = waiting.get();
    REQUIRE(stopped.ok());
    CHECK(stopped->stopped);
    // Resume from where that stopped: the next change arrives, not the first again.
    REQUIRE(kc.Create(kWorkloads, Workload("b"))->status == 201);
    seen.clear();
    end = kc.Watch(kWorkloads, from(end->last_resource_version),
                   [&](const kube::WatchEvent& e) {
                     seen.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
                     return e.object["metadata"]["name"] != "b";
                   });
    REQUIRE(end.ok());
    REQUIRE_FALSE(seen.empty());
    CHECK(seen.back() == "ADDED b");
    CHECK(std::count(seen.begin(), seen.end(), "ADDED a") == 0);
    CHECK_FALSE(end->expired);
    // Push the first resourceVersion out of the 30-event history (each
    // Workload is at least one ADDED event): 410, relist.
    for (int i = 0; i < 32; ++i) {
      REQUIRE(kc.Create(kWorkloads, Workload("x" + std::to_string(i)))->status == 201);
    }
    auto expired = kc.Watch(kWorkloads, from(rv),
                            [](const kube::WatchEvent&) { return true; });
    REQUIRE(expired.ok());
    CHECK(expired->expired);
  }
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("the client pool bounds concurrent requests per cluster", "[kube]") {
  // No server is needed: leases are handed out before any connection is made.
  inventory::ClusterCredentials creds = UnreachableCluster();
  kube::ClientPoolOptions options;
  options.size = 2;
  options.acquire_timeout = std::chrono::milliseconds(50);
  std::shared_ptr<kube::ClientPool> pool = kube::ClientPool::Create(creds, options);
  {
    auto a = pool->Acquire();
    auto b = pool->Acquire();
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(pool->in_use() == 2);
    auto c = pool->Acquire();  // the third caller is refused, not queued forever
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == Code::kUnavailable);
  }
  CHECK(pool->in_use() == 0);
  auto again = pool->Acquire();  // connections are reused
  CHECK(again.ok());
}

TEST_CASE("the client pool closes connections left idle longer than idle_close, not those in use", "[kube]") {
  inventory::ClusterCredentials creds = UnreachableCluster();
  kube::ClientPoolOptions options;
  options.size = 3;
  options.idle_close = std::chrono::milliseconds(0);  // idle at all: due to close
  std::shared_ptr<kube::ClientPool> pool = kube::ClientPool::Create(creds, options);
  {
    auto a = pool->Acquire();
    auto b = pool->Acquire();
    REQUIRE((a.ok() && b.ok()));
    CHECK(pool->CloseIdle() == 0);  // both in use
  }
  // b came back first, and was closed as a came back (Return looks too).
  CHECK(pool->CloseIdle() == 1);
  CHECK(pool->CloseIdle() == 0);
  CHECK(pool->in_use() == 0);
  // Returned and taken again at once: the one taken is in use, not closed.
  {
    auto a = pool->Acquire();
    auto b = pool->Acquire();
  }
  auto busy = pool->Acquire();  // the other idle one is closed as it goes
  REQUIRE(busy.ok());
  CHECK(pool->CloseIdle() == 0);
  CHECK(pool->in_use() == 1);

  options.idle_close = std::chrono::milliseconds(90'000);
  std::shared_ptr<kube::ClientPool> kept = kube::ClientPool::Create(creds, options);
  {
    auto a = kept->Acquire();
    auto b = kept->Acquire();
  }
  CHECK(kept->CloseIdle() == 0);  // not idle for 90 s
}

// The daemon crashed (SIGSEGV) when an inventory reload dropped the engine's
// pools while a pass still held a lease: the lease gave its client back to a
// destroyed pool. A lease now keeps its pool alive.
TEST_CASE("a client pool lives until its last lease is returned", "[kube]") {
  inventory::ClusterCredentials creds = UnreachableCluster();
  std::shared_ptr<kube::ClientPool> pool = kube::ClientPool::Create(creds, kube::ClientPoolOptions{});
  std::weak_ptr<kube::ClientPool> watch = pool;
  auto lease = pool->Acquire();
  REQUIRE(lease.ok());
  pool.reset();  // the engine forgets the pool (inventory reload)
  CHECK_FALSE(watch.expired());
  std::optional<kube::ClientPool::Lease> held(std::move(*lease));  // the Result keeps an empty one
  CHECK_FALSE(watch.expired());
  held.reset();  // the client goes back, then the pool goes
  CHECK(watch.expired());
}

}  // namespace gantry::testing

namespace gantry::testing {

TEST_CASE("Retry-After in seconds counts, the last of two given, and an HTTP date does not", "[kube]") {
  const std::string status = R"({"kind":"Status","code":429,"reason":"TooManyRequests"})";
  CHECK(kube::DecodeError(429, status, "3").retry_after_seconds == 3);
  CHECK(kube::DecodeError(429, status, "1, 4").retry_after_seconds == 4);  // the client joins repeated fields
  CHECK(kube::DecodeError(429, status, "Wed, 21 Oct 2026 07:28:00 GMT").retry_after_seconds == 0);
  CHECK(kube::DecodeError(429, status, "").retry_after_seconds == 0);
}

TEST_CASE("a cluster's error message reaches no log line or terminal with its control characters, nor with the "
          "token it echoes",
          "[kube]") {
  // A line break, an escape sequence (ESC [2J: clear the screen), a C1 CSI,
  // as JSON escapes them.
  const std::string status =
      R"({"kind":"Status","code":500,"reason":"Internal\nError",)"
      R"("message":"etcd timeout\n2026-12-07 info forged\u001b[2J\u009b31m red"})";
  const kube::KubeError e = kube::DecodeError(500, status, "");
  CHECK(e.message == "etcd timeout 2026-12-07 info forged?[2J?31m red");
  CHECK(e.reason == "Internal Error");
  std::string echoed = "user with Bearer SECRETTOKEN-0123456789 cannot list; SECRETTOKEN-0123456789 again";
  kube::WithoutToken(echoed, "SECRETTOKEN-0123456789");
  CHECK(echoed == "user with Bearer <token> cannot list; <token> again");
  // A proxy's page cut at 200 bytes inside the echoed token: its first
  // characters go too (from 8 on: fewer could be ordinary words).
  const std::string page = std::string(160, '.') + " Authorization: Bearer SECRETTOKEN-0123456789 denied";
  kube::KubeError cut = kube::DecodeError(403, page, "");
  REQUIRE(cut.message.size() == 200);
  CHECK_THAT(cut.message, Catch::EndsWith("Bearer SECRETTOKEN-01234"));  // what the cut leaves
  kube::WithoutToken(cut.message, "SECRETTOKEN-0123456789");
  CHECK(cut.message == std::string(160, '.') + " Authorization: Bearer <token>");
  std::string short_tail = "the answer ends in SECRET";  // 6 of its characters: left
  kube::WithoutToken(short_tail, "SECRETTOKEN-0123456789");
  CHECK(short_tail == "the answer ends in SECRET");
  // No words at all: what it was, and for a redirect what to do.
  CHECK_THAT(kube::DecodeError(307, "", "").message, Catch::Contains("HTTP 307, a redirect, which gantry does not "
                                                                     "follow"));
  CHECK(kube::DecodeError(502, "", "").message == "HTTP 502 with no message");
  std::string none = "no token here";
  kube::WithoutToken(none, "");
  CHECK(none == "no token here");
}

}  // namespace gantry::testing
