#include "gantry/http/client.h"
#include "gantry/http/message.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <future>
#include <optional>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>

namespace gantry::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

// How often a quiet stream asks whether its owner wants it stopped.
constexpr std::chrono::milliseconds kStopPoll{100};

class Client::Impl {
 public:
  Impl(bool tls, std::string host, std::string port, ClientOptions options)
      : tls_(tls), host_(std::move(host)), port_(std::move(port)), options_(std::move(options)) {}

  Status Init();
  Result<ClientResponse> Do(const std::string& method, const std::string& target,
                            const std::string& body,
                            const std::vector<std::pair<std::string, std::string>>& headers);
  Status Begin(const std::string& method, const std::string& target, const std::string& body,
               const std::vector<std::pair<std::string, std::string>>& headers);
  Result<ClientResponse> Finish();
  Result<ClientResponse> OpenStream(const std::string& method, const std::string& target,
                                    const std::vector<std::pair<std::string, std::string>>& headers,
                                    std::chrono::milliseconds idle_timeout,
                                    const std::function<bool(std::string_view)>& on_data,
                                    const std::function<bool()>& stop_requested);

 private:
  bhttp::request<bhttp::string_body> MakeRequest(const std::string& method, const std::string& target,
                                                 const std::string& body,
                                                 const std::vector<std::pair<std::string, std::string>>& headers);
  template <typename AsyncStream>
  Result<ClientResponse> StreamOn(AsyncStream& stream, const bhttp::request<bhttp::string_body>& req,
                                  std::chrono::milliseconds idle_timeout,
                                  const std::function<bool(std::string_view)>& on_data,
                                  const std::function<bool()>& stop_requested);
  using TlsStream = beast::ssl_stream<beast::tcp_stream>;
  Status Connect();
  template <typename AsyncStream>
  Result<ClientResponse> Exchange(AsyncStream& stream, const bhttp::request<bhttp::string_body>& req);
  template <typename AsyncStream>
  Status Write(AsyncStream& stream, const bhttp::request<bhttp::string_body>& req);
  template <typename AsyncStream>
  Result<ClientResponse> Read(AsyncStream& stream, const bhttp::request<bhttp::string_body>& req);
  Status TransportError(error_code ec, const bhttp::request<bhttp::string_body>& req) const;
  bool connected() const { return tcp_stream_.has_value() || tls_stream_.has_value(); }
  void Reset() {
    tls_stream_.reset();
    tcp_stream_.reset();
  }

  bool tls_;
  std::string host_, port_;
  ClientOptions options_;
  net::io_context ioc_;
  std::optional<net::ssl::context> ssl_;
  std::optional<beast::tcp_stream> tcp_stream_;
  std::optional<TlsStream> tls_stream_;
  // The request Begin sent and Finish has not answered yet, and whether it
  // went out on a kept-alive connection (one the server may have closed).
  std::optional<bhttp::request<bhttp::string_body>> pending_;
  bool pending_reused_ = false;
};

Status Client::Impl::Init() {
  if (!tls_) return Status::Ok();
  ssl_.emplace(net::ssl::context::tls_client);
  ssl_->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_tlsv1 |
                    net::ssl::context::no_tlsv1_1);
  ssl_->set_verify_mode(net::ssl::verify_peer);
  error_code ec;
  if (!options_.ca_pem.empty()) {
    ssl_->add_certificate_authority(net::buffer(options_.ca_pem), ec);
  } else if (!options_.ca_file.empty()) {
    ssl_->load_verify_file(options_.ca_file, ec);
  } else {
    ssl_->set_default_verify_paths(ec);
  }
  if (ec) return Status::Invalid("TLS CA: " + ec.message());
  if (!options_.client_cert_pem.empty()) {
    ssl_->use_certificate_chain(net::buffer(options_.client_cert_pem), ec);
    if (!ec) ssl_->use_private_key(net::buffer(options_.client_key_pem), net::ssl::context::pem, ec);
    if (ec) return Status::Invalid("TLS client certificate: " + ec.message());
  }
  return Status::Ok();
}

