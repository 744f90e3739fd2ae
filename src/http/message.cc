#include "gantry/http/message.h"

#include <cctype>

namespace gantry::http {

std::string Request::Header(std::string_view name) const {
  auto it = headers.find(ToLowerAscii(name));
  return it == headers.end() ? std::string() : it->second;
}

std::optional<std::string> Request::Query(std::string_view key) const {
  auto it = query.find(std::string(key));
  if (it == query.end()) return std::nullopt;
  return it->second;
}

bool ResponseStream::Write(std::string piece) {
  std::function<void()> notify;
  {
    std::lock_guard lock(mu_);
    if (finished_ || abandoned_) return false;
    queue_.push_back(std::move(piece));
    notify = notify_;
  }
  if (notify) notify();
  return true;
}

void ResponseStream::Finish() {
  std::function<void()> notify;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    notify = notify_;
  }
  if (notify) notify();
}

bool ResponseStream::closed() const {
  std::lock_guard lock(mu_);
  return finished_ || abandoned_;
}

void ResponseStream::SetOnClose(std::function<void()> on_close) {
  std::lock_guard lock(mu_);
  on_close_ = std::move(on_close);
}

std::vector<std::string> ResponseStream::Take(bool* finished) {
  std::lock_guard lock(mu_);
  std::vector<std::string> out(std::make_move_iterator(queue_.begin()),
                               std::make_move_iterator(queue_.end()));
  queue_.clear();
  *finished = finished_;
  return out;
}

void ResponseStream::SetNotifier(std::function<void()> notify) {
  std::lock_guard lock(mu_);
  notify_ = std::move(notify);
}

void ResponseStream::Abandon() {
  std::function<void()> on_close;
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    abandoned_ = true;
    queue_.clear();
    notify_ = nullptr;
    on_close = std::move(on_close_);
  }
  if (on_close) on_close();
}

Response TextResponse(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = std::move(content_type);
  return r;
}

Response JsonResponse(int status, std::string body) {
  return TextResponse(status, std::move(body), "application/json");
}

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0x0f]);
    }
  }
  return out;
}

std::string HostPort(std::string_view host, std::string_view port) {
  const bool ipv6 = host.find(':') != std::string_view::npos;
  std::string out;
  out.reserve(host.size() + port.size() + 3);
  if (ipv6) out += '[';
  out += host;
  if (ipv6) out += ']';
  out += ':';
  out += port;
  return out;
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::multimap<std::string, std::string> ParseQuery(std::string_view query) {
  std::multimap<std::string, std::string> out;
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      std::size_t eq = pair.find('=');
      std::string key = PercentDecode(pair.substr(0, eq), true);
      std::string value = eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
      out.emplace(std::move(key), std::move(value));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

}  // namespace gantry::http
