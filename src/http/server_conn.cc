#include "server_conn.h"

#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <iterator>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <fmt/format.h>

namespace gantry::http::server_internal {

namespace bhttp = boost::beast::http;

namespace {

// Unparsed input beyond this is compacted away.
constexpr std::size_t kCompactAt = 64 << 10;

// After a refusal, what the client still sends is read and dropped for at
// most this long and this much: a body a few times the largest accepted
// comes in well within that over any network worth serving; a client that
// sends more, or slower, gets the reset.
constexpr std::chrono::seconds kDrainFor{5};
constexpr std::size_t kDrainCap = 64 << 20;

std::chrono::milliseconds FirstRequestWait(const ServerOptions& options) {
  return std::min(options.idle_timeout, options.read_timeout);
}

// The transfer codings of a Transfer-Encoding field's values, in order,
// lower-cased ("gzip, chunked" -> {"gzip", "chunked"}).
std::vector<std::string> TransferCodings(const bhttp::fields& fields) {
  std::vector<std::string> codings;
  for (auto [it, end] = fields.equal_range(bhttp::field::transfer_encoding); it != end; ++it) {
    std::string_view value = it->value();
    while (!value.empty()) {
      const std::size_t comma = std::min(value.find(','), value.size());
      std::string_view item = value.substr(0, comma);
      value.remove_prefix(std::min(comma + 1, value.size()));
      const std::size_t first = item.find_first_not_of(" \t");
      if (first == std::string_view::npos) continue;
      item = item.substr(first, item.find_last_not_of(" \t") + 1 - first);
      codings.push_back(ToLowerAscii(item.substr(0, item.find(';'))));
    }
  }
  return codings;
}

}  // namespace

ServerConn::ServerConn(uint64_t id, int fd, SSL* ssl, std::string remote, bool loopback, const ConnEnv& env)
    : id_(id),
      fd_(fd),
      ssl_(ssl),
      remote_(std::move(remote)),
      loopback_(loopback),
      env_(env),
      state_(ssl ? State::kHandshake : State::kReading) {
  // A connection that has sent nothing yet waits no longer than a request
  // being read: one opened and left silent holds a place that counts
  // towards max_connections.
  deadline_ = Clock::now() + (ssl ? env.options->handshake_timeout : FirstRequestWait(*env.options));
  StartRequest();
}

ServerConn::~ServerConn() {
  if (stream_) stream_->Abandon();
  SetBusy(false);
  if (ssl_) {
    if (tls_ok_) SSL_shutdown(ssl_);  // our close_notify; the peer's is not awaited
    SSL_free(ssl_);
  }
  ::close(fd_);
}

void ServerConn::SetBusy(bool busy) {
  if (busy_ == busy) return;
  busy_ = busy;
  *env_.in_flight += busy ? 1 : -1;
}

void ServerConn::StartRequest() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(env_.options->header_limit));
  parser_->body_limit(env_.options->body_limit);
  // Not eager until the head is checked: put() then stops at the end of
  // the head, before a body (and a chunked body's trailer) is parsed.
  parser_->eager(false);
  head_.reset();
  head_taken_ = 0;
  request_started_ = false;
  continue_sent_ = false;
}

bool ServerConn::Advance() {
  switch (state_) {
    case State::kHandshake: return Handshake();
    case State::kReading: return Read();
    case State::kHandling: return true;  // the handler has it
    case State::kAnswering:
    case State::kClosing: {
      Io io = Flush();
      if (io == Io::kFailed) return false;
      return io == Io::kBlocked || AfterFlush();
    }
    case State::kStreaming: return Stream();
    case State::kDraining: return Drain();
  }
  return false;
}