Status Client::Impl::Connect() {
  Reset();
  tcp::resolver resolver(ioc_);
  error_code ec;
  auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) return Status::Unavailable(fmt::format("resolve {}: {}", host_, ec.message()));
  beast::tcp_stream stream(ioc_);
  stream.expires_after(options_.connect_timeout);
  std::promise<error_code> done;
  stream.async_connect(endpoints, [&](error_code e, const tcp::endpoint&) { done.set_value(e); });
  ioc_.restart();
  ioc_.run();
  ec = done.get_future().get();
  if (ec) {
    return Status::Unavailable(fmt::format("connect to {}:{}: {}", host_, port_, ec.message()));
  }
  stream.socket().set_option(tcp::no_delay(true), ec);
  if (!tls_) {
    tcp_stream_.emplace(std::move(stream));
    return Status::Ok();
  }
  tls_stream_.emplace(std::move(stream), *ssl_);
  SSL* ssl = tls_stream_->native_handle();
  error_code addr_ec;
  net::ip::make_address(host_, addr_ec);
  if (addr_ec) {  // a DNS name: send SNI and check it
    SSL_set_tlsext_host_name(ssl, host_.c_str());
    SSL_set1_host(ssl, host_.c_str());
  } else {        // an IP address: check it against the certificate's IP SANs
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host_.c_str());
  }
  beast::get_lowest_layer(*tls_stream_).expires_after(options_.connect_timeout);
  std::promise<error_code> hs;
  tls_stream_->async_handshake(net::ssl::stream_base::client, [&](error_code e) { hs.set_value(e); });
  ioc_.restart();
  ioc_.run();
  ec = hs.get_future().get();
  if (ec) {
    Reset();
    return Status::Unavailable(fmt::format("TLS handshake with {}:{}: {}", host_, port_, ec.message()));
  }
  return Status::Ok();
}

Status Client::Impl::TransportError(error_code ec, const bhttp::request<bhttp::string_body>& req) const {
  if (ec == beast::error::timeout) {
    return Status::Deadline(fmt::format("{} {}: no answer from {}:{} within {} ms", req.method_string(),
                                        req.target(), host_, port_, options_.request_timeout.count()));
  }
  return Status::Unavailable(fmt::format("{} {}: {}", req.method_string(), req.target(), ec.message()));
}

// Writes the request under a fresh request deadline; Read, later, answers
// under the same deadline.
template <typename AsyncStream>
Status Client::Impl::Write(AsyncStream& stream, const bhttp::request<bhttp::string_body>& req) {
  beast::get_lowest_layer(stream).expires_after(options_.request_timeout);
  error_code ec;
  bhttp::async_write(stream, req, [&](error_code e, std::size_t) { ec = e; });
  ioc_.restart();
  ioc_.run();
  return ec ? TransportError(ec, req) : Status::Ok();
}

template <typename AsyncStream>
Result<ClientResponse> Client::Impl::Read(AsyncStream& stream, const bhttp::request<bhttp::string_body>& req) {
  error_code ec;
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(256ull << 20);
  bhttp::async_read(stream, buffer, parser, [&](error_code e, std::size_t) { ec = e; });
  ioc_.restart();
  ioc_.run();
  if (ec) return TransportError(ec, req);
  auto res = parser.release();
  ClientResponse out;
  out.status = static_cast<int>(res.result_int());
  out.body = std::move(res.body());
  for (const auto& f : res) {
    out.headers[ToLowerAscii(f.name_string())] = std::string(f.value());
  }
  if (!res.keep_alive()) Reset();
  return out;
}

template <typename AsyncStream>
Result<ClientResponse> Client::Impl::Exchange(AsyncStream& stream,
                                              const bhttp::request<bhttp::string_body>& req) {
  GANTRY_RETURN_IF_ERROR(Write(stream, req));
  return Read(stream, req);
}

bhttp::request<bhttp::string_body> Client::Impl::MakeRequest(
    const std::string& method, const std::string& target, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  bhttp::request<bhttp::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(bhttp::field::host, host_ + ":" + port_);
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
  pending_ = MakeRequest(method, target, body, headers);
  // A kept-alive connection may have been closed by the server meanwhile:
  // one fresh connection is tried then (here if the write fails, in Finish
  // if the read does). gantry's writes are idempotent (submission by name,
  // remote objects by deterministic name), so a repeat is safe.
  for (int attempt = 0; attempt < 2; ++attempt) {
    pending_reused_ = connected();
    if (!pending_reused_) {
      if (Status st = Connect(); !st.ok()) {
        pending_.reset();
        return st;
      }
    }
    Status st = tls_ ? Write(*tls_stream_, *pending_) : Write(*tcp_stream_, *pending_);
    if (st.ok()) return st;
    Reset();
    if (!pending_reused_ || st.code() == Code::kDeadlineExceeded) {
      pending_.reset();
      return st;
    }
  }
  pending_.reset();
  return Status::Unavailable("unreachable");
}

