// Server: one thread runs an edge-triggered epoll loop over the listener,
// the connections (server_conn.h) and a mailbox through which handlers'
// answers and streams' wake-ups arrive from any thread.
//
// Why not Asio (as before): every read and write there set a timer (a
// timerfd_settime call), each wait went through the reactor's epoll_wait,
// and TLS went through Asio's engine and its memory BIO pair. Here a read is
// one recv (SSL_read with read-ahead) and an answer one send; a deadline is
// a time in the connection, looked at when the earliest one is due.
#include "gantry/http/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/common/thread_name.h"
#include "server_conn.h"
#include "socket_bio.h"

namespace gantry::http {

using server_internal::Clock;
using server_internal::ServerConn;

namespace {

constexpr uint64_t kListenerKey = 0;
constexpr uint64_t kMailboxKey = 1;
constexpr uint64_t kFirstConnKey = 2;

// What other threads hand to the loop.
struct Posted {
  enum class Kind { kAnswer, kWake, kCloseIdle, kExit, kPing };
  Kind kind;
  uint64_t id = 0;
  Response response;
  std::shared_ptr<std::promise<void>> pong;  // kPing: set by the loop
};

// Shared with responders and stream notifiers, which may outlive the server:
// a post after the loop ended is dropped with the mailbox.
class Mailbox {
 public:
  Mailbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~Mailbox() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  void SetLoopThread() { loop_thread_ = std::this_thread::get_id(); }

  void Post(Posted item) {
    bool was_empty;
    {
      std::lock_guard lock(mu_);
      was_empty = items_.empty();
      items_.push_back(std::move(item));
    }
    // The loop drains the mailbox after every round of events, so a post
    // from its own thread (an answer given inside the handler) needs no
    // wake-up; nor does one behind an earlier post.
    if (was_empty && std::this_thread::get_id() != loop_thread_.load()) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof one);
    }
  }
  std::vector<Posted> TakeAll() {
    std::vector<Posted> out;
    std::lock_guard lock(mu_);
    out.swap(items_);
    return out;
  }
  bool empty() const {
    std::lock_guard lock(mu_);
    return items_.empty();
  }

 private:
  const int fd_;
  std::atomic<std::thread::id> loop_thread_;
  mutable std::mutex mu_;
  std::vector<Posted> items_;
};

// A request's Responder: the first call answers; dropped uncalled, it
// answers 500 so the request does not hang.
class Once {
 public:
  Once(std::shared_ptr<Mailbox> box, uint64_t id) : box_(std::move(box)), id_(id) {}
  ~Once() {
    if (!fired_.exchange(true)) {
      box_->Post({Posted::Kind::kAnswer, id_, TextResponse(500, "handler dropped the request\n"), nullptr});
    }
  }
  void Fire(Response r) {
    if (!fired_.exchange(true)) box_->Post({Posted::Kind::kAnswer, id_, std::move(r), nullptr});
  }

 private:
  std::shared_ptr<Mailbox> box_;
  uint64_t id_;
  std::atomic<bool> fired_{false};
};

bool IsLoopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr) >> 24) == 127;
  }
  if (a.ss_family != AF_INET6) return false;
  const in6_addr& v6 = reinterpret_cast<const sockaddr_in6&>(a).sin6_addr;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

std::string AddressText(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = "unknown";
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
  } else if (a.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof text);
  }
  return text;
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