bool ServerConn::Handshake() {
  ERR_clear_error();
  int r = SSL_accept(ssl_);
  if (r == 1) {
    tls_ok_ = true;
    state_ = State::kReading;
    deadline_ = Clock::now() + FirstRequestWait(*env_.options);
    return Read();
  }
  int e = SSL_get_error(ssl_, r);
  return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

ServerConn::Io ServerConn::ReadSome() {
  char* const buffer = env_.read_buffer;
  const std::size_t size = env_.read_buffer_size;
  if (ssl_) {
    ERR_clear_error();
    int r = SSL_read(ssl_, buffer, static_cast<int>(size));
    if (r > 0) {
      in_.append(buffer, static_cast<std::size_t>(r));
      return Io::kDone;
    }
    int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return Io::kBlocked;
    if (e != SSL_ERROR_ZERO_RETURN) tls_ok_ = false;  // no close_notify after a broken session
    return Io::kFailed;
  }
  while (true) {
    ssize_t n = ::recv(fd_, buffer, size, 0);
    if (n > 0) {
      in_.append(buffer, static_cast<std::size_t>(n));
      return Io::kDone;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::kBlocked;
    return Io::kFailed;  // the end of the stream, or an error
  }
}

ServerConn::Io ServerConn::Flush() {
  while (out_sent_ < out_.size()) {
    const std::size_t left = out_.size() - out_sent_;
    if (ssl_) {
      ERR_clear_error();
      int r = SSL_write(ssl_, out_.data() + out_sent_, static_cast<int>(std::min<std::size_t>(left, INT_MAX)));
      if (r > 0) {
        out_sent_ += static_cast<std::size_t>(r);
        continue;
      }
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return Io::kBlocked;
      tls_ok_ = false;
      return Io::kFailed;
    }
    ssize_t n = ::send(fd_, out_.data() + out_sent_, left, MSG_NOSIGNAL);
    if (n > 0) {
      out_sent_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::kBlocked;
    return Io::kFailed;
  }
  out_.clear();
  out_sent_ = 0;
  return Io::kDone;
}

bool ServerConn::Read() {
  while (true) {
    // A "100 Continue" not yet sent whole goes out first.
    if (out_sent_ < out_.size()) {
      Io io = Flush();
      if (io == Io::kFailed) return false;
      if (io == Io::kBlocked) return true;
    }
    if (in_used_ < in_.size()) {
      boost::system::error_code ec;
      const std::size_t n = parser_->put(boost::asio::buffer(in_.data() + in_used_, in_.size() - in_used_), ec);
      in_used_ += n;
      head_taken_ += n;
      if (in_used_ == in_.size()) {
        in_.clear();
        in_used_ = 0;
      } else if (in_used_ >= kCompactAt) {
        in_.erase(0, in_used_);
        in_used_ = 0;
      }
      if (ec == bhttp::error::body_limit) {  // a declared Content-Length over the limit, or a body grown past it
        return Refuse(413, fmt::format("request body is over the limit of {} bytes", env_.options->body_limit));
      }
      // The parser takes whole lines of the head as they come, and its own
      // limit bounds only what it has not taken yet: the head as a whole,
      // taken and waiting, is bounded here, until it is kept (head_; after
      // it the parser takes the body, which this does not count). Not eager
      // before, the parser stops at the head's end: head_taken_ is its size.
      const std::size_t head_bytes = head_taken_ + (parser_->is_header_done() ? 0 : in_.size() - in_used_);
      const bool head_over =
          ec == bhttp::error::header_limit || (!head_ && head_bytes > env_.options->header_limit);
      if (head_over) {
        // The request line alone over the limit (its target, say): 414;
        // else its header fields: 431 (RFC 9110 15.5.15, RFC 6585 5).
        // (The parser takes the lines it can before it gives up: none yet
        // means the request line itself did not end in time.)
        const std::size_t eol = in_.find("\r\n", in_used_);
        const bool line = head_taken_ == 0 &&
                          (eol == std::string::npos || eol - in_used_ >= env_.options->header_limit);
        return Refuse(line ? 414 : 431, fmt::format("request {} over the limit of {} bytes",
                                                    line ? "line (its target)" : "header fields",
                                                    env_.options->header_limit));
      }
      if (ec && ec != bhttp::error::need_more) return Refuse(400, "malformed request: " + ec.message());
      // The parser takes a line only whole. Past the header, no limit of
      // its own bounds a chunk's size line (its extensions) or a trailer:
      // bytes without an end of line would be buffered until the read
      // deadline, a gigabyte in seconds.
      if (ec == bhttp::error::need_more && parser_->is_header_done() &&
          in_.size() - in_used_ > env_.options->header_limit) {
        return Refuse(400, fmt::format("malformed request: a chunk line or trailer over {} bytes",
                                       env_.options->header_limit));
      }
      if (parser_->is_header_done() && !head_) {
        if (std::optional<Refusal> refusal = HeadRefusal()) return Refuse(refusal->status, refusal->message);
        KeepHead();
      }
      if (parser_->is_done()) return Dispatch();
      if (parser_->is_header_done() && !continue_sent_ &&
          boost::beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
        continue_sent_ = true;
        out_ += "HTTP/1.1 100 Continue\r\n\r\n";
        continue;
      }
      if (n > 0 && in_used_ < in_.size()) continue;  // more of what is buffered
    }
    Io io = ReadSome();
    if (io == Io::kFailed) return false;  // the client went away (mid-request or between requests)
    if (io == Io::kBlocked) return true;
    if (!request_started_) {  // the first byte: the whole request gets the read deadline
      request_started_ = true;
      deadline_ = Clock::now() + env_.options->read_timeout;
    }
  }
}

std::optional<ServerConn::Refusal> ServerConn::HeadRefusal() const {
  // A request's body is framed by Content-Length or by chunked as the last
  // transfer coding. Anything else leaves its length unknown, and reading
  // on would take the body for the next request (smuggled past a proxy
  // that framed it otherwise): 400 and close (RFC 9112 6.3). Codings
  // before chunked (gzip, chunked) are framed right but not understood:
  // 501 (RFC 9112 6.1).
  // HTTP/1.1 asks for exactly one Host field (RFC 9112 3.2).
  if (parser_->get().version() >= 11 && parser_->get().count(bhttp::field::host) != 1) {
    return Refusal{400, parser_->get().count(bhttp::field::host) == 0 ? "malformed request: no Host header"
                                                                       : "malformed request: more than one Host header"};
  }
  // Authorization is one credential, not a list: of two, which one a
  // reader takes is a guess (a proxy may have added one), so none is.
  if (parser_->get().count(bhttp::field::authorization) > 1) {
    return Refusal{400, "malformed request: more than one Authorization header"};
  }
  const std::vector<std::string> codings = TransferCodings(parser_->get());
  if (!codings.empty() && codings.back() != "chunked") {
    return Refusal{400, fmt::format("malformed request: Transfer-Encoding must end with chunked, not \"{}\"",
                                    codings.back())};
  }
  if (codings.size() > 1) {
    return Refusal{501, fmt::format("Transfer-Encoding \"{}\" is not supported; send the body with chunked alone, "
                                    "or with Content-Length",
                                    codings.front())};
  }
  return std::nullopt;
}

void ServerConn::KeepHead() {
  head_.emplace();
  for (const auto& field : parser_->get()) (*head_)[ToLowerAscii(field.name_string())] = std::string(field.value());
  // As the head says: a trailer's Connection field, parsed later, sets the
  // parser's flags too.
  keep_alive_ = parser_->keep_alive();
  parser_->eager(true);
}

bool ServerConn::Dispatch() {
  auto msg = parser_->release();
  Request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  std::string_view target = req.target;
  std::size_t q = target.find('?');
  req.path = PercentDecode(target.substr(0, q), false);
  if (q != std::string_view::npos) req.query = ParseQuery(target.substr(q + 1));
  req.headers = std::move(*head_);  // not the trailer's fields (head_)
  req.body = std::move(msg.body());
  req.remote_address = remote_;
  req.connection_id = id_;
  req.remote_loopback = loopback_;
  head_only_ = msg.method() == bhttp::verb::head;
  state_ = State::kHandling;
  served_any_ = true;
  deadline_ = Clock::time_point::max();  // the handler takes the time it takes
  SetBusy(true);
  env_.dispatch(id_, std::move(req));
  return true;
}

bool ServerConn::Answer(Response response) {
  if (state_ != State::kHandling) return true;
  if (response.stream) {
    SetBusy(false);
    stream_ = std::move(response.stream);
    // A stream that ends (Finish) leaves a kept-alive connection ready for
    // the next request, as any answer does: a watcher resuming every few
    // seconds then pays no new TLS handshake each time.
    // (Not after a HEAD: the chunks below are sent all the same, and only
    // a close tells the client where they end.)
    keep_alive_ = keep_alive_ && !head_only_ && !env_.stopping->load();
    out_ = fmt::format(
        "HTTP/1.1 200 OK\r\nServer: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        "{}\r\n",
        env_.options->server_name, keep_alive_ ? "" : "Connection: close\r\n");
    out_sent_ = 0;
    state_ = State::kStreaming;
    deadline_ = Clock::now() + env_.options->write_timeout;
    env_.subscribe(id_, stream_);
    return Stream();
  }
  keep_alive_ = keep_alive_ && !env_.stopping->load();
  QueueAnswer(response, keep_alive_, head_only_);
  state_ = State::kAnswering;
  deadline_ = Clock::now() + env_.options->write_timeout;
  return Advance();
}

bool ServerConn::TimedOut() {
  if (state_ != State::kReading || !request_started_) return false;
  return Refuse(408, "request not received whole within the read timeout");
}

bool ServerConn::Refuse(int status, const std::string& message) {
  if (env_.options->on_refused) env_.options->on_refused(status);
  // A client refused mid-body (413, a malformed one) is most likely still
  // writing it, and reads the answer only after: closed with its bytes
  // unread, the socket would send a reset, and the client would see its
  // connection reset instead of the answer. One too slow to send a request
  // whole (408) is not waited for again.
  drain_after_refusal_ = status != 408;
  QueueAnswer(env_.options->error_response(status, message), false, false);
  state_ = State::kClosing;
  deadline_ = Clock::now() + env_.options->write_timeout;
  return Advance();
}

void ServerConn::QueueAnswer(const Response& response, bool keep_alive, bool head_only) {
  // The head is written as text and sent with the body in one write: one
  // TLS record and one send for a small answer.
  const std::string_view reason = bhttp::obsolete_reason(static_cast<bhttp::status>(response.status));
  // A HEAD answer says the length the GET's body would have (RFC 9110
  // 9.3.2), and has none.
  const std::size_t length = response.body.size();
  std::string& head = out_;
  head.reserve(head.size() + 160 + (head_only ? 0 : length));
  fmt::format_to(std::back_inserter(head), "HTTP/1.1 {} {}\r\nServer: {}\r\n", response.status, reason,
                 env_.options->server_name);
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
  if (!head_only) head.append(response.body);
}

bool ServerConn::AfterFlush() {
  if (state_ == State::kClosing) return drain_after_refusal_ && StartDraining();
  SetBusy(false);
  if (!keep_alive_) return false;
  return NextRequest();
}

bool ServerConn::StartDraining() {
  // The answer, then our side's end (TLS close_notify, then FIN): the client
  // reads both while it writes on.
  if (ssl_ && tls_ok_) SSL_shutdown(ssl_);
  tls_ok_ = false;  // no second close_notify at the close
  if (::shutdown(fd_, SHUT_WR) != 0) return false;
  SetBusy(false);
  state_ = State::kDraining;
  deadline_ = Clock::now() + kDrainFor;
  return Drain();
}

bool ServerConn::Drain() {
  // Raw bytes, not decrypted: nothing of them is read as a request.
  char* const buffer = env_.read_buffer;
  while (drained_ < kDrainCap) {
    ssize_t n = ::recv(fd_, buffer, env_.read_buffer_size, 0);
    if (n > 0) {
      drained_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);  // else its end, or an error: closed
  }
  return false;  // more than a refused body is worth reading
}

bool ServerConn::AfterStream() {
  stream_->Abandon();  // no more wake-ups; its producer's on_close runs, as when a consumer goes away
  stream_.reset();
  stream_finished_ = false;
  return NextRequest();
}

bool ServerConn::NextRequest() {
  state_ = State::kReading;
  StartRequest();
  deadline_ = Clock::now() + env_.options->idle_timeout;
  if (in_used_ < in_.size()) {  // the next request is here already
    request_started_ = true;
    deadline_ = Clock::now() + env_.options->read_timeout;
  }
  return Read();
}

bool ServerConn::Stream() {
  while (true) {
    if (out_sent_ < out_.size()) {
      Io io = Flush();
      if (io == Io::kFailed) return false;
      if (io == Io::kBlocked) return true;
    }
    if (stream_finished_ && keep_alive_ && !env_.stopping->load()) return AfterStream();
    if (stream_finished_ || env_.stopping->load()) return false;
    bool finished = false;
    std::vector<std::string> pieces = stream_->Take(&finished);
    std::size_t total = 0;
    for (const std::string& p : pieces) total += p.size();
    if (total == 0 && !finished) {
      // No deadline while waiting for the producer: a watch may be quiet
      // for minutes. Its Write or Finish wakes this connection.
      deadline_ = Clock::time_point::max();
      return true;
    }
    // Everything queued goes out as one chunk: one write and one wake-up of
    // the reader for a burst of watch events, not one per event.
    if (total > 0) {
      out_.reserve(total + 32);
      fmt::format_to(std::back_inserter(out_), "{:x}\r\n", total);
      for (const std::string& p : pieces) out_ += p;
      out_ += "\r\n";
    }
    if (finished) {
      out_ += "0\r\n\r\n";
      stream_finished_ = true;
    }
    deadline_ = Clock::now() + env_.options->write_timeout;
  }
}

}  // namespace gantry::http::server_internal
