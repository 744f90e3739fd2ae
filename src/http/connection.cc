#include "connection.h"
#include "resolve.h"
#include "socket_bio.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <fmt/format.h>

#include "gantry/http/message.h"

namespace gantry::http {
namespace {

using boost::system::error_code;

error_code Errno(int e) { return error_code(e, boost::system::system_category()); }

int MillisLeft(Connection::Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Connection::Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

// The address as text ("10.0.0.1", "fd00::1"), for an error message.
std::string AddressText(const addrinfo& a) {
  char text[NI_MAXHOST] = "";
  if (::getnameinfo(a.ai_addr, a.ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return text;
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& host, const std::string& port, SSL_CTX* tls,
                                                     Clock::time_point deadline, const std::string& tls_name,
                                                     const std::string& untrusted_hint, int stop_fd) {
  auto addrs = Resolve(host, port, deadline, stop_fd);
  if (!addrs.ok()) return addrs.status();
  return Dial(addrs->get(), host, port, tls, deadline, tls_name, untrusted_hint, stop_fd);
}

Result<std::unique_ptr<Connection>> Connection::Dial(const addrinfo* addrs, const std::string& host,
                                                     const std::string& port, SSL_CTX* tls,
                                                     Clock::time_point deadline, const std::string& tls_name,
                                                     const std::string& untrusted_hint, int stop_fd) {
  int addresses_left = 0;
  for (const addrinfo* a = addrs; a; a = a->ai_next) ++addresses_left;
  const bool several = addresses_left > 1;
  error_code ec = boost::asio::error::host_not_found;
  std::string failures;  // each address's, when there are several
  auto failed = [&](const addrinfo& a) {
    if (several) fmt::format_to(std::back_inserter(failures), "{}{}: {}", failures.empty() ? "" : "; ", AddressText(a), ec.message());
  };
  for (const addrinfo* a = addrs; a; a = a->ai_next, --addresses_left) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      ec = Errno(errno);
      failed(*a);
      continue;
    }
    std::unique_ptr<Connection> conn(new Connection(fd));
    conn->stop_fd_ = stop_fd;
    conn->deadline_ = AddressDeadline(Clock::now(), deadline, addresses_left);
    ec = conn->Connect(*a);
    if (ec == boost::asio::error::operation_aborted) {
      return Status::Unavailable(fmt::format("connect to {}: abandoned, stopping", HostPort(host, port)));
    }
    if (ec) {
      failed(*a);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn->deadline_ = deadline;
    if (tls) {
      GANTRY_RETURN_IF_ERROR(conn->Handshake(tls, host, port, tls_name.empty() ? host : tls_name, untrusted_hint));
    }
    conn->deadline_ = Clock::time_point::max();
    return conn;
  }
  std::string message =
      fmt::format("connect to {}: {}", HostPort(host, port), failures.empty() ? ec.message() : failures);
  // No answer within the deadline (a blackholed address): told apart from
  // a refusal, as a request's own timeout is.
  if (ec == boost::beast::error::timeout) return Status::Deadline(std::move(message));
  return Status::Unavailable(std::move(message));
}

Connection::Clock::time_point Connection::AddressDeadline(Clock::time_point now, Clock::time_point deadline,
                                                          int addresses_left) {
  if (deadline == Clock::time_point::max() || addresses_left <= 1 || deadline <= now) return deadline;
  const Clock::duration left = deadline - now;
  const Clock::duration least = std::min<Clock::duration>(left, kMinAddressTime);
  return now + std::max<Clock::duration>(left / addresses_left, least);
}

error_code Connection::Connect(const addrinfo& addr) {
  if (::connect(fd_, addr.ai_addr, addr.ai_addrlen) == 0) return {};
  if (errno != EINPROGRESS) return Errno(errno);
  error_code ec;
  if (!Wait(POLLOUT, ec)) return ec;
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
  return err ? Errno(err) : error_code();
}

namespace {

// Why the server's certificate was refused, and what to check: OpenSSL's
// error string says only "certificate verify failed".
std::string VerifyDetail(SSL* ssl, const std::string& name, const std::string& untrusted_hint) {
  const long result = SSL_get_verify_result(ssl);
  if (result == X509_V_OK) return "";
  std::string hint;
  switch (result) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      // (A client given its own hint is not a worker cluster's: it has no
      // kubeconfig to set a name in.)
      hint = untrusted_hint.empty()
                 ? fmt::format("the certificate does not name {}: connect by a name it has, or set tls-server-name "
                               "in the kubeconfig",
                               name)
                 : fmt::format("the certificate does not name {}: connect by a name it has", name);
      break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      hint = !untrusted_hint.empty()
                 ? untrusted_hint
                 : "the certificate is not signed by the CA gantry trusts for this cluster (the kubeconfig's "
                   "certificate-authority or certificate-authority-data): a CA rotated there needs it updated, then "
                   "a reload";
      break;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      hint = "check the certificate's dates, and this host's clock";
      break;
    default:
      break;
  }
  return fmt::format(": {}{}{}", X509_verify_cert_error_string(result), hint.empty() ? "" : "; ", hint);
}

// After a handshake refused for the certificate's dates: whether the chain
// the server sent verifies, dates aside, with the name and trust of this
// connection. OpenSSL checks the dates last, but from the root down, so a
// root's expiry is found before the leaf's signature is checked: only a full
// verification without the dates shows that the CA signed what was sent.
bool VerifiesButForDates(SSL* ssl) {
  const long result = SSL_get_verify_result(ssl);
  if (result != X509_V_ERR_CERT_HAS_EXPIRED && result != X509_V_ERR_CERT_NOT_YET_VALID) return false;
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl);  // a client's: the leaf first
  if (!chain || sk_X509_num(chain) == 0) return false;
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  if (!ctx) return false;
  bool ok = X509_STORE_CTX_init(ctx, SSL_CTX_get_cert_store(SSL_get_SSL_CTX(ssl)), sk_X509_value(chain, 0), chain) == 1;
  if (ok) {
    X509_STORE_CTX_set_default(ctx, "ssl_server");
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
    ok = X509_VERIFY_PARAM_set1(param, SSL_get0_param(ssl)) == 1;  // the name or address asked for
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_NO_CHECK_TIME);
    ok = ok && X509_verify_cert(ctx) == 1;
  }
  X509_STORE_CTX_free(ctx);
  return ok;
}

}  // namespace

Status Connection::Handshake(SSL_CTX* tls, const std::string& host, const std::string& port,
                             const std::string& name, const std::string& untrusted_hint) {
  ssl_ = SSL_new(tls);
  BIO* bio = ssl_ ? NewSocketBio(fd_) : nullptr;
  if (!bio) return Status::Unavailable(fmt::format("TLS with {}: out of memory", HostPort(host, port)));
  SSL_set_bio(ssl_, bio, bio);
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Whatever the socket holds is read at once: without read-ahead OpenSSL
  // reads each record's 5-byte header, then its body (two recv calls).
  // SSL_read still answers WANT_READ only when no whole record is buffered.
  SSL_set_read_ahead(ssl_, 1);
  unsigned char addr[sizeof(in6_addr)];
  if (inet_pton(AF_INET, name.c_str(), addr) == 1 || inet_pton(AF_INET6, name.c_str(), addr) == 1) {
    // An IP address: checked against the certificate's IP SANs.
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str());
  } else {  // a DNS name: sent as SNI and checked
    SSL_set_tlsext_host_name(ssl_, name.c_str());
    SSL_set1_host(ssl_, name.c_str());
  }
  SSL_set_connect_state(ssl_);
  error_code ec;
  while (true) {
    ERR_clear_error();
    int r = SSL_connect(ssl_);
    if (r == 1) return Status::Ok();
    if (!Retry(r, ec)) break;
  }
  std::string message = fmt::format("TLS handshake with {}: {}{}", HostPort(host, port), ec.message(),
                                    VerifyDetail(ssl_, name, untrusted_hint));
  // Out of its dates, but signed by a CA trusted here, for the name asked
  // for: the server is who it should be, and says so with a stale
  // certificate. Unauthenticated, not Unavailable: it answers.
  if (VerifiesButForDates(ssl_)) return Status(Code::kUnauthenticated, std::move(message));
  return Status::Unavailable(std::move(message));
}

