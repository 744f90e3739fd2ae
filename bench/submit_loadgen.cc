// Load generator for the submission benchmark: N keep-alive connections post
// realistic gantry job documents (each with a unique name, so every request
// is a new durable record) to ADDR, and report durable submissions per second
// and latency percentiles.
//
//   submit_loadgen ADDR CONNECTIONS REQUESTS [RATE]
//
// Without RATE each connection sends its next request when the previous one is
// answered (closed loop: the throughput figure). With RATE (requests/s over
// all connections) sends follow a fixed schedule and latency is measured from
// the scheduled time, so a stall is not hidden (the latency figure).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "bench_job_document.h"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;

namespace {

struct Shared {
  std::string host, port;
  int total = 0;
  int next = 0;              // next request index to claim
  double interval_s = 0;     // RATE mode: seconds between sends on one connection
  std::vector<double> latencies_ms;
  int errors = 0;
  Clock::time_point start;
};

net::awaitable<void> Connection(Shared& shared, int index, int connections) {
  auto ex = co_await net::this_coro::executor;
  net::ip::tcp::resolver resolver(ex);
  auto endpoints = co_await resolver.async_resolve(shared.host, shared.port, net::use_awaitable);
  beast::tcp_stream stream(ex);
  co_await stream.async_connect(endpoints, net::use_awaitable);
  stream.socket().set_option(net::ip::tcp::no_delay(true));
  beast::flat_buffer buffer;
  net::steady_timer pacer(ex);
  int sent_here = 0;
  while (true) {
    int n = shared.next++;
    if (n >= shared.total) break;
    Clock::time_point scheduled = Clock::now();
    if (shared.interval_s > 0) {
      // Connection i sends at start + (i/connections + k) * interval.
      auto offset = std::chrono::duration<double>(shared.interval_s * (sent_here + double(index) / connections));
      scheduled = shared.start + std::chrono::duration_cast<Clock::duration>(offset);
      pacer.expires_at(scheduled);
      co_await pacer.async_wait(net::use_awaitable);
    }
    ++sent_here;
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/api/v1/namespaces/bench/jobs", 11};
    req.set(bhttp::field::host, shared.host);
    req.set(bhttp::field::content_type, "application/json");
    req.body() = gantry::bench::JobDocument("bench-" + std::to_string(n));
    req.prepare_payload();
    co_await bhttp::async_write(stream, req, net::use_awaitable);
    bhttp::response<bhttp::string_body> res;
    co_await bhttp::async_read(stream, buffer, res, net::use_awaitable);
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - scheduled).count();
    if (res.result_int() == 201) {
      shared.latencies_ms.push_back(ms);
    } else {
      ++shared.errors;
    }
  }
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: submit_loadgen ADDR CONNECTIONS REQUESTS [RATE]\n");
    return 2;
  }
  std::string addr = argv[1];
  Shared shared;
  shared.host = addr.substr(0, addr.rfind(':'));
  shared.port = addr.substr(addr.rfind(':') + 1);
  int connections = std::stoi(argv[2]);
  shared.total = std::stoi(argv[3]);
  double rate = argc > 4 ? std::stod(argv[4]) : 0;
  if (rate > 0) shared.interval_s = connections / rate;
  net::io_context ioc;
  shared.start = Clock::now();
  int failed = 0;
  for (int i = 0; i < connections; ++i) {
    net::co_spawn(ioc, Connection(shared, i, connections), [&failed](std::exception_ptr e) {
      if (e) ++failed;
    });
  }
  ioc.run();
  double seconds = std::chrono::duration<double>(Clock::now() - shared.start).count();
  auto& v = shared.latencies_ms;
  std::sort(v.begin(), v.end());
  std::printf("requests=%zu errors=%d failed_connections=%d seconds=%.2f durable_per_s=%.0f "
              "p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f\n",
              v.size(), shared.errors, failed, seconds, v.size() / seconds, Percentile(v, 0.50),
              Percentile(v, 0.99), Percentile(v, 0.999), v.empty() ? 0.0 : v.back());
  return shared.errors == 0 && failed == 0 ? 0 : 1;
}
