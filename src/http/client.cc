#include "gantry/http/client.h"
#include "gantry/http/message.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "connection.h"
#include "gantry/common/ascii.h"
#include "gantry/common/stop_signal.h"

namespace gantry::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

// How often a quiet stream asks whether its owner wants it stopped.
constexpr std::chrono::milliseconds kStopPoll{100};

namespace {

using TlsContext = net::ssl::context;

Result<std::shared_ptr<TlsContext>> NewTlsContext(const ClientOptions& o) {
  auto ctx = std::make_shared<TlsContext>(TlsContext::tls_client);
  ctx->set_options(TlsContext::default_workarounds | TlsContext::no_tlsv1 | TlsContext::no_tlsv1_1);
  error_code ec;
  if (o.insecure_skip_verify) {
    if (!o.ca_pem.empty() || !o.ca_file.empty()) return Status::Invalid("TLS: a CA given with insecure_skip_verify");
    ctx->set_verify_mode(net::ssl::verify_none);
  } else {
    ctx->set_verify_mode(net::ssl::verify_peer);
    // A kubeconfig's certificate-authority may be the intermediate that
    // issued the server's certificate, not the root above it: Go (kubectl)
    // trusts any certificate of its pool as an anchor, OpenSSL by default
    // only a self-signed one.
    X509_STORE_set_flags(SSL_CTX_get_cert_store(ctx->native_handle()), X509_V_FLAG_PARTIAL_CHAIN);
    if (!o.ca_pem.empty()) {
      ctx->add_certificate_authority(net::buffer(o.ca_pem), ec);
    } else if (!o.ca_file.empty()) {
      ctx->load_verify_file(o.ca_file, ec);
    } else {
      ctx->set_default_verify_paths(ec);
    }
    if (ec) {
      const bool file = o.ca_pem.empty() && !o.ca_file.empty();
      return Status::Invalid(file ? fmt::format("TLS CA {}: {}", o.ca_file, ec.message()) : "TLS CA: " + ec.message());
    }
  }
  if (!o.client_cert_pem.empty()) {
    ctx->use_certificate_chain(net::buffer(o.client_cert_pem), ec);
    if (!ec) ctx->use_private_key(net::buffer(o.client_key_pem), TlsContext::pem, ec);
    if (ec) return Status::Invalid("TLS client certificate: " + ec.message());
  }
  return ctx;
}

// The TLS context for o, shared by every Client with the same trust and
// identity while one of them lives: building one (OpenSSL's context, the CA
// and client certificate parsed) costs CPU and 23 KiB, and at 100 clusters
// the daemon keeps about a thousand connections, a dozen per cluster. A context is never changed once built, and OpenSSL
// lets many threads make connections from one context at once. A CA given
// as a file is read again for every Client, so that a rotated file counts.
Result<std::shared_ptr<TlsContext>> SharedTlsContext(const ClientOptions& o) {
  if (!o.ca_file.empty()) return NewTlsContext(o);
  static std::mutex mu;
  static auto* contexts = new std::map<std::vector<std::string>, std::weak_ptr<TlsContext>>();
  std::vector<std::string> key{o.ca_pem, o.client_cert_pem, o.client_key_pem, o.insecure_skip_verify ? "insecure" : ""};
  std::lock_guard lock(mu);
  if (auto it = contexts->find(key); it != contexts->end()) {
    if (auto ctx = it->second.lock()) return ctx;
  }
  auto made = NewTlsContext(o);
  if (!made.ok()) return made.status();
  std::erase_if(*contexts, [](const auto& entry) { return entry.second.expired(); });
  (*contexts)[std::move(key)] = *made;
  return made;
}

}  // namespace

class Client::Impl {
 public:
  Impl(bool tls, std::string host, std::string port, ClientOptions options)
      : tls_(tls),
        host_(std::move(host)),
        port_(std::move(port)),
        authority_(HostPort(host_, port_)),
        options_(std::move(options)) {}