// A TLS 1.2+ server context with the chain and key (PEM text).
Result<SSL_CTX*> MakeTlsContext(const TlsServerOptions& tls) {
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Status::Internal("TLS: " + OpenSslError());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Whatever the socket holds is read at once (not each record's header,
  // then its body).
  SSL_CTX_set_read_ahead(ctx.get(), 1);
  std::unique_ptr<BIO, decltype(&BIO_free)> chain(
      BIO_new_mem_buf(tls.cert_chain_pem.data(), static_cast<int>(tls.cert_chain_pem.size())), BIO_free);
  X509* leaf = chain ? PEM_read_bio_X509_AUX(chain.get(), nullptr, nullptr, nullptr) : nullptr;
  if (!leaf) return Status::Invalid("TLS certificate: " + OpenSslError());
  int used = SSL_CTX_use_certificate(ctx.get(), leaf);
  X509_free(leaf);
  if (used != 1) return Status::Invalid("TLS certificate: " + OpenSslError());
  while (X509* ca = PEM_read_bio_X509(chain.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx.get(), ca) != 1) {
      X509_free(ca);
      return Status::Invalid("TLS certificate chain: " + OpenSslError());
    }
  }
  ERR_clear_error();  // the end of the chain reads as an error
  std::unique_ptr<BIO, decltype(&BIO_free)> key_pem(
      BIO_new_mem_buf(tls.private_key_pem.data(), static_cast<int>(tls.private_key_pem.size())), BIO_free);
  EVP_PKEY* key = key_pem ? PEM_read_bio_PrivateKey(key_pem.get(), nullptr, nullptr, nullptr) : nullptr;
  if (!key) return Status::Invalid("TLS private key: " + OpenSslError());
  used = SSL_CTX_use_PrivateKey(ctx.get(), key);
  EVP_PKEY_free(key);
  if (used != 1 || SSL_CTX_check_private_key(ctx.get()) != 1) {
    return Status::Invalid("TLS private key: " + OpenSslError());
  }
  return ctx.release();
}

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, Handler handler) : options_(std::move(options)), handler_(std::move(handler)) {
    if (!options_.error_response) {
      options_.error_response = [](int status, std::string message) { return TextResponse(status, message + "\n"); };
    }
    env_.options = &options_;
    env_.stopping = &stopping_;
    env_.in_flight = &in_flight_;
    env_.read_buffer = read_buffer_.get();
    env_.read_buffer_size = kReadBufferBytes;
    env_.dispatch = [this](uint64_t id, Request request) { Dispatch(id, std::move(request)); };
    env_.subscribe = [this](uint64_t id, const std::shared_ptr<ResponseStream>& stream) {
      stream->SetNotifier([box = mailbox_, id] { box->Post({Posted::Kind::kWake, id, {}, nullptr}); });
    };
  }
  ~Impl() {
    conns_.clear();
    if (listener_ >= 0) ::close(listener_);
    if (epoll_ >= 0) ::close(epoll_);
    if (tls_) SSL_CTX_free(tls_);
  }

  Status Start();
  void Stop(std::chrono::milliseconds drain);
  uint16_t port() const { return port_; }
  int in_flight() const { return in_flight_.load(); }
  bool started() const { return started_; }
  void Post(Posted item) { mailbox_->Post(std::move(item)); }

 private:
  Status Listen();
  void Run();
  void AcceptAll();
  // At max_connections, or out of file descriptors (why: the log's words):
  // closes a connection that waits for a request (false: none does; each
  // is busy with a request or a stream).
  bool CloseOldestWaiting(std::string_view why);
  void Dispatch(uint64_t id, Request request);
  void DrainMailbox();
  // Keeps the connection (noting its deadline) or ends it.
  void Settle(std::map<uint64_t, std::unique_ptr<ServerConn>>::iterator it, bool keep);
  void ExpireDeadlines();
  int WaitMillis() const;
  void CloseListener();

  // The most one read takes from a socket: a TLS record is at most 16 KiB,
  // and a plain socket gives what the kernel holds.
  static constexpr std::size_t kReadBufferBytes = 64 << 10;

  ServerOptions options_;
  Handler handler_;
  // Not a thread_local array: that would be zeroed in every thread of the
  // process, not only the loop's (64 KiB each; 300 watch threads at 100 clusters).
  std::unique_ptr<char[]> read_buffer_ = std::make_unique<char[]>(kReadBufferBytes);
  server_internal::ConnEnv env_;
  std::shared_ptr<Mailbox> mailbox_ = std::make_shared<Mailbox>();
  SSL_CTX* tls_ = nullptr;
  int listener_ = -1;
  int epoll_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0};
  bool started_ = false;
  // The loop's own state.
  std::map<uint64_t, std::unique_ptr<ServerConn>> conns_;
  uint64_t next_id_ = kFirstConnKey;
  Clock::time_point next_expiry_ = Clock::time_point::max();
  // Out of descriptors (EMFILE): the listener is out of the epoll set until
  // then, so that its pending connections do not wake the loop at once, for
  // ever; and the warning is written once a window, with the count.
  Clock::time_point accept_resume_at_ = Clock::time_point::max();
  Clock::time_point accept_warned_at_{};
  uint64_t accept_failures_ = 0;
  Clock::time_point next_full_log_{};  // the warning that max_connections is reached, once a minute
  bool exit_ = false;
  void PauseAccept(int error);
  void ResumeAccept();
};

