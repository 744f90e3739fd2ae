// HTTP request/response values shared by the server, the router and every
// handler (the gantry API and the worker-cluster simulator). Nothing here
// includes Boost: only the server's connection and the client see Beast,
// which keeps the expensive headers in a few translation units.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gantry/common/ascii.h"

namespace gantry::http {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as received: "/api/v1/jobs?limit=5"
  std::string path;    // percent-decoded path without the query
  std::multimap<std::string, std::string> query;    // percent-decoded
  std::map<std::string, std::string> headers;       // names lower-cased
  std::string body;
  std::string remote_address;   // "127.0.0.1"
  bool remote_loopback = false;  // 127.0.0.0/8 or ::1
  uint64_t connection_id = 0;    // the server's number for the connection it came on (one per accept)
  std::map<std::string, std::string> path_params;  // filled by the Router

  // Header value or "" (name in any case).
  std::string Header(std::string_view name) const;
  // First query value for key, if present.
  std::optional<std::string> Query(std::string_view key) const;
  // The path as sent, still percent-encoded: target without its query (what
  // Router::Find splits before it decodes each segment).
  std::string_view RawPath() const { return std::string_view(target).substr(0, target.find('?')); }
};

// A response body produced over time (a watch). The producer writes from any
// thread; the server sends each piece as an HTTP chunk as soon as it can.
//
// Thread-safety: all methods are safe from any thread.
class ResponseStream {
 public:
  // Queues a piece. Returns false once the stream is closed (the client went
  // away, the server is stopping, or Finish was called): stop producing then.
  bool Write(std::string piece);
  // Ends the stream normally after what is queued has been sent.
  void Finish();
  // True once the consumer is gone or Finish was called.
  bool closed() const;
  // Called once, from the server's thread, when the consumer lets the stream
  // go: the client closed, a write failed, the server is stopping, or the
  // stream was sent whole (after Finish) and its connection kept for the
  // next request. Set it before handing the stream to the server.
  void SetOnClose(std::function<void()> on_close);

  // --- consumer side (the server) ---
  // Takes everything queued. Sets *finished when Finish was called and the
  // queue is now empty.
  std::vector<std::string> Take(bool* finished);
  // Called by the server whenever new data or Finish arrives.
  void SetNotifier(std::function<void()> notify);
  // The server calls this when it stops consuming; runs on_close once.
  void Abandon();

 private:
  mutable std::mutex mu_;
  std::deque<std::string> queue_;
  bool finished_ = false;
  bool abandoned_ = false;
  std::function<void()> notify_;
  std::function<void()> on_close_;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  // When set, the response is sent with chunked transfer encoding from this
  // stream and body is ignored.
  std::shared_ptr<ResponseStream> stream;
};

// Delivers the response for one request. Call it exactly once, from any
// thread. If it is destroyed without being called, the server answers 500.
using Responder = std::function<void(Response)>;
using Handler = std::function<void(Request, Responder)>;

// Helpers for handlers.
Response TextResponse(int status, std::string body, std::string content_type = "text/plain");
// body is JSON text already.
Response JsonResponse(int status, std::string body);
std::string PercentDecode(std::string_view s, bool plus_is_space);
// Percent-encodes everything but RFC 3986 unreserved characters (for a path
// segment or a query value).
std::string PercentEncode(std::string_view s);

// host and port as a URL's authority and the Host header write them:
// "example.com:443", "[::1]:6443". An IPv6 address goes in brackets, or its
// colons would run into the port's (RFC 3986 section 3.2.2).
std::string HostPort(std::string_view host, std::string_view port);
std::multimap<std::string, std::string> ParseQuery(std::string_view query);
std::string_view ReasonPhrase(int status);

}  // namespace gantry::http