Connection::~Connection() {
  if (ssl_) SSL_free(ssl_);  // frees the BIO too
  if (fd_ >= 0) ::close(fd_);
}

bool Connection::Readable(Clock::time_point until) {
  const Clock::time_point end = std::min(until, deadline_);
  bool waited = false;
  while (true) {
    if (ssl_ && SSL_pending(ssl_) > 0) return true;
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, 0);
    if (r == 0) {
      if (!waited) ++read_waits_;
      waited = true;
      const int left = MillisLeft(end);
      if (left == 0) return false;
      // The stop fd too (set_stop): at a stop the answer is not waited for
      // here either (the read that follows gives up).
      pollfd both[2] = {p, {stop_fd_, POLLIN, 0}};
      r = ::poll(both, stop_fd_ >= 0 ? 2 : 1, left);
      if (r == 0) return false;
      if (stop_fd_ >= 0 && both[1].revents != 0) return true;  // the read gives up at once
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      return true;  // the read reports it
    }
    // Readable may mean closed (a kept-alive connection the server ended
    // before the request came): no answer comes then, and the read that
    // sends the request again on a new connection may wait its whole
    // deadline. False, so that the caller leaves that to someone else.
    char byte;
    if (!ssl_) {
      const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) return true;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      return false;
    }
    // Bytes on a TLS connection may be no data: after the handshake a
    // TLS 1.3 server sends its session tickets, which come before the first
    // answer. A peek takes them in (the socket does not block), and tells
    // whether data came.
    ERR_clear_error();
    const int n = SSL_peek(ssl_, &byte, 1);
    if (n > 0) return true;
    const int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_WANT_READ) continue;
    if (e == SSL_ERROR_WANT_WRITE) return true;  // the read does what TLS wants
    return false;  // closed, or broken
  }
}