Status Server::Impl::Start() {
  if (mailbox_->fd() < 0) return Status::Io(fmt::format("eventfd: {}", std::strerror(errno)));
  if (options_.tls) {
    auto ctx = MakeTlsContext(*options_.tls);
    if (!ctx.ok()) return ctx.status();
    tls_ = *ctx;
  }
  GANTRY_RETURN_IF_ERROR(Listen());
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) return Status::Io(fmt::format("epoll: {}", std::strerror(errno)));
  epoll_event listen_event{EPOLLIN, {.u64 = kListenerKey}};
  epoll_event mailbox_event{EPOLLIN, {.u64 = kMailboxKey}};
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, listener_, &listen_event) != 0 ||
      ::epoll_ctl(epoll_, EPOLL_CTL_ADD, mailbox_->fd(), &mailbox_event) != 0) {
    return Status::Io(fmt::format("epoll: {}", std::strerror(errno)));
  }
  thread_ = std::thread([this] {
    SetThreadName(options_.thread_name);
    mailbox_->SetLoopThread();
    Run();
  });
  started_ = true;
  return Status::Ok();
}

Status Server::Impl::Listen() {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto& v4 = reinterpret_cast<sockaddr_in&>(addr);
  auto& v6 = reinterpret_cast<sockaddr_in6&>(addr);
  if (inet_pton(AF_INET, options_.address.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(options_.port);
    len = sizeof v4;
  } else if (inet_pton(AF_INET6, options_.address.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(options_.port);
    len = sizeof v6;
  } else {
    return Status::Invalid(fmt::format("listen address '{}': not an IPv4 or IPv6 address", options_.address));
  }
  auto failed = [&](const char* step) {
    return Status::Io(
        fmt::format("listen on {}:{}: {}: {}", options_.address, options_.port, step, std::strerror(errno)));
  };
  listener_ = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener_ < 0) return failed("socket");
  int one = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0) return failed("bind");
  if (::listen(listener_, SOMAXCONN) != 0) return failed("listen");
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  if (::getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) return failed("getsockname");
  port_ = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in&>(bound).sin_port
                                           : reinterpret_cast<sockaddr_in6&>(bound).sin6_port);
  return Status::Ok();
}

void Server::Impl::Run() {
  epoll_event events[128];
  while (!exit_) {
    int n = ::epoll_wait(epoll_, events, 128, WaitMillis());
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("http server: epoll_wait: {}", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t key = events[i].data.u64;
      if (key == kListenerKey) {
        AcceptAll();
        continue;
      }
      if (key == kMailboxKey) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = ::read(mailbox_->fd(), &count, sizeof count);
        continue;
      }
      auto it = conns_.find(key);
      if (it == conns_.end()) continue;  // ended earlier in this round
      const bool hung_up = events[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP);
      // A stream's reader that hangs up is gone; anyone else's hang-up shows
      // as the end of the stream to the next read.
      Settle(it, !(hung_up && it->second->streaming()) && it->second->Advance());
    }
    DrainMailbox();
    if (Clock::now() >= accept_resume_at_) ResumeAccept();
    if (Clock::now() >= next_expiry_) ExpireDeadlines();
  }
  conns_.clear();
}

