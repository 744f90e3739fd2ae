// The only translation unit (with client.cc) that includes Beast: see
// message.h for why.
#include "gantry/http/server.h"
#include "gantry/common/thread_name.h"

#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

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

namespace {

// Bridges a Responder (callable once from any thread) to the coroutine that
// waits for it. If the Responder is dropped uncalled, the request gets a 500
// instead of hanging.
template <typename CompletionHandler>
class Once {
 public:
  Once(CompletionHandler h, net::any_io_executor ex) : handler_(std::move(h)), ex_(std::move(ex)) {}
  ~Once() {
    if (handler_) Fire(TextResponse(500, "handler dropped the request\n"));
  }
  void Fire(Response response) {
    std::optional<CompletionHandler> h;
    {
      std::lock_guard lock(mu_);
      if (!handler_) return;
      h.emplace(std::move(*handler_));
      handler_.reset();
    }
    net::post(ex_, [h = std::move(*h), r = std::move(response)]() mutable { h(std::move(r)); });
  }

 private:
  std::mutex mu_;
  std::optional<CompletionHandler> handler_;
  net::any_io_executor ex_;
};

net::awaitable<Response> CallHandler(const Handler& handler, Request request) {
  auto ex = co_await net::this_coro::executor;
  co_return co_await net::async_initiate<decltype(net::use_awaitable), void(Response)>(
      [&handler, &request, ex](auto completion) {
        using H = decltype(completion);
        auto once = std::make_shared<Once<H>>(std::move(completion), ex);
        handler(std::move(request), [once](Response r) { once->Fire(std::move(r)); });
      },
      net::use_awaitable);
}

bool IsLoopback(const net::ip::address& a) {
  if (a.is_loopback()) return true;
  return a.is_v6() && a.to_v6().is_v4_mapped() &&
         net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).is_loopback();
}

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, Handler handler)
      : options_(std::move(options)), handler_(std::move(handler)), acceptor_(ioc_) {
    if (!options_.error_response) {
      options_.error_response = [](int status, std::string message) {
        return TextResponse(status, message + "\n");
      };
    }
  }

  Status Start();
  void Stop(std::chrono::milliseconds drain);
  uint16_t port() const { return port_; }
  int in_flight() const { return in_flight_.load(); }

 private:
  // A live connection: how to close it, and whether it is mid-request.
  struct ConnState {
    std::function<void()> close;  // must run on the connection's executor
    net::any_io_executor executor;
    bool busy = false;
  };

  net::awaitable<void> Accept();
  template <typename Stream>
  net::awaitable<void> Session(Stream& stream, std::string remote, bool loopback, uint64_t id);
  template <typename Stream>
  net::awaitable<bool> WriteResponse(Stream& stream, Response response, bool keep_alive,
                                     bool head_only);
  template <typename Stream>
  net::awaitable<void> WriteStream(Stream& stream, std::shared_ptr<ResponseStream> body);
  net::awaitable<void> RunConnection(tcp::socket socket, uint64_t id);
  void SetBusy(uint64_t id, bool busy);

  // Marks a connection's stream as gone when its coroutine frame unwinds.
  // Declared after the stream, so it runs first.
  struct AliveGuard {
    std::shared_ptr<bool> flag = std::make_shared<bool>(true);
    ~AliveGuard() { *flag = false; }
  };
  // Records how to close connection id: close_stream runs on the
  // connection's executor, and only while the stream is still alive.
  void Register(uint64_t id, std::shared_ptr<bool> alive, std::function<void()> close_stream);

  ServerOptions options_;
  Handler handler_;
  // ssl_ outlives ioc_: coroutine frames still queued in ioc_ when it is
  // destroyed hold streams that refer to the context.
  std::optional<net::ssl::context> ssl_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<uint64_t> next_id_{1};
  std::mutex mu_;
  std::map<uint64_t, ConnState> conns_;
  bool started_ = false;
};

