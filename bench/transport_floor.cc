// transport_floor: what an HTTPS round trip alone costs this machine in CPU,
// sent the way the dispatch engine sends them (gantry's http::Client on
// kept-alive connections: Begin in every cluster, then Finish each) to
// servers run the way gantry-sim runs them (one gantry http::Server, with
// its own loop thread, per cluster), both in this process. The servers
// answer at once with a fixed body: no JSON, no store, no Kueue, no watch.
// What the dispatch benchmark measures per job can be read against it: a job
// dispatched AllAtOnce to 10 clusters makes 18 such round trips (and about
// 33 watch events and its store writes, which this leaves out), so this is
// a lower bound of the CPU a job costs, whatever the code around it does.
//
//   transport_floor [CLUSTERS=10] [WORKERS=16] [SECONDS=5] [BODY_BYTES=1500] [TRIPS_PER_JOB=18]
//
// Prints round trips/s, the CPU per round trip (both ends and the kernel:
// the process's user + system time over the round trips), context switches
// per round trip, and the jobs/s that the round trips alone allow on this
// machine's cores.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "certs.h"
#include "gantry/http/client.h"
#include "gantry/http/server.h"

namespace {

struct Usage {
  double cpu_s = 0;
  long switches = 0;
};

Usage Now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return {secs(u.ru_utime) + secs(u.ru_stime), u.ru_nvcsw + u.ru_nivcsw};
}

int Arg(int argc, char** argv, int i, int otherwise) { return argc > i ? std::atoi(argv[i]) : otherwise; }

}  // namespace

int main(int argc, char** argv) {
  const int clusters = Arg(argc, argv, 1, 10);
  const int workers = Arg(argc, argv, 2, 16);
  const int seconds = Arg(argc, argv, 3, 5);
  const int body_bytes = Arg(argc, argv, 4, 1500);
  const int trips_per_job = Arg(argc, argv, 5, 18);
  if (clusters < 1 || workers < 1 || seconds < 1 || body_bytes < 0 || trips_per_job < 1) {
    std::fprintf(stderr, "usage: transport_floor [CLUSTERS] [WORKERS] [SECONDS] [BODY_BYTES] [TRIPS_PER_JOB]\n");
    return 2;
  }
  auto certs = gantry::sim::MakeClusterCerts("floor");
  if (!certs.ok()) {
    std::fprintf(stderr, "certificates: %s\n", certs.status().ToString().c_str());
    return 1;
  }
  const std::string answer(static_cast<std::size_t>(body_bytes), 'x');
  std::vector<std::unique_ptr<gantry::http::Server>> servers;
  for (int c = 0; c < clusters; ++c) {
    gantry::http::ServerOptions opts;
    opts.tls = gantry::http::TlsServerOptions{certs->cert_pem, certs->key_pem};
    opts.idle_timeout = std::chrono::minutes(5);
    auto server = std::make_unique<gantry::http::Server>(
        std::move(opts), [&answer](gantry::http::Request, gantry::http::Responder respond) {
          respond(gantry::http::JsonResponse(201, answer));
        });
    if (auto s = server->Start(); !s.ok()) {
      std::fprintf(stderr, "server: %s\n", s.ToString().c_str());
      return 1;
    }
    servers.push_back(std::move(server));
  }

  const std::string body(static_cast<std::size_t>(body_bytes), 'y');
  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<long> trips{0}, failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      gantry::http::ClientOptions copts;
      copts.ca_pem = certs->ca_pem;
      std::vector<std::unique_ptr<gantry::http::Client>> clients;
      for (const auto& s : servers) {
        auto client = gantry::http::Client::Create("https://127.0.0.1:" + std::to_string(s->port()), copts);
        if (!client.ok()) {
          failures.fetch_add(1);
          return;
        }
        clients.push_back(std::move(*client));
      }
      while (!stop.load()) {
        for (auto& c : clients) {  // one wave: a request in every cluster, then their answers
          if (!c->Begin("POST", "/apis/floor/v1/namespaces/team-a/things", body).ok()) failures.fetch_add(1);
        }
        long done = 0;
        for (auto& c : clients) {
          auto r = c->Finish();
          if (r.ok() && r->status == 201) {
            ++done;
          } else {
            failures.fetch_add(1);
          }
        }
        if (measuring.load()) trips.fetch_add(done);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // connections made, handshakes done
  const Usage before = Now();
  const auto start = std::chrono::steady_clock::now();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  measuring = false;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Usage after = Now();
  stop = true;
  for (auto& t : threads) t.join();
  for (auto& s : servers) s->Stop();

  const long n = trips.load();
  if (n == 0 || failures.load() > 0) {
    std::fprintf(stderr, "round trips %ld, failures %ld\n", n, failures.load());
    return 1;
  }
  const double cpu_us = (after.cpu_s - before.cpu_s) * 1e6 / static_cast<double>(n);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double job_ms = cpu_us * trips_per_job / 1000.0;
  std::printf("transport floor: %d clusters, %d workers, %d-byte bodies: %.0f round trips/s in %.1f s\n", clusters,
              workers, body_bytes, static_cast<double>(n) / wall, wall);
  std::printf("  cpu per round trip %.1f us (client, server and kernel together), %.2f context switches\n", cpu_us,
              static_cast<double>(after.switches - before.switches) / static_cast<double>(n));
  std::printf("  %d round trips per job: %.2f ms of CPU per job, at most %.0f jobs/s on %u cores from them alone\n",
              trips_per_job, job_ms, cores * 1000.0 / job_ms, cores);
  return 0;
}