int Server::Impl::WaitMillis() const {
  if (!mailbox_->empty()) return 0;
  const Clock::time_point until = std::min(next_expiry_, accept_resume_at_);
  if (until == Clock::time_point::max()) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

void Server::Impl::AcceptAll() {
  bool just_freed = false;  // an idle connection closed for the accept that follows
  while (listener_ >= 0) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd = ::accept4(listener_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of file descriptors: an idle connection's goes to the new one
      // (a health probe, a user), as at max_connections, rather than every
      // new client waiting for some idle one's deadline. Unless the one
      // freed just now went elsewhere (another thread): then a pause.
      if ((errno == EMFILE || errno == ENFILE) && !just_freed &&
          CloseOldestWaiting("out of file descriptors (accept: Too many open files)")) {
        just_freed = true;
        continue;
      }
      PauseAccept(errno);  // serve the connections we have
      return;
    }
    just_freed = false;
    if (conns_.size() >= options_.max_connections &&
        !CloseOldestWaiting(fmt::format("{} connections open (maxConnections)", conns_.size()))) {
      ::close(fd);  // every place is busy with a request or a stream
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small answers go out at once
    SSL* ssl = nullptr;
    if (tls_) {
      ssl = SSL_new(tls_);
      BIO* bio = ssl ? NewSocketBio(fd) : nullptr;
      if (!bio) {
        if (ssl) SSL_free(ssl);
        ::close(fd);
        continue;
      }
      SSL_set_bio(ssl, bio, bio);
      SSL_set_accept_state(ssl);
    }
    const uint64_t id = next_id_++;
    auto [it, added] = conns_.emplace(
        id, std::make_unique<ServerConn>(id, fd, ssl, AddressText(peer), IsLoopback(peer), env_));
    epoll_event ev{EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, {.u64 = id}};
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      conns_.erase(it);
      continue;
    }
    Settle(it, it->second->Advance());  // the client may have written already
  }
}

bool Server::Impl::CloseOldestWaiting(std::string_view why) {
  // Closing one that waits, rather than refusing the new one, keeps a
  // client that opens connections and sends nothing from locking everyone
  // else out. The oldest that never sent a request goes first (ids grow
  // with each connection); then the oldest kept-alive one, whose client
  // reconnects as after its idle deadline.
  for (bool spare_clients : {true, false}) {
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
      const ServerConn& conn = *it->second;
      if (!conn.waiting_for_request() || (spare_clients && conn.served_any())) continue;
      if (const Clock::time_point now = Clock::now(); now >= next_full_log_) {
        spdlog::warn("http server: {}: closing the oldest connection that waits for a request, to accept a new one",
                     why);
        next_full_log_ = now + std::chrono::minutes(1);
      }
      conns_.erase(it);
      return true;
    }
  }
  return false;
}

void Server::Impl::Dispatch(uint64_t id, Request request) {
  auto once = std::make_shared<Once>(mailbox_, id);
  Responder respond = [once](Response r) { once->Fire(std::move(r)); };
  try {
    handler_(std::move(request), respond);
  } catch (const std::exception&) {
    respond(options_.error_response(500, "internal error"));
  }
}

void Server::Impl::DrainMailbox() {
  // An answer can free a connection to read its next request, whose handler
  // may answer at once: a few rounds, not forever.
  for (int round = 0; round < 16; ++round) {
    std::vector<Posted> items = mailbox_->TakeAll();
    if (items.empty()) return;
    for (Posted& p : items) {
      switch (p.kind) {
        case Posted::Kind::kAnswer:
        case Posted::Kind::kWake: {
          auto it = conns_.find(p.id);
          if (it == conns_.end()) break;  // the connection ended meanwhile
          bool keep = p.kind == Posted::Kind::kAnswer ? it->second->Answer(std::move(p.response))
                                                      : it->second->Wake();
          Settle(it, keep);
          break;
        }
        case Posted::Kind::kCloseIdle:
          CloseListener();
          std::erase_if(conns_, [](const auto& entry) { return entry.second->closable_at_stop(); });
          break;
        case Posted::Kind::kExit:
          exit_ = true;
          break;
        case Posted::Kind::kPing:
          p.pong->set_value();
          break;
      }
    }
  }
}