  Status Init();
  Result<ClientResponse> Do(const std::string& method, const std::string& target,
                            const std::string& body,
                            const std::vector<std::pair<std::string, std::string>>& headers);
  Status Begin(const std::string& method, const std::string& target, const std::string& body,
               const std::vector<std::pair<std::string, std::string>>& headers);
  Result<ClientResponse> Finish();
  bool AnswerBy(Connection::Clock::time_point until) {
    return !pending_ || !conn_ || conn_->Readable(until);
  }
  Result<ClientResponse> OpenStream(const std::string& method, const std::string& target,
                                    const std::vector<std::pair<std::string, std::string>>& headers,
                                    std::chrono::milliseconds idle_timeout,
                                    const std::function<bool(std::string_view)>& on_data,
                                    const std::function<bool()>& stop_requested, int stop_fd);
  int connects() const { return connects_; }
  void set_request_timeout(std::chrono::milliseconds timeout) { options_.request_timeout = timeout; }
  // Summed over this client's connections, the closed ones included (an
  // answer that closes its connection must still show whether it waited).
  uint64_t read_waits() const { return closed_read_waits_ + (conn_ ? conn_->read_waits() : 0); }

 private:
  using Request = bhttp::request<bhttp::string_body>;
  Request MakeRequest(const std::string& method, const std::string& target, const std::string& body,
                      const std::vector<std::pair<std::string, std::string>>& headers);
  // *answered false: the connection was found closed before the response's
  // head, so the request may be sent again on a new connection.
  Result<ClientResponse> StreamOn(const Request& req, std::chrono::milliseconds idle_timeout,
                                  const std::function<bool(std::string_view)>& on_data,
                                  const std::function<bool()>& stop_requested, int stop_fd, bool* answered);
  Status Connect();
  // Whether options_.stop_fd is readable: the owner stops.
  bool Stopping() const;
  Result<ClientResponse> Exchange(const Request& req);
  Status Write(const Request& req);
  Result<ClientResponse> Read(const Request& req);
  Status TransportError(error_code ec, const Request& req) const;
  bool connected() const { return conn_ != nullptr; }
  void Reset() {
    if (conn_) closed_read_waits_ += conn_->read_waits();
    conn_.reset();
  }

  bool tls_;
  std::string host_, port_;  // an IPv6 address without its brackets
  std::string authority_;    // "host:port", "[::1]:port": the Host header, and messages
  ClientOptions options_;
  std::shared_ptr<net::ssl::context> ssl_;  // shared, never changed; each connection's SSL comes from it
  std::unique_ptr<Connection> conn_;
  // The request Begin sent and Finish has not answered yet, and whether it
  // went out on a kept-alive connection (one the server may have closed).
  std::optional<Request> pending_;
  bool pending_reused_ = false;
  int connects_ = 0;
  uint64_t closed_read_waits_ = 0;
};

Status Client::Impl::Init() {
  if (!tls_) return Status::Ok();
  auto ctx = SharedTlsContext(options_);
  if (!ctx.ok()) return ctx.status();
  ssl_ = std::move(*ctx);
  return Status::Ok();
}

Status Client::Impl::Connect() {
  Reset();
  if (Stopping()) return Status::Unavailable(fmt::format("connect to {}: not tried, stopping", authority_));
  ++connects_;
  auto conn = Connection::Open(host_, port_, tls_ ? ssl_->native_handle() : nullptr,
                               Connection::Clock::now() + options_.connect_timeout, options_.tls_server_name,
                               options_.untrusted_hint, options_.stop_fd);
  if (!conn.ok()) return conn.status();
  conn_ = std::move(*conn);
  return Status::Ok();
}

Status Client::Impl::TransportError(error_code ec, const Request& req) const {
  if (ec == beast::error::timeout) {
    return Status::Deadline(fmt::format("{} {}: no answer from {} within {} ms",
                                        req.method_string(), req.target(), authority_,
                                        options_.request_timeout.count()));
  }
  if (ec == boost::asio::error::operation_aborted) {
    return Status::Unavailable(fmt::format("{} {} on {}: abandoned, stopping", req.method_string(), req.target(),
                                           authority_));
  }
  return Status::Unavailable(fmt::format("{} {}: {}", req.method_string(), req.target(), ec.message()));
}

bool Client::Impl::Stopping() const { return options_.stop_fd >= 0 && StopFdSet(options_.stop_fd); }

