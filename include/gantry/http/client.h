// Client: a small blocking HTTP/1.1 client (optionally TLS) with one
// keep-alive connection, used by the CLI, the tests and the benchmarks.
//
// Every step has a deadline (connect, handshake, the whole exchange). TLS
// verifies the peer against the given CA (or the system store when none is
// given), sends SNI and checks the host name or IP address.
//
// Thread-safety: one Client per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gantry/common/status.h"

namespace gantry::http {

// The largest response body a Client reads whole (a larger one fails the
// request: "body limit exceeded").
inline constexpr std::size_t kResponseBodyLimit = std::size_t{64} << 20;

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5'000};
  // Deadline for writing the request and reading the whole response.
  std::chrono::milliseconds request_timeout{30'000};
  // PEM text of the CA bundle to trust for https (takes precedence over ca_file).
  std::string ca_pem;
  std::string ca_file;
  // Client certificate for mutual TLS (PEM), optional.
  std::string client_cert_pem;
  std::string client_key_pem;
  // The name sent as SNI and checked against the server's certificate, in
  // place of the URL's host (a kubeconfig's tls-server-name: an API server
  // reached by address whose certificate names it). "" = the URL's host.
  std::string tls_server_name;
  // The server's certificate is not verified at all (a kubeconfig's
  // insecure-skip-tls-verify, which gantry takes only when the cluster's
  // file allows it). No CA may be given with it.
  bool insecure_skip_verify = false;
  // What a refused handshake tells to check when the server's certificate
  // is not signed by a CA trusted here ("": a worker cluster's kubeconfig
  // CA, the daemon's case; the CLI names its own --ca-file). Set, a name
  // the certificate lacks is not told to be set in a kubeconfig either.
  std::string untrusted_hint;
  // Readable when the client's owner stops (a StopSignal's fd; -1: none):
  // every wait of every request (connect, handshake, write, read) watches
  // it beside the socket, and gives up at once, kUnavailable, once it is.
  // A daemon's stop is then not held by requests to a cluster that does not
  // answer, each up to its deadline.
  int stop_fd = -1;
};

// How much of a non-2xx answer's body Stream keeps: an error body is a
// Kubernetes Status or a proxy's page, a few KiB at most. A server that
// sends more (or never ends) would otherwise be buffered without limit.
constexpr std::size_t kStreamErrorBodyLimit = 64 << 10;

struct ClientResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-cased names; a repeated field's values joined by ", "
  // Stream only: the non-2xx body was longer than kStreamErrorBodyLimit
  // and body holds its first kStreamErrorBodyLimit bytes (the rest was
  // left unread, its connection closed).
  bool body_cut = false;
  // The request was written whole on a kept-alive connection that then
  // closed without an answer, and this answer is to the same request sent
  // again on a new connection: the first may have been carried out (the
  // server stopped after doing it, say), so a refusal here does not show
  // that nothing was done.
  bool resent = false;
};

class Client {
 public:
  // base_url: "http://127.0.0.1:7070" or "https://host:port". Code::kInvalidArgument
  // for a URL it cannot use.
  static Result<std::unique_ptr<Client>> Create(const std::string& base_url, ClientOptions options = {});
  ~Client();

  // Sends one request on the kept-alive connection (reconnecting when the
  // server closed it). Transport failures are kUnavailable (cannot connect)
  // or kDeadlineExceeded; any HTTP status is a successful Result.
  Result<ClientResponse> Do(const std::string& method, const std::string& target,
                            const std::string& body = "",
                            const std::vector<std::pair<std::string, std::string>>& headers = {});

  // Do in two halves: Begin sends the request (connecting first if needed),
  // Finish reads its answer, under the same request deadline. Between them
  // the caller may begin requests on other clients, so that their round
  // trips overlap instead of following one another. Each successful Begin
  // wants its Finish (a Begin or Do before it reads and drops the unread
  // answer first); a failed Begin leaves nothing to finish. Errors are those of Do, with the same
  // one retry on a fresh connection when a kept-alive one was closed.
  Status Begin(const std::string& method, const std::string& target, const std::string& body = "",
               const std::vector<std::pair<std::string, std::string>>& headers = {});
  Result<ClientResponse> Finish();
  // Whether the answer of the request Begin sent has come (Finish would not
  // wait for it), waiting for it until `until` at most (or the request's
  // deadline). True when there is nothing to wait for.
  bool AnswerBy(std::chrono::steady_clock::time_point until);
  // How many connections this client has opened so far: a request that
  // moved it on opened one (and made its TLS handshake).
  int connects() const;
  // The request deadline of the requests sent from now on (options'
  // request_timeout until then): a caller that sends again within one
  // overall deadline gives each try what is left of it.
  void set_request_timeout(std::chrono::milliseconds timeout);
  // How many times a read on the current connection has waited for bytes:
  // a Finish that did not move it found its answer there already.
  uint64_t read_waits() const;
  // Sends a request and hands the response body to on_data piece by piece as
  // it arrives (a watch). Returns when the body ends, on_data returns false,
  // or no byte arrived for idle_timeout (kDeadlineExceeded). The status and
  // headers are in the result; its body is empty. A non-2xx answer's body is
  // read into the result instead of being streamed, up to
  // kStreamErrorBodyLimit (see body_cut). stop_requested,
  // when given, is asked about every 100 ms while waiting for data: true
  // abandons the stream (and its connection) as if on_data had said false,
  // so a quiet stream does not hold up its owner's shutdown (a stop before
  // the response's head returns status 0). With stop_fd
  // (readable when the owner wants to stop: a StopSignal's fd), the wait
  // watches it instead and is never woken just to ask.
  Result<ClientResponse> Stream(const std::string& method, const std::string& target,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                std::chrono::milliseconds idle_timeout,
                                const std::function<bool(std::string_view)>& on_data,
                                const std::function<bool()>& stop_requested = {}, int stop_fd = -1);

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gantry::http