bool Connection::Wait(short events, error_code& ec) {
  if (events & POLLIN) ++read_waits_;
  while (true) {
    int left = MillisLeft(deadline_);
    if (left == 0) {
      ec = boost::beast::error::timeout;
      return false;
    }
    const bool stop_by_fd = stop_fd_ >= 0;
    int slice = stop_ && !stop_by_fd ? std::min<int>(left, static_cast<int>(stop_poll_.count())) : left;
    pollfd p[2] = {{fd_, events, 0}, {stop_fd_, POLLIN, 0}};
    int r = ::poll(p, stop_by_fd ? 2 : 1, slice);
    if (r < 0 && errno != EINTR) {
      ec = Errno(errno);
      return false;
    }
    if (r > 0 && stop_by_fd && p[1].revents != 0) {  // set (or, POLLNVAL, gone: stop all the same)
      ec = boost::asio::error::operation_aborted;
      return false;
    }
    if (r > 0) return true;  // ready, or an error the next call reports
    if (stop_ && !stop_by_fd && stop_()) {
      ec = boost::asio::error::operation_aborted;
      return false;
    }
  }
}

bool Connection::Retry(int result, error_code& ec) {
  const int saved_errno = errno;
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ: return Wait(POLLIN, ec);
    case SSL_ERROR_WANT_WRITE: return Wait(POLLOUT, ec);
    case SSL_ERROR_ZERO_RETURN:
      ec = boost::asio::error::eof;
      return false;
    case SSL_ERROR_SYSCALL:
      ec = saved_errno ? Errno(saved_errno) : error_code(boost::asio::error::eof);
      if (unsigned long e = ERR_get_error()) ec = error_code(static_cast<int>(e), boost::asio::error::get_ssl_category());
      return false;
    default: {
      unsigned long e = ERR_get_error();
      if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ec = boost::asio::error::eof;  // the peer closed without close_notify
      } else {
        ec = error_code(static_cast<int>(e), boost::asio::error::get_ssl_category());
      }
      return false;
    }
  }
}

std::size_t Connection::Transfer(Direction direction, void* data, std::size_t size, error_code& ec) {
  ec = {};
  if (size == 0) return 0;
  const bool reading = direction == Direction::kRead;
  const int want = static_cast<int>(std::min<std::size_t>(size, INT_MAX));
  while (true) {
    if (ssl_) {
      ERR_clear_error();
      int n = reading ? SSL_read(ssl_, data, want) : SSL_write(ssl_, data, want);
      if (n > 0) return static_cast<std::size_t>(n);
      if (!Retry(n, ec)) return 0;
      continue;
    }
    ssize_t n = reading ? ::recv(fd_, data, static_cast<size_t>(want), 0)
                        : ::send(fd_, data, static_cast<size_t>(want), MSG_NOSIGNAL);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) {  // a read at the end of the stream (a write of size > 0 does not return 0)
      ec = boost::asio::error::eof;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      ec = Errno(errno);
      return 0;
    }
    if (!Wait(reading ? POLLIN : POLLOUT, ec)) return 0;
  }
}

}  // namespace gantry::http
