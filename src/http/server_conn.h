// ServerConn: one connection of http::Server, as a state machine that the
// server's event loop drives (server.cc). Internal to the http library.
//
// Each call to Advance() makes all the progress the socket allows: the TLS
// handshake, reading and parsing a request, writing an answer or the chunks
// of a stream. It returns when the socket would block or when the connection
// waits for something else (the handler's answer, the stream's producer);
// the loop calls it again on the next readiness event (edge-triggered epoll)
// or when that something arrives.
//
// Thread-safety: none; only the loop's thread touches a connection.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "gantry/http/message.h"
#include "gantry/http/server.h"

namespace gantry::http::server_internal {

using Clock = std::chrono::steady_clock;

// What a connection needs from its server.
struct ConnEnv {
  const ServerOptions* options = nullptr;
  const std::atomic<bool>* stopping = nullptr;
  std::atomic<int>* in_flight = nullptr;
  // Hands a whole request to the handler; its answer comes back through
  // ServerConn::Answer (possibly before this returns).
  std::function<void(uint64_t id, Request request)> dispatch;
  // Makes the stream's producer wake this connection (ServerConn::Wake).
  std::function<void(uint64_t id, const std::shared_ptr<ResponseStream>& stream)> subscribe;
  // Where every connection reads into: only the loop's thread reads, so one
  // buffer serves them all. Owned by the server.
  char* read_buffer = nullptr;
  std::size_t read_buffer_size = 0;
};

class ServerConn {
 public:
  // Takes fd (and ssl, when TLS; nullptr for plain TCP); both are released
  // by the destructor.
  ServerConn(uint64_t id, int fd, SSL* ssl, std::string remote, bool loopback, const ConnEnv& env);
  ~ServerConn();
  ServerConn(const ServerConn&) = delete;
  ServerConn& operator=(const ServerConn&) = delete;

  // False: the connection is done (closed by the peer, an error, a deadline
  // or its last answer sent); the server destroys it.
  bool Advance();
  // The handler's answer to the request in hand.
  bool Answer(Response response);
  // The stream being sent has something new (or finished).
  bool Wake() { return Advance(); }
  // The deadline passed. A request begun and not received whole by then
  // gets 408 before the connection closes (true: keep it until that is
  // written, to a deadline of its own); anything else just ends (false).
  bool TimedOut();

  // Nothing is due before this (Clock::time_point::max() when nothing is).
  Clock::time_point deadline() const { return deadline_; }
  // Not handling a request (between requests, mid-handshake, mid-read,
  // streaming): Stop closes it at once.
  bool closable_at_stop() const { return !busy_; }
  // Sending a stream: a hang-up of the peer ends it.
  bool streaming() const { return state_ == State::kStreaming; }
  // No byte of a request yet (mid-handshake, or between requests): what
  // the server closes first when it has no room for a new connection.
  bool waiting_for_request() const {
    return state_ == State::kHandshake || state_ == State::kDraining ||
           (state_ == State::kReading && !request_started_);
  }
  // Whether a request came whole on it (a client, not just a socket).
  bool served_any() const { return served_any_; }

 private:
  enum class State {
    kHandshake,  // TLS handshake
    kReading,    // waiting for, or reading, a request
    kHandling,   // the handler has the request
    kAnswering,  // writing the answer
    kStreaming,  // sending a stream's chunks
    kClosing,    // writing a last answer (refusal, stream end), then closing
    kDraining,   // a refusal sent and our side shut: reading and dropping what
                 // the client still sends (its body), so that closing with it
                 // unread sends no reset that would discard the refusal
  };
  enum class Io { kDone, kBlocked, kFailed };

  bool Handshake();
  // Parses what is buffered and reads more until a request is whole.
  bool Read();
  // Appends one read's worth to in_; kBlocked when the socket had nothing.
  Io ReadSome();
  // Writes out_ from out_sent_; kDone (and out_ emptied) when all is sent.
  Io Flush();
  void StartRequest();
  struct Refusal {
    int status;
    std::string message;
  };
  // Once the request's head is parsed: why it cannot be read on (a body
  // framing the server cannot read), if it cannot.
  std::optional<Refusal> HeadRefusal() const;
  // Keeps the head's fields (head_), and parses the rest eagerly.
  void KeepHead();
  // Hands the parsed request to the handler.
  bool Dispatch();
  bool Refuse(int status, const std::string& message);
  void QueueAnswer(const Response& response, bool keep_alive, bool head_only);
  bool AfterFlush();
  // After a refusal: shuts our side, then Drain()s until the client's end,
  // kDrainCap bytes or kDrainFor.
  bool StartDraining();
  bool Drain();
  bool Stream();
  // After a finished stream was sent whole, on a kept-alive connection.
  bool AfterStream();
  // Waits for the next request on a kept-alive connection.
  bool NextRequest();
  void SetBusy(bool busy);

  const uint64_t id_;
  const int fd_;
  SSL* const ssl_;
  const std::string remote_;
  const bool loopback_;
  const ConnEnv& env_;
  State state_;
  Clock::time_point deadline_ = Clock::time_point::max();
  std::string in_;
  std::size_t in_used_ = 0;  // bytes of in_ the parser consumed
  bool request_started_ = false;
  std::size_t head_taken_ = 0;  // bytes of this request the parser has taken
  bool served_any_ = false;
  bool continue_sent_ = false;
  // The head's fields (lower-cased names), kept when the head was parsed:
  // the parser adds a chunked body's trailer fields to the same list, and
  // a field that came after the body (an Authorization among them) is not
  // part of the request's head (RFC 9110 6.5.1).
  std::optional<std::map<std::string, std::string>> head_;
  bool tls_ok_ = false;  // handshake done, no fatal TLS error since
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool keep_alive_ = false;
  bool head_only_ = false;
  bool busy_ = false;
  bool drain_after_refusal_ = false;  // set by Refuse for a client that may still be sending
  std::size_t drained_ = 0;
  std::string out_;
  std::size_t out_sent_ = 0;
  std::shared_ptr<ResponseStream> stream_;
  bool stream_finished_ = false;
};

}  // namespace gantry::http::server_internal