// Writes the request under a fresh request deadline; Read, later, answers
// under the same deadline.
Status Client::Impl::Write(const Request& req) {
  conn_->set_deadline(Connection::Clock::now() + options_.request_timeout);
  conn_->set_stop(nullptr, kStopPoll, options_.stop_fd);
  error_code ec;
  bhttp::write(*conn_, req, ec);
  return ec ? TransportError(ec, req) : Status::Ok();
}

Result<ClientResponse> Client::Impl::Read(const Request& req) {
  error_code ec;
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  // A page of a list (500 objects) or one object is a few MiB at most; a
  // body is held whole, and parsed into a tree about ten times its size: a
  // server's larger answer is refused rather than held (64 MiB).
  parser.body_limit(std::uint64_t{kResponseBodyLimit});
  bhttp::read(*conn_, buffer, parser, ec);
  if (ec) return TransportError(ec, req);
  auto res = parser.release();
  ClientResponse out;
  out.status = static_cast<int>(res.result_int());
  out.body = std::move(res.body());
  for (const auto& f : res) {
    // A field given more than once is one list, comma-separated (RFC 9110 5.3).
    std::string& value = out.headers[ToLowerAscii(f.name_string())];
    value += (value.empty() ? "" : ", ") + std::string(f.value());
  }
  if (!res.keep_alive()) Reset();
  return out;
}

Result<ClientResponse> Client::Impl::Exchange(const Request& req) {
  GANTRY_RETURN_IF_ERROR(Write(req));
  return Read(req);
}

namespace {

// What would make the request another on the wire, or "": a request target
// with a space or a control character in it, a header name or value with a
// line break or NUL (Beast writes them as given). A line break in a token
// or a server URL would add headers, or a request, of its own.
std::string RequestTextProblem(const std::string& target,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
  if (HasSpaceOrControl(target)) return "the request target holds a space or a control character";
  constexpr std::string_view kBreaks("\r\n\0", 3);
  for (const auto& [name, value] : headers) {
    if (name.find_first_of(kBreaks) != std::string::npos || value.find_first_of(kBreaks) != std::string::npos) {
      return "header " + name.substr(0, name.find_first_of(kBreaks)) + " holds a line break or NUL";
    }
  }
  return "";
}

}  // namespace

Client::Impl::Request Client::Impl::MakeRequest(const std::string& method, const std::string& target,
                                                const std::string& body,
                                                const std::vector<std::pair<std::string, std::string>>& headers) {
  Request req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(bhttp::field::host, authority_);
  req.set(bhttp::field::user_agent, "gantry");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") req.prepare_payload();
  req.keep_alive(true);
  return req;
}

Result<ClientResponse> Client::Impl::Do(const std::string& method, const std::string& target,
                                        const std::string& body,
                                        const std::vector<std::pair<std::string, std::string>>& headers) {
  GANTRY_RETURN_IF_ERROR(Begin(method, target, body, headers));
  return Finish();
}

Status Client::Impl::Begin(const std::string& method, const std::string& target, const std::string& body,
                           const std::vector<std::pair<std::string, std::string>>& headers) {
  // An answer still unread would be taken for this request's: read it first.
  if (pending_) (void)Finish();
  if (std::string problem = RequestTextProblem(target, headers); !problem.empty()) {
    return Status::Invalid(fmt::format("{} request not sent: {}", method, problem));
  }
  pending_ = MakeRequest(method, target, body, headers);
  // A kept-alive connection may have been closed by the server meanwhile:
  // one fresh connection is tried then (here if the write fails, in Finish
  // if the read does). gantry's writes are idempotent (submission by name,
  // remote objects by deterministic name), so a repeat is safe; an answer
  // to a request sent again after its read failed says so
  // (ClientResponse::resent), since the first may have been carried out.
  for (int attempt = 0; attempt < 2; ++attempt) {
    pending_reused_ = connected();
    if (!pending_reused_) {
      if (Status st = Connect(); !st.ok()) {
        pending_.reset();
        return st;
      }
    }
    Status st = Write(*pending_);
    if (st.ok()) return st;
    Reset();
    if (!pending_reused_ || st.code() == Code::kDeadlineExceeded || Stopping()) {
      pending_.reset();
      return st;
    }
  }
  pending_.reset();
  return Status::Unavailable("unreachable");
}

