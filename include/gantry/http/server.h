// Server: an HTTP/1.1 server (optionally TLS 1.2+) that hands every request
// to one Handler. It is the server of the gantry API and of gantry-sim.
//
// One thread runs an edge-triggered epoll loop over every connection (see
// server.cc for why not Asio). Every read and write has a deadline:
// idle_timeout while a keep-alive connection waits for the next request
// (a new connection waits for its first no longer than read_timeout),
// read_timeout for the rest of the request once its first byte arrived (a
// slow client is closed), write_timeout per answer or stream chunk. Bodies
// over body_limit get 413 without being read; a Transfer-Encoding other
// than chunked gets 400 (or 501) and a close; a chunked body's trailer
// fields are not taken as headers. Handlers answer through a
// Responder, possibly later and from another thread (e.g. after a group
// commit); a handler that answers at once costs no thread switch.
//
// Shutdown is a protocol: Stop() closes the listener, closes idle keep-alive
// connections and streams, waits up to the drain deadline for in-flight
// requests, then closes what is left and joins the thread.
//
// Thread-safety: Start and Stop from one controlling thread; port() any time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gantry/common/status.h"
#include "gantry/http/message.h"

namespace gantry::http {

struct TlsServerOptions {
  std::string cert_chain_pem;   // leaf first, then intermediates
  std::string private_key_pem;
};

struct ServerOptions {
  // Loopback by default: exposing the API is a deliberate act.
  std::string address = "127.0.0.1";
  // 0 (the default) picks a free port; read it back with port(). The
  // daemon sets its own from `listen`; a server that forgot to would
  // otherwise fight over one port with everything else on the machine.
  uint16_t port = 0;
  // TLS when set (TLS 1.2 or newer only).
  std::optional<TlsServerOptions> tls;
  // Largest request body accepted; larger gets 413.
  std::size_t body_limit = 1 << 20;
  // Largest request head: a request line over it gets 414, header fields 431.
  std::size_t header_limit = 64 << 10;
  // Deadline for a whole request once its first byte arrived (headers and body).
  std::chrono::milliseconds read_timeout{10'000};
  // Deadline for one response write (a client that does not read is closed).
  std::chrono::milliseconds write_timeout{10'000};
  // How long a keep-alive connection may wait for its next request.
  std::chrono::milliseconds idle_timeout{60'000};
  // Deadline for the TLS handshake.
  std::chrono::milliseconds handshake_timeout{10'000};
  // Open connections at most. A new one beyond it takes the place of the
  // oldest that has sent no request yet, else of the oldest kept-alive one
  // between requests; when every one is busy with a request or a stream,
  // the new one is closed at accept.
  std::size_t max_connections = 10'000;
  // Sent as the Server header.
  std::string server_name = "gantry";
  // The io thread's name, as `top -H` shows it (at most 15 characters).
  std::string thread_name = "http";
  // Builds the body of errors the server answers by itself (400, 408, 413,
  // 500). Default: a plain-text body.
  std::function<Response(int status, std::string message)> error_response;
  // Told of each request the server refuses by itself, before any handler
  // (400, 408, 413, 414, 431, 501): for a metric. Called on the io thread.
  std::function<void(int status)> on_refused;
};

class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();  // Stop()s with a zero drain if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the threads. Errors name the address.
  Status Start();
  // The bound port (after Start).
  uint16_t port() const;
  // Requests currently being handled (not counting idle or streaming ones).
  int in_flight() const;
  // Whether the loop thread takes up a message posted now within `within`:
  // false while a handler (or anything else) holds it, and when stopped.
  // For the service manager's watchdog: a wedged loop answers nobody.
  bool Responsive(std::chrono::milliseconds within);
  void Stop(std::chrono::milliseconds drain = std::chrono::seconds(10));

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gantry::http