Result<ClientResponse> Client::Impl::Finish() {
  if (!pending_) return Status::Internal("http client: Finish without a request begun");
  bhttp::request<bhttp::string_body> req = std::move(*pending_);
  pending_.reset();
  Result<ClientResponse> r = tls_ ? Read(*tls_stream_, req) : Read(*tcp_stream_, req);
  if (r.ok()) return r;
  Reset();
  if (!pending_reused_ || r.status().code() == Code::kDeadlineExceeded) return r;
  // The server closed the kept-alive connection before answering.
  GANTRY_RETURN_IF_ERROR(Connect());
  r = tls_ ? Exchange(*tls_stream_, req) : Exchange(*tcp_stream_, req);
  if (!r.ok()) Reset();
  return r;
}

template <typename AsyncStream>
Result<ClientResponse> Client::Impl::StreamOn(AsyncStream& stream, const bhttp::request<bhttp::string_body>& req,
                                              std::chrono::milliseconds idle_timeout,
                                              const std::function<bool(std::string_view)>& on_data,
                                              const std::function<bool()>& stop_requested) {
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(options_.request_timeout);
  error_code ec;
  bhttp::async_write(stream, req, [&](error_code e, std::size_t) { ec = e; });
  ioc_.restart();
  ioc_.run();
  if (ec) return Status::Unavailable(fmt::format("{} {}: {}", req.method_string(), req.target(), ec.message()));
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(boost::none);  // a watch has no end by design
  lowest.expires_after(options_.request_timeout);
  bhttp::async_read_header(stream, buffer, parser, [&](error_code e, std::size_t) { ec = e; });
  ioc_.restart();
  ioc_.run();
  if (ec) return Status::Unavailable(fmt::format("{} {}: {}", req.method_string(), req.target(), ec.message()));
  ClientResponse out;
  out.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get()) {
    out.headers[ToLowerAscii(f.name_string())] = std::string(f.value());
  }
  bool success = out.status >= 200 && out.status < 300;
  char chunk[16 * 1024];
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof(chunk);
    lowest.expires_after(idle_timeout);
    bhttp::async_read_some(stream, buffer, parser, [&](error_code e, std::size_t) { ec = e; });
    bool stopping = false;
    ioc_.restart();
    if (!stop_requested) {
      ioc_.run();
    } else {
      // Wait in slices; on a stop request, cancel the read and let its
      // handler run (with operation_aborted) before the connection goes.
      while (!ioc_.stopped()) {
        ioc_.run_for(kStopPoll);
        if (!ioc_.stopped() && !stopping && stop_requested()) {
          stopping = true;
          lowest.cancel();
        }
      }
    }
    if (stopping) {
      Reset();
      return out;
    }
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) {
      Reset();
      if (ec == beast::error::timeout) {
        return Status::Deadline(fmt::format("{}: no data for {} ms", req.target(), idle_timeout.count()));
      }
      return Status::Unavailable(fmt::format("{}: {}", req.target(), ec.message()));
    }
    std::size_t got = sizeof(chunk) - parser.get().body().size;
    if (got == 0) continue;
    if (!success) {
      out.body.append(chunk, got);
      continue;
    }
    if (!on_data(std::string_view(chunk, got))) {
      Reset();  // the rest of the stream is abandoned with the connection
      return out;
    }
  }
  if (!parser.keep_alive()) Reset();
  return out;
}

Result<ClientResponse> Client::Impl::OpenStream(const std::string& method, const std::string& target,
                                            const std::vector<std::pair<std::string, std::string>>& headers,
                                            std::chrono::milliseconds idle_timeout,
                                            const std::function<bool(std::string_view)>& on_data,
                                            const std::function<bool()>& stop_requested) {
  // A stream gets a connection of its own, so nothing half-read is reused
  // (an unread answer goes with the old connection).
  Reset();
  pending_.reset();
  GANTRY_RETURN_IF_ERROR(Connect());
  bhttp::request<bhttp::string_body> req = MakeRequest(method, target, "", headers);
  return tls_ ? StreamOn(*tls_stream_, req, idle_timeout, on_data, stop_requested)
              : StreamOn(*tcp_stream_, req, idle_timeout, on_data, stop_requested);
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
  auto impl = std::make_unique<Impl>(tls, host, port, std::move(options));
  GANTRY_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<ClientResponse> Client::Stream(const std::string& method, const std::string& target,
                                      const std::vector<std::pair<std::string, std::string>>& headers,
                                      std::chrono::milliseconds idle_timeout,
                                      const std::function<bool(std::string_view)>& on_data,
                                      const std::function<bool()>& stop_requested) {
  return impl_->OpenStream(method, target, headers, idle_timeout, on_data, stop_requested);
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

}  // namespace gantry::http