Status Server::Impl::Start() {
  error_code ec;
  auto address = net::ip::make_address(options_.address, ec);
  if (ec) return Status::Invalid(fmt::format("listen address '{}': {}", options_.address, ec.message()));
  if (options_.tls) {
    ssl_.emplace(net::ssl::context::tls_server);
    ssl_->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                      net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                      net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
    ssl_->use_certificate_chain(net::buffer(options_.tls->cert_chain_pem), ec);
    if (ec) return Status::Invalid("TLS certificate: " + ec.message());
    ssl_->use_private_key(net::buffer(options_.tls->private_key_pem), net::ssl::context::pem, ec);
    if (ec) return Status::Invalid("TLS private key: " + ec.message());
  }
  tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Io(fmt::format("listen on {}:{}: {}", options_.address, options_.port, ec.message()));
  }
  port_ = acceptor_.local_endpoint().port();
  net::co_spawn(ioc_, Accept(), [](std::exception_ptr) {});
  threads_.emplace_back([this] {
    SetThreadName(options_.thread_name);
    ioc_.run();
  });
  started_ = true;
  return Status::Ok();
}

net::awaitable<void> Server::Impl::Accept() {
  while (!stopping_) {
    // The socket is a named local, not a structured binding of the accept's
    // result: g++ 12 destroys non-trivial structured bindings in a coroutine
    // twice.
    tcp::socket socket(ioc_);
    auto [ec] = co_await acceptor_.async_accept(socket, net::as_tuple(net::use_awaitable));
    if (ec) {
      if (ec == net::error::operation_aborted || stopping_) co_return;
      continue;  // e.g. EMFILE: keep serving the connections we have
    }
    std::size_t live;
    {
      std::lock_guard lock(mu_);
      live = conns_.size();
    }
    if (live >= options_.max_connections) continue;  // socket closes on scope exit
    socket.set_option(tcp::no_delay(true), ec);  // avoids a ~40 ms stall on small writes
    uint64_t id = next_id_++;
    auto ex = socket.get_executor();
    net::co_spawn(ex, RunConnection(std::move(socket), id), [this, id](std::exception_ptr) {
      std::lock_guard lock(mu_);
      conns_.erase(id);
    });
  }
}

net::awaitable<void> Server::Impl::RunConnection(tcp::socket socket, uint64_t id) {
  error_code ec;
  {
    std::lock_guard lock(mu_);
    conns_[id].executor = socket.get_executor();
  }
  auto remote_ep = socket.remote_endpoint(ec);
  std::string remote = ec ? "unknown" : remote_ep.address().to_string();
  bool loopback = !ec && IsLoopback(remote_ep.address());
  if (ssl_) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *ssl_);
    AliveGuard alive;
    Register(id, alive.flag, [&stream] { beast::get_lowest_layer(stream).close(); });
    if (stopping_) co_return;
    beast::get_lowest_layer(stream).expires_after(options_.handshake_timeout);
    auto [hec] = co_await stream.async_handshake(net::ssl::stream_base::server,
                                                 net::as_tuple(net::use_awaitable));
    if (hec) co_return;
    co_await Session(stream, remote, loopback, id);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(1));
    co_await stream.async_shutdown(net::as_tuple(net::use_awaitable));
  } else {
    beast::tcp_stream stream(std::move(socket));
    AliveGuard alive;
    Register(id, alive.flag, [&stream] { stream.close(); });
    if (stopping_) co_return;
    co_await Session(stream, remote, loopback, id);
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  }
}

void Server::Impl::Register(uint64_t id, std::shared_ptr<bool> alive,
                            std::function<void()> close_stream) {
  std::lock_guard lock(mu_);
  conns_[id].close = [alive = std::move(alive), close_stream = std::move(close_stream)] {
    if (*alive) close_stream();
  };
}

void Server::Impl::SetBusy(uint64_t id, bool busy) {
  std::lock_guard lock(mu_);
  conns_[id].busy = busy;
  in_flight_ += busy ? 1 : -1;
}