void Server::Impl::Settle(std::map<uint64_t, std::unique_ptr<ServerConn>>::iterator it, bool keep) {
  if (!keep) {
    conns_.erase(it);
    return;
  }
  next_expiry_ = std::min(next_expiry_, it->second->deadline());
}

void Server::Impl::ExpireDeadlines() {
  const Clock::time_point now = Clock::now();
  next_expiry_ = Clock::time_point::max();
  for (auto it = conns_.begin(); it != conns_.end();) {
    const Clock::time_point due = it->second->deadline();
    if (due <= now) {  // a slow or silent client, or an idle keep-alive connection
      if (!it->second->TimedOut()) {  // else a 408 is being written, to the write deadline
        it = conns_.erase(it);
        continue;
      }
    }
    next_expiry_ = std::min(next_expiry_, it->second->deadline());
    ++it;
  }
}

void Server::Impl::PauseAccept(int error) {
  constexpr auto kPause = std::chrono::milliseconds(100);
  constexpr auto kWarnEvery = std::chrono::seconds(10);
  const Clock::time_point now = Clock::now();
  ++accept_failures_;
  if (now - accept_warned_at_ >= kWarnEvery) {
    spdlog::warn("http server {}: accept: {} ({} time(s) since the last warning); new connections wait while the "
                 "ones open are served",
                 options_.thread_name, std::strerror(error), accept_failures_);
    accept_warned_at_ = now;
    accept_failures_ = 0;
  }
  if (listener_ >= 0 && accept_resume_at_ == Clock::time_point::max()) {
    (void)::epoll_ctl(epoll_, EPOLL_CTL_DEL, listener_, nullptr);
    accept_resume_at_ = now + kPause;
  }
}

void Server::Impl::ResumeAccept() {
  accept_resume_at_ = Clock::time_point::max();
  if (listener_ < 0) return;
  epoll_event listen_event{EPOLLIN, {.u64 = kListenerKey}};
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, listener_, &listen_event) != 0) {
    spdlog::error("http server {}: epoll: {}", options_.thread_name, std::strerror(errno));
    return;
  }
  AcceptAll();
}

void Server::Impl::CloseListener() {
  if (listener_ < 0) return;
  ::close(listener_);  // leaves the epoll set with it
  listener_ = -1;
}

void Server::Impl::Stop(std::chrono::milliseconds drain) {
  if (!started_) return;
  started_ = false;
  stopping_ = true;
  // Close the listener, idle keep-alive connections and streams now; busy
  // ones get the drain time, and close after their answer (stopping_).
  mailbox_->Post({Posted::Kind::kCloseIdle, 0, {}, nullptr});
  auto deadline = std::chrono::steady_clock::now() + drain;
  while (in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  mailbox_->Post({Posted::Kind::kExit, 0, {}, nullptr});
  thread_.join();
}

bool Server::Responsive(std::chrono::milliseconds within) {
  if (!impl_->started()) return false;
  auto pong = std::make_shared<std::promise<void>>();
  std::future<void> answered = pong->get_future();
  impl_->Post({Posted::Kind::kPing, 0, {}, std::move(pong)});
  return answered.wait_for(within) == std::future_status::ready;
}

Server::Server(ServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}
Server::~Server() { impl_->Stop(std::chrono::milliseconds(0)); }
Status Server::Start() { return impl_->Start(); }
uint16_t Server::port() const { return impl_->port(); }
int Server::in_flight() const { return impl_->in_flight(); }
void Server::Stop(std::chrono::milliseconds drain) { impl_->Stop(drain); }

}  // namespace gantry::http