Result<ClientResponse> Client::Impl::Finish() {
  if (!pending_) return Status::Internal("http client: Finish without a request begun");
  Request req = std::move(*pending_);
  pending_.reset();
  Result<ClientResponse> r = Read(req);
  if (r.ok()) return r;
  Reset();
  if (!pending_reused_ || r.status().code() == Code::kDeadlineExceeded || Stopping()) return r;
  // The server closed the kept-alive connection before answering.
  spdlog::debug("http client: {} {} on {}: {}; sending it again on a new connection",
                req.method_string(), req.target(), authority_, r.status().message());
  GANTRY_RETURN_IF_ERROR(Connect());
  r = Exchange(req);
  if (!r.ok()) Reset();
  if (r.ok()) r->resent = true;
  return r;
}

Result<ClientResponse> Client::Impl::StreamOn(const Request& req, std::chrono::milliseconds idle_timeout,
                                              const std::function<bool(std::string_view)>& on_data,
                                              const std::function<bool()>& stop_requested, int stop_fd,
                                              bool* answered) {
  error_code ec;
  conn_->set_deadline(Connection::Clock::now() + options_.request_timeout);
  // From the first byte on, a wait also watches stop_fd, or (without one)
  // is cut into kStopPoll slices, each followed by a look at
  // stop_requested: a stop abandons the stream and its connection.
  // (The client's own stop_fd only when the caller gave no way to stop: a
  // function given is asked, as it says.)
  conn_->set_stop(stop_requested, kStopPoll, stop_fd >= 0 || stop_requested ? stop_fd : options_.stop_fd);
  bhttp::write(*conn_, req, ec);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(boost::none);  // a watch has no end by design
  if (!ec) bhttp::read_header(*conn_, buffer, parser, ec);
  ClientResponse out;
  if (ec) {
    Reset();
    // Only a connection found closed (the server had dropped a kept-alive
    // one) may take the request again: after a timeout the server may
    // have it, and a stop wants nothing sent.
    *answered = ec == beast::error::timeout || ec == net::error::operation_aborted;
    if (ec == net::error::operation_aborted) return out;  // stopped: status 0, nothing read
    return TransportError(ec, req);
  }
  *answered = true;
  out.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get()) {
    out.headers[ToLowerAscii(f.name_string())] = std::string(f.value());
  }
  bool success = out.status >= 200 && out.status < 300;
  char chunk[16 * 1024];
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof(chunk);
    conn_->set_deadline(Connection::Clock::now() + idle_timeout);
    bhttp::read_some(*conn_, buffer, parser, ec);
    if (ec == net::error::operation_aborted) {
      Reset();
      return out;
    }
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) {
      Reset();
      if (ec == beast::error::timeout) {
        return Status::Deadline(fmt::format("{}: no data for {} ms", req.target(), idle_timeout.count()));
      }
      if (ec == bhttp::error::partial_message || ec == net::error::eof) {
        return Status::Unavailable(fmt::format("{}: the server closed the stream before its end", req.target()));
      }
      return Status::Unavailable(fmt::format("{}: {}", req.target(), ec.message()));
    }
    std::size_t got = sizeof(chunk) - parser.get().body().size;
    if (got == 0) continue;
    if (!success) {
      const std::size_t room = kStreamErrorBodyLimit - out.body.size();
      out.body.append(chunk, std::min(got, room));
      if (got <= room) continue;
      out.body_cut = true;
      Reset();  // the rest is not read: the connection goes with it
      return out;
    }
    if (!on_data(std::string_view(chunk, got))) {
      Reset();  // the rest of the stream is abandoned with the connection
      return out;
    }
  }
  conn_->set_stop(nullptr, kStopPoll);
  if (!parser.keep_alive()) Reset();
  return out;
}