template <typename Stream>
net::awaitable<void> Server::Impl::Session(Stream& stream, std::string remote, bool loopback,
                                           uint64_t id) {
  beast::flat_buffer buffer;
  auto& lowest = beast::get_lowest_layer(stream);
  while (!stopping_) {
    // Wait for the first byte of the next request under the idle deadline,
    // then give the whole request the read deadline.
    if (buffer.size() == 0) {
      lowest.expires_after(options_.idle_timeout);
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096),
                                                     net::as_tuple(net::use_awaitable));
      if (ec) co_return;
      buffer.commit(n);
    }
    lowest.expires_after(options_.read_timeout);
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options_.header_limit));
    parser.body_limit(options_.body_limit);
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser,
                                                       net::as_tuple(net::use_awaitable));
    // Requests refused before a handler sees them. The response is built as
    // a named local and written after the if-chain: no temporaries inside a
    // co_await expression (g++ 12 mishandles some of those).
    std::optional<Response> refusal;
    if (hec == bhttp::error::body_limit) {  // a declared Content-Length over the limit
      refusal = options_.error_response(
          413, fmt::format("request body is over the limit of {} bytes", options_.body_limit));
    } else if (hec == beast::error::timeout || hec == net::error::operation_aborted ||
               hec == bhttp::error::end_of_stream || hec == net::error::eof ||
               hec == net::error::connection_reset) {
      co_return;
    } else if (hec) {
      refusal = options_.error_response(400, "malformed request: " + hec.message());
    }
    if (refusal) {
      Response r = std::move(*refusal);
      co_await WriteResponse(stream, std::move(r), false, false);
      co_return;
    }
    auto& header = parser.get();
    if (beast::iequals(header[bhttp::field::expect], "100-continue")) {
      bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, header.version()};
      lowest.expires_after(options_.write_timeout);
      auto [wec, wn] = co_await bhttp::async_write(stream, cont, net::as_tuple(net::use_awaitable));
      if (wec) co_return;
    }
    auto [bec, bn] = co_await bhttp::async_read(stream, buffer, parser, net::as_tuple(net::use_awaitable));
    if (bec) {
      if (bec != bhttp::error::body_limit) co_return;
      Response r = options_.error_response(
          413, fmt::format("request body is over the limit of {} bytes", options_.body_limit));
      co_await WriteResponse(stream, std::move(r), false, false);
      co_return;
    }
    auto msg = parser.release();
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    std::string_view target = req.target;
    std::size_t q = target.find('?');
    req.path = PercentDecode(target.substr(0, q), false);
    if (q != std::string_view::npos) req.query = ParseQuery(target.substr(q + 1));
    for (const auto& field : msg) {
      req.headers[ToLowerAscii(field.name_string())] = std::string(field.value());
    }
    req.body = std::move(msg.body());
    req.remote_address = remote;
    req.remote_loopback = loopback;
    bool keep_alive = msg.keep_alive();
    bool head_only = msg.method() == bhttp::verb::head;

    SetBusy(id, true);
    Response response;
    try {
      response = co_await CallHandler(handler_, std::move(req));
    } catch (const std::exception&) {
      response = options_.error_response(500, "internal error");
    }
    if (response.stream) {
      SetBusy(id, false);
      co_await WriteStream(stream, response.stream);
      co_return;
    }
    bool ok = co_await WriteResponse(stream, std::move(response), keep_alive && !stopping_, head_only);
    SetBusy(id, false);
    if (!ok || !keep_alive) co_return;
  }
}

template <typename Stream>
net::awaitable<bool> Server::Impl::WriteResponse(Stream& stream, Response response, bool keep_alive,
                                                 bool head_only) {
  // The head is written as text and sent with the body in one gathered
  // write: Beast's field container and serializer cost more than the
  // answer's other steps together, for a handful of headers known here.
  const std::string_view reason = bhttp::obsolete_reason(static_cast<bhttp::status>(response.status));
  const std::size_t length = head_only ? 0 : response.body.size();
  std::string head;
  head.reserve(160 + length);
  fmt::format_to(std::back_inserter(head), "HTTP/1.1 {} {}\r\nServer: {}\r\n", response.status, reason,
                 options_.server_name);
  // A line break in a handler's header would end the head early: such a
  // header is left out rather than sent.
  auto one_line = [](std::string_view text) { return text.find_first_of("\r\n") == std::string_view::npos; };
  if (!response.content_type.empty() && one_line(response.content_type)) {
    fmt::format_to(std::back_inserter(head), "Content-Type: {}\r\n", response.content_type);
  }
  for (const auto& [k, v] : response.headers) {
    if (one_line(k) && one_line(v)) fmt::format_to(std::back_inserter(head), "{}: {}\r\n", k, v);
  }
  if (!keep_alive) head += "Connection: close\r\n";
  fmt::format_to(std::back_inserter(head), "Content-Length: {}\r\n\r\n", length);
  head.append(response.body, 0, length);  // one buffer: one TLS record for a small answer
  beast::get_lowest_layer(stream).expires_after(options_.write_timeout);
  auto [ec, n] = co_await net::async_write(stream, net::buffer(head), net::as_tuple(net::use_awaitable));
  co_return !ec;
}

