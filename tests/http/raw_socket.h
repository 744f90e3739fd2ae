// A raw loopback TCP connection for tests of what the server does on the
// wire (header-only; Catch2's REQUIRE inside).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

#include <catch2/catch.hpp>

namespace gantry::http {

// A raw loopback connection to port.
class RawSocket {
 public:
  explicit RawSocket(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawSocket() { ::close(fd_); }
  void Send(const std::string& text) { REQUIRE(TrySend(text)); }
  // As Send, for a peer that may have answered and closed already.
  bool TrySend(const std::string& text) {
    return ::send(fd_, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
  }
  // Reads until `done(all read so far)` or the peer closes or the deadline.
  std::string ReadUntil(const std::function<bool(const std::string&)>& done,
                        std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
    auto end = std::chrono::steady_clock::now() + deadline;
    while (!done(got_) && !closed_ && std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      got_.append(buf, static_cast<size_t>(n));
    }
    return got_;
  }
  // Whether text arrived (within deadline).
  bool Got(const std::string& text, std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
    return ReadUntil([&](const std::string& s) { return s.find(text) != std::string::npos; }, deadline).find(text) !=
           std::string::npos;
  }
  // True once the server closed the connection (within deadline).
  bool Closed(std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
    ReadUntil([](const std::string&) { return false; }, deadline);
    return closed_;
  }

 private:
  int fd_;
  std::string got_;
  bool closed_ = false;
};

}  // namespace gantry::http
