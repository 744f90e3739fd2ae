// Connection: one client connection, TCP or TLS over TCP, whose reads and
// writes block until a deadline. It has the read_some/write_some members of
// Beast's synchronous stream concepts, so http::Client reads and writes
// HTTP with Beast's synchronous read and write.
//
// Why not an Asio stream run on a private io_context: each operation there
// set a timer (a timerfd_settime call), ran the context (several epoll_wait
// calls) and went through Asio's SSL engine and its memory BIO pair; that was
// about ten system calls and as many copies per request and per watch read.
// Here a read is one recv when data is waiting (a poll first when not), and
// a write one send; OpenSSL reads and writes the socket itself.
//
// Thread-safety: none; one thread uses a connection at a time.
#pragma once

#include <netdb.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include "gantry/common/status.h"

namespace gantry::http {

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  // Resolves host (resolve.h) and connects to port (every address in turn,
  // each with its share of the time: Dial) before deadline, the lookup
  // included; with tls (an SSL_CTX that verifies peers), then shakes hands,
  // checking the certificate against host (a DNS name, sent as SNI, or an
  // IP address). Every error is kUnavailable, a passed deadline included,
  // with the step (resolve, connect, TLS handshake) and the reason in its
  // message.
  // tls_name: the name to send as SNI and verify ("" = host). untrusted_hint:
  // what a refused handshake tells to check when the server's certificate
  // is not signed by a trusted CA ("": a worker cluster's kubeconfig CA).
  // stop_fd: watched by every wait, as set_stop's (-1: none).
  static Result<std::unique_ptr<Connection>> Open(const std::string& host, const std::string& port, SSL_CTX* tls,
                                                  Clock::time_point deadline, const std::string& tls_name = "",
                                                  const std::string& untrusted_hint = "", int stop_fd = -1);
  // Open's second half, on addresses already resolved (getaddrinfo's list,
  // tried in its order): each gets its share of the time left
  // (AddressDeadline), and the TLS handshake whatever is left of deadline.
  static Result<std::unique_ptr<Connection>> Dial(const addrinfo* addrs, const std::string& host,
                                                  const std::string& port, SSL_CTX* tls,
                                                  Clock::time_point deadline, const std::string& tls_name = "",
                                                  const std::string& untrusted_hint = "", int stop_fd = -1);
  // The least time an address is given, unless less is left: an even share
  // of a short deadline among many addresses would fail a slow but working
  // one (Go's net.Dialer keeps the same 2 s).
  static constexpr std::chrono::seconds kMinAddressTime{2};
  // The deadline for connecting to the next of addresses_left addresses, as
  // Go's net.Dialer spreads one: the time left shared evenly, but no less
  // than kMinAddressTime, and never past deadline. An address that drops
  // packets then no longer takes the time of the addresses after it.
  static Clock::time_point AddressDeadline(Clock::time_point now, Clock::time_point deadline,
                                           int addresses_left);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Reads and writes fail with beast::error::timeout once it passes.
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // How many times a read has waited for bytes on this connection: an
  // answer read without a wait had come already.
  uint64_t read_waits() const { return read_waits_; }
  // Whether an answer's bytes wait to be read, or come before until (or
  // the deadline, whichever is first): a read would not wait then. False
  // also for a connection found closed or broken (its read would send the
  // request again, or fail). A wait counts as a read's (read_waits). True
  // at once when the stop fd (set_stop) is set: the read then gives up.
  bool Readable(Clock::time_point until);
  // Asked every poll_interval while a read or write waits; true fails it
  // with operation_aborted. Empty: never asked. With a stop_fd (a
  // descriptor that becomes readable when the owner wants to stop, e.g. a
  // StopSignal's), a wait watches it beside the socket instead, for its
  // whole length, and stop is not asked.
  void set_stop(std::function<bool()> stop, std::chrono::milliseconds poll_interval, int stop_fd = -1) {
    stop_ = std::move(stop);
    stop_poll_ = poll_interval;
    stop_fd_ = stop_fd;
  }

  // Beast's SyncReadStream and SyncWriteStream. A read fills the first
  // non-empty buffer only; a write sends the buffers as one piece (one TLS
  // record, one send).
  template <typename MutableBuffers>
  std::size_t read_some(const MutableBuffers& buffers, boost::system::error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
         ++it) {
      boost::asio::mutable_buffer b(*it);
      if (b.size() > 0) return Transfer(Direction::kRead, b.data(), b.size(), ec);
    }
    ec = {};
    return 0;
  }
  template <typename MutableBuffers>
  std::size_t read_some(const MutableBuffers& buffers) {
    boost::system::error_code ec;
    return OrThrow(read_some(buffers, ec), ec);
  }
  template <typename ConstBuffers>
  std::size_t write_some(const ConstBuffers& buffers, boost::system::error_code& ec) {
    std::size_t pieces = 0, total = 0;
    boost::asio::const_buffer first;
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
         ++it) {
      boost::asio::const_buffer b(*it);
      if (b.size() == 0) continue;
      if (pieces++ == 0) first = b;
      total += b.size();
    }
    if (pieces <= 1) return Transfer(Direction::kWrite, const_cast<void*>(first.data()), first.size(), ec);
    gather_.clear();
    gather_.reserve(total);
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
         ++it) {
      boost::asio::const_buffer b(*it);
      gather_.append(static_cast<const char*>(b.data()), b.size());
    }
    return Transfer(Direction::kWrite, gather_.data(), gather_.size(), ec);
  }
  template <typename ConstBuffers>
  std::size_t write_some(const ConstBuffers& buffers) {
    boost::system::error_code ec;
    return OrThrow(write_some(buffers, ec), ec);
  }

 private:
  static std::size_t OrThrow(std::size_t n, const boost::system::error_code& ec) {
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  explicit Connection(int fd) : fd_(fd) {}
  // Connects the socket to addr before the deadline.
  boost::system::error_code Connect(const addrinfo& addr);
  Status Handshake(SSL_CTX* tls, const std::string& host, const std::string& port, const std::string& name,
                   const std::string& untrusted_hint);
  enum class Direction { kRead, kWrite };
  // One read into, or one write from, data (a write never changes it):
  // waits until the socket is ready, then moves what it can.
  std::size_t Transfer(Direction direction, void* data, std::size_t size, boost::system::error_code& ec);
  // Waits until the socket is ready for events (POLLIN or POLLOUT), the
  // deadline passes (timeout) or stop or stop_fd says so (operation_aborted).
  bool Wait(short events, boost::system::error_code& ec);
  // What an OpenSSL call's failure means: true when it should be retried
  // after Wait (which it did), false with ec set otherwise.
  bool Retry(int result, boost::system::error_code& ec);

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  Clock::time_point deadline_ = Clock::time_point::max();
  uint64_t read_waits_ = 0;
  std::function<bool()> stop_;
  std::chrono::milliseconds stop_poll_{100};
  int stop_fd_ = -1;
  std::string gather_;  // a write of several buffers, as one
};

}  // namespace gantry::http