template <typename Stream>
net::awaitable<void> Server::Impl::WriteStream(Stream& stream, std::shared_ptr<ResponseStream> body) {
  auto ex = co_await net::this_coro::executor;
  auto wake = std::make_shared<net::steady_timer>(ex, net::steady_timer::time_point::max());
  body->SetNotifier([wake, ex] { net::post(ex, [wake] { wake->cancel(); }); });
  // Abandon on every exit path, so the producer stops and unsubscribes.
  struct Guard {
    std::shared_ptr<ResponseStream> s;
    ~Guard() { s->Abandon(); }
  } guard{body};

  bhttp::response<bhttp::empty_body> res{bhttp::status::ok, 11};
  res.set(bhttp::field::server, options_.server_name);
  res.set(bhttp::field::content_type, "application/json");
  res.chunked(true);
  res.keep_alive(false);
  bhttp::response_serializer<bhttp::empty_body> sr{res};
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(options_.write_timeout);
  auto [hec, hn] = co_await bhttp::async_write_header(stream, sr, net::as_tuple(net::use_awaitable));
  if (hec) co_return;
  while (!stopping_) {
    bool finished = false;
    std::vector<std::string> pieces = body->Take(&finished);
    if (!pieces.empty()) {
      // Everything queued goes out as one chunk: one write and one wake-up
      // of the reader for a burst of watch events, not one per event.
      std::string joined = std::move(pieces[0]);
      for (std::size_t i = 1; i < pieces.size(); ++i) joined += pieces[i];
      lowest.expires_after(options_.write_timeout);
      auto chunk = bhttp::make_chunk(net::buffer(joined));
      auto [ec, n] = co_await net::async_write(stream, chunk, net::as_tuple(net::use_awaitable));
      if (ec) co_return;
    }
    if (finished) {
      lowest.expires_after(options_.write_timeout);
      auto last = bhttp::make_chunk_last();
      co_await net::async_write(stream, last, net::as_tuple(net::use_awaitable));
      co_return;
    }
    // Wakes posted while the chunks above were being written found no
    // waiter and are gone: look at the queue again before sleeping.
    if (!pieces.empty()) continue;
    // No deadline while waiting for the producer: a watch may be quiet for
    // minutes. The producer's Finish, a Write or Stop() wakes us. A wake that
    // is posted between the Take above and this wait still finds the waiter,
    // because both run on this connection's one thread.
    lowest.expires_never();
    wake->expires_at(net::steady_timer::time_point::max());
    co_await wake->async_wait(net::as_tuple(net::use_awaitable));
  }
}

void Server::Impl::Stop(std::chrono::milliseconds drain) {
  if (!started_) return;
  started_ = false;
  stopping_ = true;
  net::post(acceptor_.get_executor(), [this] {
    error_code ec;
    acceptor_.close(ec);
  });
  // Close idle and streaming connections now; busy ones get the drain time.
  auto close_where = [this](bool only_idle) {
    std::lock_guard lock(mu_);
    for (auto& [id, c] : conns_) {
      if (only_idle && c.busy) continue;
      if (c.close) net::post(c.executor, c.close);
    }
  };
  close_where(true);
  auto deadline = std::chrono::steady_clock::now() + drain;
  while (in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    close_where(true);  // connections that finished their request meanwhile
  }
  close_where(false);
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

Server::Server(ServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}
Server::~Server() { impl_->Stop(std::chrono::milliseconds(0)); }
Status Server::Start() { return impl_->Start(); }
uint16_t Server::port() const { return impl_->port(); }
int Server::in_flight() const { return impl_->in_flight(); }
void Server::Stop(std::chrono::milliseconds drain) { impl_->Stop(drain); }

}  // namespace gantry::http