Result<ClientResponse> Client::Impl::OpenStream(const std::string& method, const std::string& target,
                                            const std::vector<std::pair<std::string, std::string>>& headers,
                                            std::chrono::milliseconds idle_timeout,
                                            const std::function<bool(std::string_view)>& on_data,
                                            const std::function<bool()>& stop_requested, int stop_fd) {
  // An unread answer goes with its connection. A connection left clean by a
  // stream that ended whole (or by a request) is used again, and if the
  // server had closed it meanwhile, the request goes once more on a new
  // one: nothing of it was answered.
  if (pending_) {
    Reset();
    pending_.reset();
  }
  if (std::string problem = RequestTextProblem(target, headers); !problem.empty()) {
    return Status::Invalid(fmt::format("{} request not sent: {}", method, problem));
  }
  const bool reused = connected();
  if (!reused) GANTRY_RETURN_IF_ERROR(Connect());
  const Request req = MakeRequest(method, target, "", headers);
  bool answered = false;
  auto res = StreamOn(req, idle_timeout, on_data, stop_requested, stop_fd, &answered);
  if (res.ok() || answered || !reused) return res;
  GANTRY_RETURN_IF_ERROR(Connect());
  return StreamOn(req, idle_timeout, on_data, stop_requested, stop_fd, &answered);
}

Result<std::unique_ptr<Client>> Client::Create(const std::string& base_url, ClientOptions options) {
  std::string_view url = base_url;
  bool tls;
  if (url.starts_with("http://")) {
    tls = false;
    url.remove_prefix(7);
  } else if (url.starts_with("https://")) {
    tls = true;
    url.remove_prefix(8);
  } else {
    return Status::Invalid(fmt::format("server URL '{}' must start with http:// or https://", base_url));
  }
  if (auto slash = url.find('/'); slash != std::string_view::npos) url = url.substr(0, slash);
  std::string host, port = tls ? "443" : "80";
  if (url.starts_with("[")) {
    auto close = url.find(']');
    if (close == std::string_view::npos) return Status::Invalid("bad IPv6 address in " + base_url);
    host = std::string(url.substr(1, close - 1));
    if (close + 1 < url.size() && url[close + 1] == ':') port = std::string(url.substr(close + 2));
  } else if (auto colon = url.rfind(':'); colon != std::string_view::npos) {
    host = std::string(url.substr(0, colon));
    port = std::string(url.substr(colon + 1));
  } else {
    host = std::string(url);
  }
  if (host.empty() || port.empty()) return Status::Invalid("no host in server URL " + base_url);
  // A number of 1..65535, nothing else: getaddrinfo reads 99999 as 34463
  // (modulo 65536), and takes a service name ("http") as its port.
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535) {
    return Status::Invalid(fmt::format("server URL '{}': port '{}' is not a number from 1 to 65535", base_url, port));
  }
  auto impl = std::make_unique<Impl>(tls, host, port, std::move(options));
  GANTRY_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<ClientResponse> Client::Stream(const std::string& method, const std::string& target,
                                      const std::vector<std::pair<std::string, std::string>>& headers,
                                      std::chrono::milliseconds idle_timeout,
                                      const std::function<bool(std::string_view)>& on_data,
                                      const std::function<bool()>& stop_requested, int stop_fd) {
  return impl_->OpenStream(method, target, headers, idle_timeout, on_data, stop_requested, stop_fd);
}
Client::~Client() = default;

Result<ClientResponse> Client::Do(const std::string& method, const std::string& target,
                                  const std::string& body,
                                  const std::vector<std::pair<std::string, std::string>>& headers) {
  return impl_->Do(method, target, body, headers);
}

Status Client::Begin(const std::string& method, const std::string& target, const std::string& body,
                     const std::vector<std::pair<std::string, std::string>>& headers) {
  return impl_->Begin(method, target, body, headers);
}

Result<ClientResponse> Client::Finish() { return impl_->Finish(); }

bool Client::AnswerBy(std::chrono::steady_clock::time_point until) { return impl_->AnswerBy(until); }

int Client::connects() const { return impl_->connects(); }

void Client::set_request_timeout(std::chrono::milliseconds timeout) { impl_->set_request_timeout(timeout); }

uint64_t Client::read_waits() const { return impl_->read_waits(); }

}  // namespace gantry::http
